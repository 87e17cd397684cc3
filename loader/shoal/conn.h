/*
 * conn: the shoal client's requests to the cluster, blocking, through
 * Shoal's own HTTP client (common/nodeclient.h) on an event loop of the client's
 * own that runs only while a request is in flight; keep-alive
 * connections are reused from one request to the next.
 *
 * Every request is signed as the command line asks: SigV4 (service s3)
 * with the access key, or a bearer token, or nothing. Redirects (307 and
 * the other 3xx with a Location) are followed with the same method and
 * body, signed anew for the host they lead to. Bodies stream: an upload is
 * read from a file by offset (so a redirect can send it again from the
 * start), and a 2xx answer's body can go straight to a file descriptor;
 * no object is ever held in memory. An upload to the endpoint waits for
 * its answer's head before sending the body (Expect: 100-continue), so a
 * proxy's 307 costs no upload.
 *
 * Thread: the main thread.
 */
#ifndef SHOAL_CLI_CONN_H
#define SHOAL_CLI_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct args;
struct progress;

/* Where requests go and how they are signed: a's endpoint and credentials
 * (args_env done), kept by reference. */
void conn_init(const struct args *a);
void conn_deinit(void);

struct conn_req {
    const char *method;
    const char *path;            /* "/v1/...", encoded, with its query; or a whole http:// URL */
    const char *body;            /* a body in memory (len bytes), JSON */
    size_t len;
    int upload;                  /* the body is up_len bytes of up_fd, read from offset 0 */
    int up_fd;
    int64_t up_len;
    int sink;                    /* a 2xx answer's body is written to sink_fd */
    int sink_fd;
    long timeout_ms;             /* the whole request; 0: the default (60 s) */
    struct progress *prog;       /* body bytes are counted there, when set */
};

#define CONN_URL_MAX 4096

struct conn_ans {
    int status;                  /* the last answer's status; 0: no answer (err says why) */
    int head;                    /* the last answer's head's status, kept when its body then
                                  * broke (status 0): a stream cut after it began */
    char err[400];
    char url[CONN_URL_MAX];      /* the URL of the last request (after redirects) */
    struct gbuf body;            /* the body, when not written to the sink */
    uint64_t got;                /* body bytes received (sunk or kept) */
    int64_t clen;                /* Content-Length, -1 when none */
    char cksum[48];              /* X-Shoal-Checksum */
    uint64_t xxh3;               /* XXH3-64 of the sunk body */
    int sink_errno;              /* writing the sink failed */
};

/* Run q to its final answer (redirects followed) into a (whose body the
 * caller frees with conn_ans_free). Returns a->status. */
int conn_do(const struct conn_req *q, struct conn_ans *a);
/* A request with an optional JSON body in memory (NULL: none). */
int conn_call(const char *method, const char *path, const char *json_body,
              struct conn_ans *a);
void conn_ans_free(struct conn_ans *a);

/* Append "?key=value" (or "&key=value" when u has a query already), value
 * percent-encoded; nothing when value is NULL. */
void conn_query(struct gbuf *u, const char *key, const char *value);
/* Append s percent-encoded ('/' kept when keep_slash). */
void conn_path_add(struct gbuf *u, const char *s, int keep_slash);

#endif
