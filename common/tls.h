/*
 * tls: OpenSSL contexts for HTTPS (options tls_cert_file, tls_key_file,
 * tls_ca_file). A server context serves the node's certificate chain
 * (TLS 1.2 and 1.3); the client context, used by nodeclient for https URLs
 * between the nodes and by the CLI and loader, verifies the peer's chain
 * against tls_ca_file (else the system's CAs) and its name or address.
 *
 * Kernel TLS: every context asks OpenSSL for it (SSL_OP_ENABLE_KTLS).
 * Where OpenSSL was built with it and the kernel has its tls module, the
 * kernel encrypts what a connection sends; else OpenSSL encrypts in user
 * space. tls_kernel says which, for the log.
 *
 * Thread: contexts are made at start-up and shared read-only.
 */
#ifndef SHOAL_TLS_H
#define SHOAL_TLS_H

#include <stddef.h>

typedef struct ssl_ctx_st SSL_CTX;

/* NULL with a message in err when a file is missing, unreadable, or the
 * key does not match the certificate. */
SSL_CTX *tls_server_ctx(const char *cert_file, const char *key_file, char *err, size_t errlen);

/* ca_file "" : the system's CAs. NULL with a message in err. */
SSL_CTX *tls_client_ctx(const char *ca_file, char *err, size_t errlen);

/* The context nodeclient and other clients use for https URLs (set at start-up;
 * NULL: https URLs fail). */
void tls_set_client(SSL_CTX *ctx);
SSL_CTX *tls_client(void);

/* A client connection's SSL for host (a name, or an address): its name
 * or address verified against the peer's certificate, SNI for a name.
 * NULL when there is no client context. */
typedef struct ssl_st SSL;
SSL *tls_client_ssl(const char *host);

/* 1 when this kernel can take TLS records over (its tls module answers
 * TCP_ULP "tls") and this OpenSSL can hand them over; else 0. Probed once. */
int tls_kernel(void);

/* A line for the log: which of the two encrypts. */
const char *tls_kernel_why(void);

#endif
