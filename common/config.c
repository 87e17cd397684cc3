/*
 * config: one table describes every option (name, type, bounds, default,
 * help); loading from JSON and from the command line both go through
 * conf_set_value() so the validation is written once.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bprof.h"
#include "log.h"
#include "util.h"
#include "version.h"

enum opt_type { OPT_STR, OPT_INT, OPT_BOOL, OPT_LIST, OPT_NUM };

struct opt {
    const char *name;
    enum opt_type type;
    size_t off;        /* offset of the field in struct conf */
    long min, max;     /* OPT_INT and OPT_NUM bounds */
    const char *def;   /* default, as text; NULL: another name of the option
                        * before it (an alias) */
    const char *help;
    unsigned roles;    /* which daemons use it (R_*); the others accept and ignore it */
};

#define R_PROXY 1u
#define R_TARGET 2u
#define R_BOTH 3u

/* A list's count is the int right after its pointer in struct conf. */
#define LIST_COUNT(c, o) ((int *)((char *)(c) + (o)->off + sizeof(char **)))
_Static_assert(offsetof(struct conf, n_mountpaths) ==
                   offsetof(struct conf, mountpaths) + sizeof(char **),
               "list count follows its list");
_Static_assert(offsetof(struct conf, n_auth_keys) ==
                   offsetof(struct conf, auth_keys) + sizeof(char **),
               "list count follows its list");
_Static_assert(offsetof(struct conf, n_admin_keys) ==
                   offsetof(struct conf, admin_keys) + sizeof(char **),
               "list count follows its list");
_Static_assert(offsetof(struct conf, n_users) == offsetof(struct conf, users) + sizeof(char **),
               "list count follows its list");

#define F(f) offsetof(struct conf, f)
static const struct opt opts[] = {
    {"id", OPT_STR, F(id), 0, 0, "", "node id (generated and kept in state_dir when empty)", R_BOTH},
    {"host", OPT_STR, F(host), 0, 0, "127.0.0.1", "listen address", R_BOTH},
    {"port", OPT_INT, F(port), 1, 65535, "8080", "listen port", R_BOTH},
    {"public_url", OPT_STR, F(public_url), 0, 0, "", "URL clients reach this node at (default http://host:port)", R_BOTH},
    {"primary_url", OPT_STR, F(primary_url), 0, 0, "", "proxies to join through (comma-separated URLs); empty on the first proxy, which founds the cluster", R_BOTH},
    {"raft_port", OPT_INT, F(raft_port), 0, 65535, "0", "proxy: port of the consensus among proxies (0: port + 1000)", R_PROXY},
    {"state_dir", OPT_STR, F(state_dir), 0, 0, "", "directory for node id, cluster map and bucket metadata", R_BOTH},
    {"mountpaths", OPT_LIST, F(mountpaths), 0, 0, "", "target data directories, one per drive (comma-separated)", R_TARGET},
    {"workers", OPT_INT, F(workers), 1, 256, "2", "HTTP worker threads", R_BOTH},
    {"io_threads", OPT_INT, F(io_threads), 1, 256, "16", "threads for blocking disk and metadata calls", R_TARGET},
    {"inline_max", OPT_INT, F(inline_max), 0, 32768, "16384", "objects (and slices) up to this many bytes are kept in their metadata record, with no data file (0: never)", R_TARGET},
    {"job_workers", OPT_INT, F(job_workers), 1, 64, "4", "objects a target works on at once, per batch job", R_TARGET},
    {"job_max", OPT_INT, F(job_max), 1, 256, "8", "batch jobs a target runs at once (more wait)", R_TARGET},
    {"job_ttl_s", OPT_INT, F(job_ttl_s), 1, 31536000, "86400", "how long an ended job is kept", R_TARGET},
    {"space_low_wm", OPT_INT, F(space_low_wm), 1, 99, "75", "a mountpath's use (percent) that eviction brings it back under", R_TARGET},
    {"space_high_wm", OPT_INT, F(space_high_wm), 2, 100, "90", "a mountpath's use (percent) above which eviction starts", R_TARGET},
    {"space_oos", OPT_INT, F(space_oos), 2, 100, "95", "a mountpath's use (percent) at which PUTs of Shoal-only buckets get 507", R_TARGET},
    {"lru_dont_evict_s", OPT_INT, F(lru_dont_evict_s), 0, 31536000, "120", "an object read this recently is not evicted", R_TARGET},
    {"wbq_workers", OPT_INT, F(wbq_workers), 1, 64, "4", "write-back uploads a target runs at once", R_TARGET},
    {"rebalance", OPT_BOOL, F(rebalance), 0, 1, "true", "a change of the targets moves objects to their new owners", R_TARGET},
    {"rebalance_workers", OPT_INT, F(rebalance_workers), 1, 64, "4", "objects a target sends at once during a rebalance", R_TARGET},
    {"rebalance_busy_mbps", OPT_INT, F(rebalance_busy_mbps), 0, 100000, "48", "MiB/s a target sends during a rebalance while it serves clients, one object at a time (0: no limit)", R_TARGET},
    {"tombstone_ttl_s", OPT_INT, F(tombstone_ttl_s), 60, 31536000, "604800", "how long a deleted name's version is kept (longer than any target stays away)", R_TARGET},
    {"scrub_mbps", OPT_INT, F(scrub_mbps), 1, 100000, "64", "MiB/s a scrub reads at most, per target", R_TARGET},
    {"scrub_interval_h", OPT_INT, F(scrub_interval_h), 0, 87600, "168", "hours between scrubs of everything a target holds (0: only scrub jobs asked for)", R_TARGET},
    {"mpu_expire_h", OPT_NUM, F(mpu_expire_h), 0, 87600, "168", "hours after which a multipart upload not completed or aborted is dropped with its parts (decimals allowed; 0: kept until aborted)", R_TARGET},
    {"shutdown_grace_s", OPT_INT, F(shutdown_grace_s), 0, 3600, "10", "at SIGTERM, how long requests under way may take to finish (new ones get 503)", R_BOTH},
    {"drain", OPT_BOOL, F(drain), 0, 1, "false", "at SIGTERM a target first writes back what it owes its backends", R_TARGET},
    {"drain_timeout_s", OPT_INT, F(drain_timeout_s), 1, 86400, "600", "how long drain waits at most", R_TARGET},
    {"wbq_multipart_mb", OPT_INT, F(wbq_multipart_mb), 5, 5120, "64", "write-back uploads of objects larger than this go in parts", R_TARGET},
    {"wbq_part_mb", OPT_INT, F(wbq_part_mb), 5, 5120, "16", "the size of a write-back upload's parts", R_TARGET},
    {"wbq_defer_max_s", OPT_INT, F(wbq_defer_max_s), 1, 3600, "30", "write-back uploads wait for a quiet moment at most this long", R_TARGET},
    {"wbq_quiet_ms", OPT_INT, F(wbq_quiet_ms), 0, 60000, "1000", "write-back uploads wait until no PUT came for this long (30 s at most)", R_TARGET},
    {"atime_flush_s", OPT_INT, F(atime_flush_s), 1, 86400, "60", "how often last reads are written to the drives", R_TARGET},
    {"space_census_s", OPT_INT, F(space_census_s), 1, 86400, "30", "how often the space gauges count objects, evictable, pinned and dirty bytes", R_TARGET},
    {"space_sample_ms", OPT_INT, F(space_sample_ms), 100, 600000, "2000", "how often a target measures its drives (statvfs)", R_TARGET},
    {"log_level", OPT_STR, F(log_level), 0, 0, "info", "error, warn, info or debug", R_BOTH},
    {"keepalive_ms", OPT_INT, F(keepalive_ms), 100, 600000, "2000", "heartbeat period to the primary", R_BOTH},
    {"node_timeout_ms", OPT_INT, F(node_timeout_ms), 200, 3600000, "10000", "a node silent this long leaves the map", R_PROXY},
    {"max_header_bytes", OPT_INT, F(max_header_bytes), 1024, 1048576, "16384", "request header block limit", R_BOTH},
    {"max_headers", OPT_INT, F(max_headers), 8, 1024, "100", "request header count limit", R_BOTH},
    {"idle_timeout_s", OPT_INT, F(idle_timeout_s), 1, 86400, "120", "idle keep-alive connection limit", R_BOTH},
    {"cluster_secret_file", OPT_STR, F(cluster_secret_file), 0, 0, "", "file (mode 0600) with the key that signs redirects and cluster messages; required, the same on every node", R_BOTH},
    {"fsync", OPT_BOOL, F(fsync), 0, 1, "true", "fsync data and metadata before a PUT is acknowledged", R_TARGET},
    {"redirect_ttl_s", OPT_INT, F(redirect_ttl_s), 1, 86400, "300", "lifetime of a signed redirect", R_BOTH},
    {"s3_endpoint", OPT_STR, F(s3_endpoint), 0, 0, "", "S3 endpoint URL (else AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS)", R_TARGET},
    {"s3_region", OPT_STR, F(s3_region), 0, 0, "", "S3 region (else AWS_REGION, us-east-1)", R_TARGET},
    {"s3_addressing", OPT_STR, F(s3_addressing), 0, 0, "", "path or virtual (default: path with an endpoint, else virtual)", R_TARGET},
    {"s3_access_key", OPT_STR, F(s3_access_key), 0, 0, "", "S3 access key (else AWS_ACCESS_KEY_ID, ~/.aws/credentials)", R_TARGET},
    {"s3_secret_key", OPT_STR, F(s3_secret_key), 0, 0, "", "S3 secret key (else AWS_SECRET_ACCESS_KEY, ~/.aws/credentials)", R_TARGET},
    {"s3_session_token", OPT_STR, F(s3_session_token), 0, 0, "", "S3 session token (else AWS_SESSION_TOKEN)", R_TARGET},
    {"s3_profile", OPT_STR, F(s3_profile), 0, 0, "", "profile in ~/.aws/credentials (else AWS_PROFILE, default)", R_TARGET},
    {"backend_timeout_s", OPT_INT, F(backend_timeout_s), 1, 86400, "600", "limit on one backend request", R_TARGET},
    {"transform_timeout_s", OPT_INT, F(transform_timeout_s), 1, 86400, "300", "limit on one object's transform (inline GET or job): a slower one is 504", R_TARGET},
    {"backend_retries", OPT_INT, F(backend_retries), 0, 10, "3", "retries on 5xx, throttling and connection errors", R_TARGET},
    {"auth_keys", OPT_LIST, F(auth_keys), 0, 0, "", "client credentials for the native and S3 APIs, ACCESS_KEY:SECRET (comma-separated; on a command line every user sees them: use auth_keys_file); none: anonymous", R_BOTH},
    {"s3_api_keys", OPT_LIST, F(auth_keys), 0, 0, NULL, "alias of auth_keys", R_BOTH},
    {"backends_file", OPT_STR, F(backends_file), 0, 0, "", "file (mode 0600, the daemon user's) of backend profiles, a JSON object NAME: PROFILE (endpoint, region, addressing, credentials); (re)applied to the cluster whenever a proxy becomes primary", R_PROXY},
    {"auth_keys_file", OPT_STR, F(auth_keys_file), 0, 0, "", "file (mode 0600, the daemon user's) of client credentials, one ACCESS_KEY:SECRET a line (# comments) or a JSON array; added to auth_keys", R_BOTH},
    {"admin_keys", OPT_LIST, F(admin_keys), 0, 0, "", "access keys (of auth_keys) that may use every bucket through either API, whoever owns it (comma-separated)", R_BOTH},
    {"users", OPT_LIST, F(users), 0, 0, "", "access keys as S3 users, ACCESS:CANONICAL_ID:DISPLAY_NAME[:EMAIL] (comma-separated; an empty ID or name: the default, a SHA-256 of the key and the key itself); ACLs grant to them by ID or email", R_BOTH},
    {"allow_anonymous", OPT_BOOL, F(allow_anonymous), 0, 1, "false", "serve without auth_keys on a non-loopback address", R_BOTH},
    {"header_timeout_s", OPT_INT, F(header_timeout_s), 1, 3600, "30", "a request head must arrive within this", R_BOTH},
    {"max_connections", OPT_INT, F(max_connections), 16, 1000000, "4096", "open client connections per port; at it the longest idle one closes for a new one", R_BOTH},
    {"s3_api_port", OPT_INT, F(s3_api_port), 0, 65535, "0", "extra port serving the S3 API at the root (0: none)", R_PROXY},
    {"tls_cert_file", OPT_STR, F(tls_cert_file), 0, 0, "", "PEM certificate chain: with tls_key_file, port serves HTTPS (and public_url defaults to https://)", R_BOTH},
    {"tls_key_file", OPT_STR, F(tls_key_file), 0, 0, "", "PEM private key of tls_cert_file", R_BOTH},
    {"tls_ca_file", OPT_STR, F(tls_ca_file), 0, 0, "", "PEM CA certificates that nodes verify each other's HTTPS with (default: the system's)", R_BOTH},
    {"plain_port", OPT_INT, F(plain_port), 0, 65535, "0", "with TLS on: an extra port serving plain HTTP (0: none)", R_BOTH},
    {"s3_redirect", OPT_BOOL, F(s3_redirect), 0, 1, "false", "S3 object requests get a redirect to the target instead of a forward", R_PROXY},
};
#undef F

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static const struct opt *opt_find(const char *name, size_t n)
{
    for (size_t i = 0; i < ARRAY_LEN(opts); i++)
        if (strlen(opts[i].name) == n && memcmp(opts[i].name, name, n) == 0)
            return &opts[i];
    return NULL;
}

static void list_free(char **list, int n)
{
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
}

static int conf_set_value(struct conf *c, const struct opt *o, const char *v,
                          char *err, size_t errlen)
{
    char *base = (char *)c;
    switch (o->type) {
    case OPT_STR: {
        char **f = (char **)(base + o->off);
        free(*f);
        *f = xstrdup(v);
        return 0;
    }
    case OPT_INT: {
        int64_t x;
        if (parse_i64(v, strlen(v), &x))
            return fail(err, errlen, "option '%s': '%s' is not a whole number", o->name, v);
        if (x < o->min || x > o->max)
            return fail(err, errlen, "option '%s': %lld is out of range %ld..%ld",
                        o->name, (long long)x, o->min, o->max);
        *(int *)(base + o->off) = (int)x;
        return 0;
    }
    case OPT_NUM: {              /* a decimal number (hours: "0.5") */
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        if (!*v || *end || errno || !isfinite(x))
            return fail(err, errlen, "option '%s': '%s' is not a number", o->name, v);
        if (x < (double)o->min || x > (double)o->max)
            return fail(err, errlen, "option '%s': %g is out of range %ld..%ld", o->name, x,
                        o->min, o->max);
        *(double *)(base + o->off) = x;
        return 0;
    }
    case OPT_BOOL: {
        int b;
        if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes"))
            b = 1;
        else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no"))
            b = 0;
        else
            return fail(err, errlen, "option '%s': '%s' is not true or false", o->name, v);
        *(int *)(base + o->off) = b;
        return 0;
    }
    case OPT_LIST: {
        char ***f = (char ***)(base + o->off);
        int *cnt = LIST_COUNT(base, o);
        list_free(*f, *cnt);
        *f = NULL;
        *cnt = 0;
        const char *p = v;
        while (*p) {
            const char *e = strchr(p, ',');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            if (n == 0)
                return fail(err, errlen, "option '%s': empty element in '%s'", o->name, v);
            *f = xrealloc(*f, sizeof(char *) * (size_t)(*cnt + 1));
            (*f)[(*cnt)++] = xstrndup(p, n);
            p += n + (e ? 1 : 0);
        }
        return 0;
    }
    }
    return fail(err, errlen, "option '%s': bad type", o->name);
}

void conf_defaults(struct conf *c)
{
    char err[256];
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < ARRAY_LEN(opts); i++)
        if (opts[i].def && conf_set_value(c, &opts[i], opts[i].def, err, sizeof(err)))
            abort(); /* the table's own defaults are valid */
}

int conf_set(struct conf *c, const char *name, const char *value, char *err,
             size_t errlen)
{
    const struct opt *o = opt_find(name, strlen(name));
    if (!o)
        return fail(err, errlen, "unknown option '%s' (see --help)", name);
    return conf_set_value(c, o, value, err, errlen);
}

/* JSON values are turned into the same text the command line would give. */
static int conf_set_json(struct conf *c, const char *name, json_t *v, char *err,
                         size_t errlen)
{
    const struct opt *o = opt_find(name, strlen(name));
    if (!o)
        return fail(err, errlen, "config file: unknown option '%s'", name);
    char buf[64];
    switch (o->type) {
    case OPT_STR:
        if (!json_is_string(v))
            return fail(err, errlen, "config file: '%s' must be a string", name);
        return conf_set_value(c, o, json_string_value(v), err, errlen);
    case OPT_INT:
        if (!json_is_integer(v))
            return fail(err, errlen, "config file: '%s' must be an integer", name);
        snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return conf_set_value(c, o, buf, err, errlen);
    case OPT_NUM:
        if (!json_is_number(v))
            return fail(err, errlen, "config file: '%s' must be a number", name);
        snprintf(buf, sizeof(buf), "%.17g", json_number_value(v));
        return conf_set_value(c, o, buf, err, errlen);
    case OPT_BOOL:
        if (!json_is_boolean(v))
            return fail(err, errlen, "config file: '%s' must be true or false", name);
        return conf_set_value(c, o, json_is_true(v) ? "true" : "false", err, errlen);
    case OPT_LIST: {
        if (!json_is_array(v))
            return fail(err, errlen, "config file: '%s' must be an array of strings", name);
        char ***f = (char ***)((char *)c + o->off);
        int *cnt = LIST_COUNT(c, o);
        list_free(*f, *cnt);
        *f = NULL;
        *cnt = 0;
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            if (!json_is_string(e) || json_string_length(e) == 0)
                return fail(err, errlen, "config file: '%s'[%zu] must be a non-empty string",
                            name, i);
            *f = xrealloc(*f, sizeof(char *) * (i + 1));
            (*f)[(*cnt)++] = xstrdup(json_string_value(e));
        }
        return 0;
    }
    }
    return -1;
}

/* Blank out the lines whose first non-blank character is # (so the
 * parser's line numbers stay right). */
static void blank_comments(char *t, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && (t[j] == ' ' || t[j] == '\t'))
            j++;
        int comment = j < n && t[j] == '#';
        while (j < n && t[j] != '\n') {
            if (comment)
                t[j] = ' ';
            j++;
        }
        i = j + 1;
    }
}

#define CONF_FILE_MAX (1u << 20)

static int conf_load_file(struct conf *c, const char *path, char *err, size_t errlen)
{
    size_t n;
    char *text = file_read(path, CONF_FILE_MAX, &n);
    if (!text)
        return fail(err, errlen, "config file %s: %s", path, strerror(errno));
    blank_comments(text, n);
    json_error_t je;
    json_t *root = json_loadb(text, n, 0, &je);
    free(text);
    if (!root)
        return fail(err, errlen, "config file %s: line %d: %s", path, je.line, je.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return fail(err, errlen, "config file %s: top level must be an object", path);
    }
    const char *k;
    json_t *v;
    int rc = 0;
    json_object_foreach(root, k, v) {
        if ((rc = conf_set_json(c, k, v, err, errlen)))
            break;
    }
    json_decref(root);
    return rc;
}

/*
 * A file of secrets (the option opt names it, for the messages): open for
 * reading when it is a regular file owned by the daemon's user, with no
 * group or other permission bits (another user who could read it has the
 * secrets; one who could write or owns it could put in their own).
 * Returns the descriptor with *st filled, or -1 with err saying what to
 * run.
 */
static int private_open(const char *opt, const char *path, struct stat *st, char *err,
                        size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, "%s %s: %s", opt, path, strerror(errno));
    if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
        close(fd);
        return fail(err, errlen, "%s %s: not a regular file", opt, path);
    }
    if (st->st_uid != geteuid()) {
        close(fd);
        return fail(err, errlen,
                    "%s %s: owned by uid %u, not by the daemon's user (uid %u); chown %u %s",
                    opt, path, (unsigned)st->st_uid, (unsigned)geteuid(),
                    (unsigned)geteuid(), path);
    }
    if (st->st_mode & 077) {
        close(fd);
        return fail(err, errlen, "%s %s: mode %03o lets others read it; chmod 600 %s", opt,
                    path, (unsigned)(st->st_mode & 0777), path);
    }
    return fd;
}

/*
 * The cluster secret comes from a private file (private_open) holding at
 * least CONF_SECRET_MIN bytes once trailing white space is cut.
 */
static int conf_read_secret(struct conf *c, char *err, size_t errlen)
{
    const char *path = c->cluster_secret_file;
    struct stat st;
    int fd = private_open("cluster_secret_file", path, &st, err, errlen);
    if (fd < 0)
        return -1;
    char buf[1025];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n < 0)
        return fail(err, errlen, "cluster_secret_file %s: %s", path, strerror(errno));
    while (n > 0 && isspace((unsigned char)buf[n - 1]))
        n--;
    buf[n] = '\0';
    if (n < CONF_SECRET_MIN || memchr(buf, '\0', (size_t)n))
        return fail(err, errlen,
                    "cluster_secret_file %s: the secret must be at least %d bytes of text "
                    "(e.g. (umask 077; openssl rand -hex 32 > %s))",
                    path, CONF_SECRET_MIN, path);
    free(c->cluster_secret);
    c->cluster_secret = xstrdup(buf);
    OPENSSL_cleanse(buf, sizeof(buf));
    return 0;
}

/* s (n bytes, white space around it cut) added to c's auth_keys when it
 * is ACCESS_KEY:SECRET; else -1 with err naming path and where (a line,
 * an element), never quoting what may be a secret. */
static int keys_add(struct conf *c, const char *s, size_t n, const char *path,
                    const char *where, char *err, size_t errlen)
{
    while (n && isspace((unsigned char)*s))
        s++, n--;
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    const char *colon = memchr(s, ':', n);
    if (!colon || colon == s || colon == s + n - 1 || memchr(s, '\0', n))
        return fail(err, errlen, "auth_keys_file %s: %s is not ACCESS_KEY:SECRET", path, where);
    c->auth_keys = xrealloc(c->auth_keys, sizeof(char *) * (size_t)(c->n_auth_keys + 1));
    c->auth_keys[c->n_auth_keys++] = xstrndup(s, n);
    return 0;
}

/* An auth_keys_file's text (n bytes, NUL-terminated) added to c's
 * auth_keys: a JSON array of strings when its first non-blank byte is
 * '[', else one ACCESS_KEY:SECRET a line (commas separate too, as in the
 * option), blank lines and lines whose first non-blank byte is '#'
 * skipped. 0 or -1. */
static int keys_parse(struct conf *c, const char *path, const char *text, size_t n,
                      char *err, size_t errlen)
{
    char where[64];
    const char *p = text + strspn(text, " \t\r\n"), *end = text + n;
    if (p < end && *p == '[') {
        json_error_t je;
        json_t *a = json_loadb(text, n, 0, &je);
        if (!json_is_array(a)) {
            json_decref(a);
            return fail(err, errlen, "auth_keys_file %s: line %d: not a JSON array of strings",
                        path, a ? 1 : je.line);
        }
        size_t k;
        json_t *e;
        int rc = 0;
        json_array_foreach(a, k, e) {
            snprintf(where, sizeof(where), "element %zu", k);
            const char *v = json_is_string(e) ? json_string_value(e) : "";
            size_t vl = json_is_string(e) ? json_string_length(e) : 0;
            if ((rc = keys_add(c, v, vl, path, where, err, errlen)))
                break;
        }
        json_decref(a);
        return rc;
    }
    for (int line = 1; text < end; line++, text = p + 1) {
        const char *eol = memchr(text, '\n', (size_t)(end - text));
        p = eol ? eol : end;
        const char *first = text + strspn(text, " \t\r");
        if (first >= p || *first == '#')
            continue;
        snprintf(where, sizeof(where), "line %d", line);
        for (const char *q = text; q <= p;) {  /* the line's comma-separated entries */
            const char *comma = memchr(q, ',', (size_t)(p - q));
            const char *e = comma ? comma : p;
            if (keys_add(c, q, (size_t)(e - q), path, where, err, errlen))
                return -1;
            q = e + 1;
        }
    }
    return 0;
}

/* The text of private file path (private_open's checks; opt names the
 * option), NUL-terminated, *n its length: the caller OPENSSL_cleanses and
 * frees it. NULL with err. */
static char *private_read(const char *opt, const char *path, size_t *n, char *err,
                          size_t errlen)
{
    struct stat st;
    int fd = private_open(opt, path, &st, err, errlen);
    if (fd < 0)
        return NULL;
    if ((uint64_t)st.st_size > CONF_FILE_MAX) {
        close(fd);
        fail(err, errlen, "%s %s: larger than %u bytes", opt, path, CONF_FILE_MAX);
        return NULL;
    }
    *n = (size_t)st.st_size;
    char *text = xmalloc(*n + 1);
    int rc = pread_full(fd, text, *n, 0);
    close(fd);
    text[*n] = '\0';
    if (rc) {
        fail(err, errlen, "%s %s: %s", opt, path, strerror(-rc));
        free(text);
        return NULL;
    }
    return text;
}

/* auth_keys_file's keys added to c's auth_keys (private_open's checks). */
static int conf_read_keys(struct conf *c, char *err, size_t errlen)
{
    size_t n;
    char *text = private_read("auth_keys_file", c->auth_keys_file, &n, err, errlen);
    if (!text)
        return -1;
    int rc = keys_parse(c, c->auth_keys_file, text, n, err, errlen);
    OPENSSL_cleanse(text, n);
    free(text);
    return rc;
}

/* backends_file's profiles into c->backends: a JSON object of NAME:
 * PROFILE, each valid (bprof_check). */
static int conf_read_backends(struct conf *c, char *err, size_t errlen)
{
    size_t n;
    const char *path = c->backends_file;
    char *text = private_read("backends_file", path, &n, err, errlen);
    if (!text)
        return -1;
    json_error_t je;
    json_t *j = json_loadb(text, n, 0, &je);
    OPENSSL_cleanse(text, n);
    free(text);
    if (!json_is_object(j)) {
        json_decref(j);
        return fail(err, errlen, "backends_file %s: line %d: not a JSON object of "
                                 "NAME: PROFILE", path, j ? 1 : je.line);
    }
    const char *name;
    json_t *p;
    char why[200];
    json_object_foreach(j, name, p) {
        if (!bprof_valid_name(name, strlen(name)) || bprof_check(p, why, sizeof(why))) {
            fail(err, errlen, "backends_file %s: profile '%.63s': %s", path, name,
                 bprof_valid_name(name, strlen(name)) ? why : "invalid name");
            json_decref(j);      /* name was j's */
            return -1;
        }
    }
    json_decref(c->backends);
    c->backends = j;
    return 0;
}

/* Every access key once: a second one's secret would never be checked. */
static int keys_distinct(const struct conf *c, char *err, size_t errlen)
{
    for (int i = 0; i < c->n_auth_keys; i++) {
        const char *a = c->auth_keys[i];
        size_t al = strcspn(a, ":");
        for (int j = 0; j < i; j++)
            if (strcspn(c->auth_keys[j], ":") == al && !memcmp(a, c->auth_keys[j], al))
                return fail(err, errlen, "access key '%.*s' is given twice (auth_keys, "
                            "auth_keys_file)", (int)al, a);
    }
    return 0;
}

/* conf_load; as_given: for --example-config, nothing derived (public_url)
 * or read (the secret). */
static int load(struct conf *c, int argc, char **argv, int as_given, char *err, size_t errlen)
{
    conf_defaults(c);
    /* The file first, wherever --config stands, so flags override it. */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config")) {
            if (i + 1 >= argc)
                return fail(err, errlen, "--config needs a file name");
            if (conf_load_file(c, argv[i + 1], err, errlen))
                return -1;
        } else if (!strncmp(argv[i], "--config=", 9)) {
            if (conf_load_file(c, argv[i] + 9, err, errlen))
                return -1;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0)
            return fail(err, errlen, "unexpected argument '%s'", a);
        a += 2;
        const char *eq = strchr(a, '=');
        size_t nlen = eq ? (size_t)(eq - a) : strlen(a);
        const char *val;
        if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc)
                return fail(err, errlen, "option '--%s' needs a value", a);
            val = argv[++i];
        }
        if (nlen == 6 && !memcmp(a, "config", 6))
            continue;
        char name[64];
        if (nlen >= sizeof(name))
            return fail(err, errlen, "unknown option '--%.*s'", (int)nlen, a);
        memcpy(name, a, nlen);
        name[nlen] = '\0';
        for (char *p = name; *p; p++)
            if (*p == '-')
                *p = '_';
        if (conf_set(c, name, val, err, errlen))
            return -1;
        const struct opt *o = opt_find(name, nlen);
        if (o->off == offsetof(struct conf, auth_keys) && val[0])
            c->auth_keys_argv = 1;
    }
    if (as_given)
        return 0;
    if (log_level_parse(c->log_level) < 0)
        return fail(err, errlen, "option 'log_level': '%s' is not error, warn, info or debug",
                    c->log_level);
    if (!c->tls_cert_file[0] != !c->tls_key_file[0])
        return fail(err, errlen, "options 'tls_cert_file' and 'tls_key_file' go together");
    if (c->plain_port && !c->tls_cert_file[0])
        return fail(err, errlen, "option 'plain_port' is for a node with TLS on (port is "
                                 "plain HTTP already)");
    if (!c->public_url[0]) {
        free(c->public_url);
        c->public_url =
            xasprintf("%s://%s:%d", c->tls_cert_file[0] ? "https" : "http", c->host, c->port);
    }
    if (c->space_low_wm >= c->space_high_wm || c->space_high_wm > c->space_oos)
        return fail(err, errlen, "options 'space_low_wm' (%d), 'space_high_wm' (%d) and "
                                 "'space_oos' (%d) must rise in that order",
                    c->space_low_wm, c->space_high_wm, c->space_oos);
    if (c->s3_addressing[0] && strcmp(c->s3_addressing, "path") &&
        strcmp(c->s3_addressing, "virtual"))
        return fail(err, errlen, "option 's3_addressing': '%s' is not path or virtual",
                    c->s3_addressing);
    size_t ul = strlen(c->public_url);
    if (ul && c->public_url[ul - 1] == '/')
        c->public_url[ul - 1] = '\0';
    if (c->auth_keys_file[0] && conf_read_keys(c, err, errlen))
        return -1;
    if (keys_distinct(c, err, errlen))
        return -1;
    if (c->backends_file[0] && conf_read_backends(c, err, errlen))
        return -1;
    if (c->cluster_secret_file[0])
        return conf_read_secret(c, err, errlen);
    return 0;
}

int conf_load(struct conf *c, int argc, char **argv, char *err, size_t errlen)
{
    return load(c, argc, argv, 0, err, errlen);
}

void conf_free(struct conf *c)
{
    free(c->cluster_secret);
    c->cluster_secret = NULL;
    json_decref(c->backends);
    c->backends = NULL;
    for (size_t i = 0; i < ARRAY_LEN(opts); i++) {
        if (!opts[i].def)
            continue;
        if (opts[i].type == OPT_STR) {
            char **f = (char **)((char *)c + opts[i].off);
            free(*f);
            *f = NULL;
        } else if (opts[i].type == OPT_LIST) {
            char ***f = (char ***)((char *)c + opts[i].off);
            list_free(*f, *LIST_COUNT(c, &opts[i]));
            *f = NULL;
            *LIST_COUNT(c, &opts[i]) = 0;
        }
    }
}

/* The role bit of a daemon's name. */
static unsigned role_bit(enum conf_role role)
{
    return role == CONF_PROXY ? R_PROXY : R_TARGET;
}

void conf_usage(FILE *out, const char *prog, enum conf_role role)
{
    fprintf(out,
            "usage: %s [--config FILE] [--OPTION VALUE ...]\n"
            "       %s --version | --help\n"
            "       %s [--config FILE] [--OPTION VALUE ...] --check-config | --example-config\n\n"
            "Options (also as \"name\": value in the JSON config file; a value on the\n"
            "command line wins over the file's):\n",
            prog, prog, prog);
    for (size_t i = 0; i < ARRAY_LEN(opts); i++) {
        if (!(opts[i].roles & role_bit(role)))
            continue;
        if (!opts[i].def)
            fprintf(out, "  --%-20s another name of --%s\n", opts[i].name, opts[i - 1].name);
        else
            fprintf(out, "  --%-20s %s (default: %s)\n", opts[i].name, opts[i].help,
                    opts[i].def[0] ? opts[i].def : "none");
    }
}

/* o's value in c as the config file writes it. */
static void example_value(FILE *out, const struct conf *c, const struct opt *o)
{
    const char *base = (const char *)c;
    json_t *v;
    if (o->type == OPT_INT) {
        v = json_integer(*(const int *)(base + o->off));
    } else if (o->type == OPT_BOOL) {
        v = json_boolean(*(const int *)(base + o->off));
    } else if (o->type == OPT_NUM) {
        v = json_real(*(const double *)(base + o->off));
    } else if (o->type == OPT_STR) {
        v = json_string(*(char *const *)(base + o->off));
    } else {
        v = json_array();
        char *const *list = *(char *const *const *)(base + o->off);
        for (int i = 0; i < *LIST_COUNT(c, o); i++)
            json_array_append_new(v, json_string(list[i]));
    }
    char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    fputs(t, out);
    free(t);
    json_decref(v);
}

/* Every option of role, at its value in c, under its help. */
static void example(FILE *out, const char *prog, enum conf_role role, const struct conf *c)
{
    fprintf(out, "# %s configuration (--config FILE): JSON, with whole-line # comments.\n"
                 "# Every option of a %s; a value on the command line (--name value)\n"
                 "# wins over this file's.\n{\n",
            prog, role == CONF_PROXY ? "proxy" : "target");
    int first = 1;
    for (size_t i = 0; i < ARRAY_LEN(opts); i++) {
        if (!(opts[i].roles & role_bit(role)) || !opts[i].def)
            continue;
        fprintf(out, "%s  # %s", first ? "" : ",\n", opts[i].help);
        if (opts[i].def[0])
            fprintf(out, " (default: %s)", opts[i].def);
        fprintf(out, "\n  \"%s\": ", opts[i].name);
        example_value(out, c, &opts[i]);
        first = 0;
    }
    fputs("\n}\n", out);
}

/* argv without the argument flag (an option of conf_info's, no value). */
static char **without(int argc, char **argv, const char *flag, int *n)
{
    char **rest = xcalloc((size_t)argc + 1, sizeof(*rest));
    *n = 0;
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], flag))
            rest[(*n)++] = argv[i];
    return rest;
}

int conf_info(int argc, char **argv, const char *prog, enum conf_role role)
{
    int ex = 0, check = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            conf_usage(stdout, prog, role);
            return 0;
        }
        if (!strcmp(argv[i], "--version")) {
            printf("%s %s\n", prog, shoal_version());
            return 0;
        }
        ex = ex || !strcmp(argv[i], "--example-config");
        check = check || !strcmp(argv[i], "--check-config");
    }
    if (!ex && !check)
        return -1;
    int n;
    char **rest = without(argc, argv, ex ? "--example-config" : "--check-config", &n);
    struct conf c;
    char err[512];
    int rc = load(&c, n, rest, ex, err, sizeof(err));
    if (rc)
        fprintf(stderr, "%s: %s\n", prog, err);
    else if (ex)
        example(stdout, prog, role, &c);
    else
        printf("%s: the configuration is valid\n", prog);
    conf_free(&c);
    free(rest);
    return rc ? 2 : 0;
}
