/*
 * tls: OpenSSL contexts and the kernel TLS probe (see tls.h).
 */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

static SSL_CTX *client_ctx;

/* The last OpenSSL error as text, after what. */
static void fail(char *err, size_t errlen, const char *what, const char *file)
{
    char e[256] = "";
    unsigned long code = ERR_get_error();
    if (code)
        ERR_error_string_n(code, e, sizeof(e));
    ERR_clear_error();
    snprintf(err, errlen, "%s %s: %s", what, file, e[0] ? e : strerror(errno));
}

static SSL_CTX *ctx_new(const SSL_METHOD *m)
{
    SSL_CTX *ctx = SSL_CTX_new(m);
    if (!ctx)
        return NULL;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* a peer that closes without close_notify ends the connection (an EOF),
     * as the nodes' keep-alive closes do; no renegotiation */
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
#if !defined(OPENSSL_NO_KTLS)
    SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS);
#endif
    /* no SSL_MODE_ENABLE_PARTIAL_WRITE: libevent's OpenSSL bufferevent takes a
     * short SSL_write for the whole piece and would skip the rest of it */
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    return ctx;
}

SSL_CTX *tls_server_ctx(const char *cert_file, const char *key_file, char *err, size_t errlen)
{
    SSL_CTX *ctx = ctx_new(TLS_server_method());
    if (!ctx) {
        fail(err, errlen, "cannot make a TLS context", "");
        return NULL;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
        fail(err, errlen, "option 'tls_cert_file': cannot use", cert_file);
    } else if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
        fail(err, errlen, "option 'tls_key_file': cannot use", key_file);
    } else if (SSL_CTX_check_private_key(ctx) != 1) {
        fail(err, errlen, "option 'tls_key_file': does not match the certificate:", key_file);
    } else {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
        return ctx;
    }
    SSL_CTX_free(ctx);
    return NULL;
}

SSL_CTX *tls_client_ctx(const char *ca_file, char *err, size_t errlen)
{
    SSL_CTX *ctx = ctx_new(TLS_client_method());
    if (!ctx) {
        fail(err, errlen, "cannot make a TLS context", "");
        return NULL;
    }
    int ok = ca_file && ca_file[0] ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
                                   : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
        fail(err, errlen, "option 'tls_ca_file': cannot use", ca_file ? ca_file : "");
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    return ctx;
}

void tls_set_client(SSL_CTX *ctx)
{
    __atomic_store_n(&client_ctx, ctx, __ATOMIC_RELEASE);
}

SSL_CTX *tls_client(void)
{
    return __atomic_load_n(&client_ctx, __ATOMIC_ACQUIRE);
}

SSL *tls_client_ssl(const char *host)
{
    SSL_CTX *ctx = tls_client();
    SSL *ssl = ctx ? SSL_new(ctx) : NULL;
    if (!ssl)
        return NULL;
    unsigned char addr[16];
    if (inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host);
    } else {
        SSL_set_tlsext_host_name(ssl, host);
        SSL_set1_host(ssl, host);
    }
    return ssl;
}

static int kernel_ok;
static const char *kernel_why = "";

/* Does a connected TCP socket take the tls upper-layer protocol? */
static void probe(void)
{
#if defined(OPENSSL_NO_KTLS)
    kernel_why = "user-space encryption: this OpenSSL was built without kernel TLS";
    return;
#else
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    int a_fd = -1, e = 0;
    if (l < 0 || s < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&a, &al) || connect(s, (struct sockaddr *)&a, al) ||
        (a_fd = accept(l, NULL, NULL)) < 0) {
        kernel_why = "user-space encryption: kernel TLS could not be probed";
    } else if (setsockopt(s, IPPROTO_TCP, TCP_ULP, "tls", sizeof("tls")) != 0) {
        e = errno;
        kernel_why = e == ENOENT ? "user-space encryption: the kernel has no tls module "
                                   "(CONFIG_TLS)"
                                 : "user-space encryption: the kernel refused TCP_ULP tls";
    } else {
        kernel_ok = 1;
        kernel_why = "kernel TLS where OpenSSL hands a connection's keys over (the kernel's "
                     "tls module answers); user-space encryption otherwise";
    }
    if (a_fd >= 0)
        close(a_fd);
    if (s >= 0)
        close(s);
    if (l >= 0)
        close(l);
#endif
}

static pthread_once_t probed = PTHREAD_ONCE_INIT;

int tls_kernel(void)
{
    pthread_once(&probed, probe);
    return kernel_ok;
}

const char *tls_kernel_why(void)
{
    pthread_once(&probed, probe);
    return kernel_why;
}
