/*
 * awschunk: the decoder of aws-chunked request bodies (S3's streaming
 * uploads: STREAMING-AWS4-HMAC-SHA256-PAYLOAD with a signature per chunk,
 * STREAMING-UNSIGNED-PAYLOAD-TRAILER without), used wherever an S3 PUT or
 * UploadPart body is accepted (the proxy's forward, a target's S3 root).
 *
 *   hex-size[;chunk-signature=64hex]\r\n DATA \r\n ... 0[;chunk-signature=..]\r\n
 *   [trailer-name:value\r\n ...] \r\n
 *
 * Framing is strict: every line ends in CRLF, the data of a chunk is
 * followed by CRLF, the decoded bytes must add up to the declared
 * x-amz-decoded-content-length, nothing may follow the final empty line.
 */
#ifndef SHOAL_AWSCHUNK_H
#define SHOAL_AWSCHUNK_H

#include <stddef.h>
#include <stdint.h>

struct s3auth_result;
struct awschunk;

enum awschunk_rc {
    AWSCHUNK_OK = 0,
    AWSCHUNK_MALFORMED = -1,     /* 400 IncompleteBody */
    AWSCHUNK_BADSIG = -2,        /* 403 SignatureDoesNotMatch */
};

/* Decoded data goes to out(arg, p, n) as it is verified; out returns 0,
 * or non-zero to stop decoding (awschunk_feed then returns that value). */
typedef int (*awschunk_out_fn)(void *arg, const char *p, size_t n);

/* signer: the request's verified signature (seed, key, scope) when the
 * chunks are signed, NULL when they are not; decoded_len: the declared
 * x-amz-decoded-content-length. */
struct awschunk *awschunk_new(const struct s3auth_result *signer, uint64_t decoded_len,
                              awschunk_out_fn out, void *arg);
int awschunk_feed(struct awschunk *c, const char *p, size_t n);
/* At the end of the body: AWSCHUNK_OK when the body was complete. */
int awschunk_finish(const struct awschunk *c);
/* The value of trailer name (any case, blanks around it taken off) into
 * out: its length, or -1 when the body had no such trailer or it does not
 * fit n. Trailers are read by the end of the body. */
int awschunk_trailer(const struct awschunk *c, const char *name, char *out, size_t n);
void awschunk_free(struct awschunk *c);

#endif
