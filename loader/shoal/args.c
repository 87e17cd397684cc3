/*
 * args: the option table and its parser, and the environment's defaults
 * for the endpoint and credentials (see args.h).
 */
#include "args.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tls.h"
#include "url.h"

#define DEFAULT_ENDPOINT "http://127.0.0.1:8080"   /* deploy/local/cluster.sh's first proxy */
#define DEFAULT_REGION "us-east-1"
#define ENDPOINT_MAX 1024

struct optdef {
    const char *name;            /* without "--" */
    int has_arg;                 /* 1: a string value, 0: a flag (int) */
    size_t off;                  /* where in struct args */
    const char *arg;             /* the value's name in the help ("" for a flag) */
    const char *help;
};

#define S(f) 1, offsetof(struct args, f)
#define F(f) 0, offsetof(struct args, f)

/* The common options first (COMMON_N of them): every command takes them. */
static const struct optdef opts[] = {
    {"endpoint", S(endpoint), "URL", "the proxy ($SHOAL_ENDPOINT, else " DEFAULT_ENDPOINT ")"},
    {"access-key", S(access_key), "K",
     "sign requests (SigV4) with this key ($SHOAL_ACCESS_KEY, $AWS_ACCESS_KEY_ID)"},
    {"secret-key", S(secret_key), "S", "its secret ($SHOAL_SECRET_KEY, $AWS_SECRET_ACCESS_KEY)"},
    {"token", S(token), "T", "send a bearer token instead ($SHOAL_TOKEN)"},
    {"region", S(region), "R", "the region in signatures ($SHOAL_REGION, else " DEFAULT_REGION ")"},
    {"ca", S(ca), "FILE", "an https endpoint's CAs, PEM ($SHOAL_CA_FILE, else the system's)"},
    {"json", F(json), "", "machine-readable JSON on stdout, nothing else there"},
    {"quiet", F(quiet), "", "no progress line on stderr"},
    {"help", F(help), "", "this help"},
    /* per command */
    {"provider", S(provider), "P",
     "the bucket's provider (s3: a bucket of the S3 backend, by its own name)"},
    {"backend", S(backend), "URL", "the bucket's backend: s3://BUCKET or an http(s):// origin"},
    {"props", S(props), "JSON", "more properties, a JSON object"},
    {"prefix", S(prefix), "P", "the names starting with P"},
    {"template", S(tmpl), "T", "the names a template makes, e.g. shard-{0000..0999}.tar"},
    {"names", S(names), "a,b,c", "these names"},
    {"key", S(key), "K", "idempotency key: starting again with K answers the same job"},
    {"latest", F(latest), "", "fetch again what changed in the backend"},
    {"prepend", S(prepend), "P", "put P before every copied name"},
    {"dry-run", F(dry_run), "", "say what would be copied, copy nothing"},
    {"wait", F(wait), "", "then wait for the job to end, as job wait does"},
    {"kind", S(kind), "K", "only jobs of this kind"},
    {"bucket", S(bucket), "B", "only jobs on this bucket"},
    {"state", S(state), "S", "only jobs in this state (running, finished, aborted...)"},
    {"timeout", S(timeout), "S", "stop waiting after S seconds (exit 5); the job goes on"},
    {"limit", S(limit), "N", "names per listing page (1..10000; default the cluster's)"},
    {"cached", F(cached), "", "only what Shoal holds"},
    {"evict", F(evict), "", "drop Shoal's copy only (a backed bucket keeps the object)"},
    {"off", F(off), "", "end it: the target owns names again"},
    {"out", S(out), "FILE", "write the archive to FILE (- or none: stdout)"},
    {"extract", S(extract), "DIR", "extract the archive into DIR instead"},
    {"output", S(format), "F", "the archive's format: .tar (default), .tar.gz or .zip"},
    {"continue-on-error", F(continue_on_error), "",
     "a missing entry becomes an empty __404__/NAME member"},
    {"name-only", F(name_only), "", "members named NAME, not BUCKET/NAME"},
    {"manifest", F(manifest), "", "end the archive with a __manifest__.json member"},
    {"output-template", S(otmpl), "T", "the shards' names, e.g. train-{000000..999999}.tar"},
    {"shard-size", S(shard_size), "N", "bytes a shard holds, about (suffix K, M or G: KiB...)"},
    {"shuffle", F(shuffle), "", "lay the samples out in a shuffled order"},
    {"seed", S(seed), "N", "the shuffle's seed (the same seed, the same order)"},
    {"transform", S(transform), "NAME", "the transform each object goes through"},
    {"args", S(xargs), "A", "the transform's arguments, URL-encoded (a=1&b=2)"},
    {"ext", S(ext), ".a=.b,...", "rename: a name's last extension .a becomes .b"},
    {"concurrency", S(concurrency), "N", "objects at once per target (1..256)"},
};

/* The one-letter forms: "-o FILE" is "--out FILE" (the value is always
 * the next word). */
static const struct {
    char c;
    const char *name;
} shorts[] = {
    {'o', "out"},
    {'x', "extract"},
};

#define N_SHORTS (sizeof(shorts) / sizeof(shorts[0]))

#define COMMON_N 9

int args_listed(const char *name, const char *allowed)
{
    size_t n = strlen(name);
    for (const char *p = allowed; p && (p = strstr(p, name)); p += n)
        if ((p == allowed || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    return 0;
}

int args_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "shoal: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return RC_USAGE;
}

/* The long name of a one-letter option word ("-o"), or NULL. */
static const char *short_name(const char *word)
{
    if (word[0] != '-' || !word[1] || word[2])
        return NULL;
    for (size_t k = 0; k < N_SHORTS; k++)
        if (shorts[k].c == word[1])
            return shorts[k].name;
    return NULL;
}

/* The one-letter form of an option, or 0. */
static char short_of(const char *name)
{
    for (size_t k = 0; k < N_SHORTS; k++)
        if (!strcmp(shorts[k].name, name))
            return shorts[k].c;
    return 0;
}

/* One option at argv[*i], arg its "name[=value]" (after "--", or the long
 * name of a one-letter form); 0 or RC_USAGE. */
static int take_option(struct args *a, int argc, char **argv, int *i, const char *arg,
                       const char *allowed, const char *cmd)
{
    const char *eq = strchr(arg, '=');
    size_t n = eq ? (size_t)(eq - arg) : strlen(arg);
    for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++) {
        const struct optdef *o = &opts[k];
        if (strlen(o->name) != n || strncmp(o->name, arg, n))
            continue;
        if (k >= COMMON_N && !args_listed(o->name, allowed))
            break;
        char *field = (char *)a + o->off;
        if (!o->has_arg) {
            if (eq)
                return args_usage_error("--%s takes no value", o->name);
            *(int *)(void *)field = 1;
            return 0;
        }
        const char *v = eq ? eq + 1 : NULL;
        if (!v && *i + 1 < argc)
            v = argv[++*i];
        if (!v)
            return args_usage_error("--%s needs a value (see shoal %s --help)", o->name, cmd);
        *(const char **)(void *)field = v;
        return 0;
    }
    return args_usage_error("unknown option --%.*s for '%s' (see shoal %s --help)", (int)n, arg,
                            cmd, cmd);
}

int args_parse(struct args *a, int argc, char **argv, const char *allowed, const char *cmd)
{
    memset(a, 0, sizeof(*a));
    int rest = 0;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        int rc;
        if (!rest && !strcmp(s, "--")) {
            rest = 1;
        } else if (!rest && !strcmp(s, "-h")) {
            a->help = 1;
        } else if (!rest && !strncmp(s, "--", 2)) {
            if ((rc = take_option(a, argc, argv, &i, s + 2, allowed, cmd)))
                return rc;
        } else if (!rest && short_name(s) && args_listed(short_name(s), allowed)) {
            if ((rc = take_option(a, argc, argv, &i, short_name(s), allowed, cmd)))
                return rc;
        } else if (!rest && s[0] == '-' && s[1]) {
            return args_usage_error("unknown option %s for '%s' (see shoal %s --help)", s, cmd,
                                    cmd);
        } else if (a->npos == ARGS_POS_MAX) {
            return args_usage_error("too many arguments (at most %d)", ARGS_POS_MAX);
        } else {
            a->pos[a->npos++] = s;
        }
    }
    return 0;
}

int args_takes_value(const char *word)
{
    const char *name = short_name(word);
    if (!name && (strncmp(word, "--", 2) || strchr(word, '=')))
        return 0;
    if (!name)
        name = word + 2;
    for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
        if (!strcmp(opts[k].name, name))
            return opts[k].has_arg;
    return 0;
}

static void help_line(FILE *f, const struct optdef *o)
{
    char flag[64], sh[8] = "";
    if (short_of(o->name))
        snprintf(sh, sizeof(sh), "-%c, ", short_of(o->name));
    snprintf(flag, sizeof(flag), "%s--%s%s%s", sh, o->name, o->arg[0] ? " " : "", o->arg);
    fprintf(f, "  %-20s %s\n", flag, o->help);
}

void args_help(FILE *f, const char *allowed)
{
    for (size_t k = COMMON_N; k < sizeof(opts) / sizeof(opts[0]); k++)
        if (args_listed(opts[k].name, allowed))
            help_line(f, &opts[k]);
}

void args_help_common(FILE *f)
{
    for (size_t k = 0; k < COMMON_N; k++)
        help_line(f, &opts[k]);
}

/* The flag's value, else the first set and non-empty variable. */
static const char *pick(const char *flag, const char *var1, const char *var2)
{
    if (flag)
        return flag;
    const char *v = var1 ? getenv(var1) : NULL;
    if (v && v[0])
        return v;
    v = var2 ? getenv(var2) : NULL;
    return v && v[0] ? v : NULL;
}

int args_env(struct args *a)
{
    static char endpoint[ENDPOINT_MAX];
    const char *ep = pick(a->endpoint, "SHOAL_ENDPOINT", NULL);
    snprintf(endpoint, sizeof(endpoint), "%s", ep ? ep : DEFAULT_ENDPOINT);
    size_t n = strlen(endpoint);
    while (n > 8 && endpoint[n - 1] == '/')
        endpoint[--n] = '\0';
    size_t skip = url_is_https(endpoint) ? 8 : 7;
    if ((skip == 7 && strncmp(endpoint, "http://", 7)) || n == skip ||
        strchr(endpoint + skip, '/'))
        return args_usage_error("the endpoint must look like http://HOST:PORT or "
                                "https://HOST:PORT, not '%s'", endpoint);
    a->endpoint = endpoint;
    a->ca = pick(a->ca, "SHOAL_CA_FILE", NULL);
    if (skip == 8 || a->ca) {
        char err[512];
        SSL_CTX *ctx = tls_client_ctx(a->ca ? a->ca : "", err, sizeof(err));
        if (!ctx)
            return args_usage_error("%s", err);
        tls_set_client(ctx);
    }
    a->region = pick(a->region, "SHOAL_REGION", NULL);
    if (!a->region)
        a->region = DEFAULT_REGION;
    a->token = pick(a->token, a->access_key ? NULL : "SHOAL_TOKEN", NULL);
    if (a->token)
        return 0;                /* a token, given or from the environment, is enough */
    a->access_key = pick(a->access_key, "SHOAL_ACCESS_KEY", "AWS_ACCESS_KEY_ID");
    a->secret_key = pick(a->secret_key, "SHOAL_SECRET_KEY", "AWS_SECRET_ACCESS_KEY");
    if (a->access_key && !a->secret_key)
        return args_usage_error("the access key %s needs its secret: --secret-key or "
                                "$SHOAL_SECRET_KEY", a->access_key);
    if (!a->access_key && a->secret_key)
        return args_usage_error("a secret key needs its access key: --access-key or "
                                "$SHOAL_ACCESS_KEY");
    return 0;
}
