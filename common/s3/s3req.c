#include "s3req.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sigv4.h"
#include "util.h"

static const char *first(const char *a, const char *b, const char *c)
{
    if (a && a[0])
        return a;
    if (b && b[0])
        return b;
    return c;
}

/* Value of key in [profile] of an INI credentials file, malloc'd or NULL. */
static char *ini_get(const char *text, const char *profile, const char *key)
{
    int in = 0;
    const char *p = text;
    while (p && *p) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char *line = xstrndup(p, len);
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        size_t l = strlen(s);
        while (l && (s[l - 1] == '\r' || s[l - 1] == ' ' || s[l - 1] == '\t'))
            s[--l] = '\0';
        if (s[0] == '[') {
            char *close = strchr(s, ']');
            in = close && (size_t)(close - s - 1) == strlen(profile) &&
                 !strncmp(s + 1, profile, strlen(profile));
        } else if (in && s[0] != '#' && s[0] != ';') {
            char *eq = strchr(s, '=');
            if (eq) {
                char *k = s, *ke = eq;
                while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t'))
                    ke--;
                char *v = eq + 1;
                while (*v == ' ' || *v == '\t')
                    v++;
                if ((size_t)(ke - k) == strlen(key) && !strncmp(k, key, strlen(key))) {
                    char *out = xstrdup(v);
                    free(line);
                    return out;
                }
            }
        }
        free(line);
        p = e ? e + 1 : NULL;
    }
    return NULL;
}

/* out's region, endpoint and addressing from ep (NULL or "": AWS's
 * regional one) and rg. */
static void place(struct s3_cfg *out, const char *ep, const char *rg, const char *addressing)
{
    out->region = xstrdup(rg);
    if (ep && ep[0]) {
        out->endpoint = xstrdup(ep);
        out->vhost = addressing && !strcmp(addressing, "virtual");
    } else {
        out->endpoint = xasprintf("https://s3.%s.amazonaws.com", rg);
        out->vhost = !(addressing && !strcmp(addressing, "path"));
    }
    size_t el = strlen(out->endpoint);
    while (el > 0 && out->endpoint[el - 1] == '/')
        out->endpoint[--el] = '\0';
}

void s3_cfg_make(struct s3_cfg *out, const char *endpoint, const char *region,
                 const char *addressing, const char *access_key, const char *secret_key,
                 const char *token)
{
    memset(out, 0, sizeof(*out));
    place(out, endpoint, region && region[0] ? region : "us-east-1", addressing);
    int keys = access_key && access_key[0] && secret_key && secret_key[0];
    out->access_key = xstrdup(keys ? access_key : "");
    out->secret_key = xstrdup(keys ? secret_key : "");
    out->token = xstrdup(keys && token ? token : "");
}

void s3_cfg_resolve(struct s3_cfg *out, const char *endpoint, const char *region,
                    const char *addressing, const char *access_key, const char *secret_key,
                    const char *token, const char *profile)
{
    memset(out, 0, sizeof(*out));
    const char *ep = first(endpoint, getenv("AWS_ENDPOINT_URL_S3"), getenv("AWS_ENDPOINT_URL"));
    const char *rg = first(region, getenv("AWS_REGION"),
                           first(getenv("AWS_DEFAULT_REGION"), NULL, "us-east-1"));
    place(out, ep, rg, addressing);

    const char *ak = first(access_key, getenv("AWS_ACCESS_KEY_ID"), NULL);
    const char *sk = first(secret_key, getenv("AWS_SECRET_ACCESS_KEY"), NULL);
    const char *tk = first(token, ak && access_key && access_key[0] ? NULL
                                                                  : getenv("AWS_SESSION_TOKEN"),
                           "");
    if (ak && sk) {
        out->access_key = xstrdup(ak);
        out->secret_key = xstrdup(sk);
        out->token = xstrdup(tk);
        return;
    }
    /* the shared credentials file */
    const char *prof = first(profile, getenv("AWS_PROFILE"), "default");
    const char *home = getenv("HOME");
    char *path = getenv("AWS_SHARED_CREDENTIALS_FILE")
                     ? xstrdup(getenv("AWS_SHARED_CREDENTIALS_FILE"))
                     : xasprintf("%s/.aws/credentials", home ? home : "/root");
    char *text = file_read(path, 1 << 20, NULL);
    free(path);
    if (text) {
        out->access_key = ini_get(text, prof, "aws_access_key_id");
        out->secret_key = ini_get(text, prof, "aws_secret_access_key");
        out->token = ini_get(text, prof, "aws_session_token");
        free(text);
    }
    if (!out->access_key || !out->secret_key) {
        free(out->access_key);
        free(out->secret_key);
        out->access_key = xstrdup("");
        out->secret_key = xstrdup("");
    }
    if (!out->token)
        out->token = xstrdup("");
}

void s3_cfg_copy(struct s3_cfg *d, const struct s3_cfg *s)
{
    d->endpoint = xstrdup(s->endpoint);
    d->region = xstrdup(s->region);
    d->vhost = s->vhost;
    d->access_key = xstrdup(s->access_key);
    d->secret_key = xstrdup(s->secret_key);
    d->token = xstrdup(s->token);
}

void s3_cfg_free(struct s3_cfg *c)
{
    free(c->endpoint);
    free(c->region);
    free(c->access_key);
    free(c->secret_key);
    free(c->token);
    memset(c, 0, sizeof(*c));
}

void s3_req_build(struct s3_req *out, const struct s3_cfg *c, const char *method,
                  const char *bucket, const char *key, const char *query,
                  const char *payload_hash, const char *const *extra, int n_extra, time_t now)
{
    memset(out, 0, sizeof(*out));
    const char *sep = strstr(c->endpoint, "://");
    const char *hostport = sep ? sep + 3 : c->endpoint;
    char *scheme = sep ? xstrndup(c->endpoint, (size_t)(sep - c->endpoint)) : xstrdup("http");
    char *ekey = key ? sigv4_uri_encode(key, strlen(key), 1) : xstrdup("");
    /* an endpoint may carry a path (Shoal's own S3 API: http://proxy/s3) */
    size_t hl = strcspn(hostport, "/");
    char *base = xstrdup(hostport + hl);
    size_t bl = strlen(base);
    while (bl && base[bl - 1] == '/')
        base[--bl] = '\0';
    char *host, *path;
    if (c->vhost) {
        host = xasprintf("%s.%.*s", bucket, (int)hl, hostport);
        path = xasprintf("%s/%s", base, ekey);
    } else {
        host = xstrndup(hostport, hl);
        path = key ? xasprintf("%s/%s/%s", base, bucket, ekey) : xasprintf("%s/%s", base, bucket);
    }
    free(base);
    out->url = xasprintf("%s://%s%s%s%s", scheme, host, path, query && query[0] ? "?" : "",
                         query ? query : "");
    char amzdate[17], date[9];
    sigv4_dates(now, amzdate, date);
    struct sigv4_hdr sh[S3_REQ_MAX_HDRS];
    int n = 0;
    sh[n++] = (struct sigv4_hdr){"host", host};
    sh[n++] = (struct sigv4_hdr){"x-amz-date", amzdate};
    sh[n++] = (struct sigv4_hdr){"x-amz-content-sha256", payload_hash};
    if (c->token[0])
        sh[n++] = (struct sigv4_hdr){"x-amz-security-token", c->token};
    char *names[8], *vals[8];
    for (int i = 0; i < n_extra && i < 8; i++) {
        const char *colon = strchr(extra[i], ':');
        names[i] = xstrndup(extra[i], (size_t)(colon - extra[i]));
        const char *v = colon + 1;
        while (*v == ' ')
            v++;
        vals[i] = xstrdup(v);
        sh[n++] = (struct sigv4_hdr){names[i], vals[i]};
    }
    for (int i = 1; i < n; i++) /* host is set by curl from the URL */
        out->hdrs[out->n++] = xasprintf("%s: %s", sh[i].name, sh[i].value);
    if (c->access_key[0]) {
        struct sigv4_req r = {method, path, query ? query : "", sh, n, payload_hash};
        struct sigv4_ctx ctx = {c->region, "s3", now, 0};
        struct sigv4_creds k = {c->access_key, c->secret_key, c->token};
        char *auth = sigv4_authorization(&r, &ctx, &k, NULL);
        out->hdrs[out->n++] = xasprintf("Authorization: %s", auth);
        free(auth);
    }
    for (int i = 0; i < n_extra && i < 8; i++) {
        free(names[i]);
        free(vals[i]);
    }
    free(scheme);
    free(ekey);
    free(host);
    free(path);
}

void s3_req_free(struct s3_req *r)
{
    free(r->url);
    for (int i = 0; i < r->n; i++)
        free(r->hdrs[i]);
    memset(r, 0, sizeof(*r));
}
