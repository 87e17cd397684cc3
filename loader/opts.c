/*
 * opts: the loader's command line. Options are parsed into opt, checked
 * against each other, and completed with defaults and the AWS_* variables
 * (the credentials every mode signs with). A bad value ends the program
 * with a message naming the option (die()); sizes take B/K/KiB/KB.. G
 * suffixes, durations ms/s/m/h.
 *
 * Threads: main thread, first thing.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "loader.h"
#include "tls.h"
#include "url.h"

struct loader_opts opt;

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return -1;
    uint64_t m = 1;
    if (!strcasecmp(end, "") || !strcasecmp(end, "B"))
        m = 1;
    else if (!strcasecmp(end, "K") || !strcasecmp(end, "KiB") || !strcasecmp(end, "KB"))
        m = 1024;
    else if (!strcasecmp(end, "M") || !strcasecmp(end, "MiB") || !strcasecmp(end, "MB"))
        m = 1024 * 1024;
    else if (!strcasecmp(end, "G") || !strcasecmp(end, "GiB") || !strcasecmp(end, "GB"))
        m = 1024ull * 1024 * 1024;
    else
        return -1;
    *out = (uint64_t)(v * (double)m);
    return 0;
}

static int parse_duration(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v <= 0)
        return -1;
    if (!strcmp(end, "") || !strcmp(end, "s"))
        *out = v;
    else if (!strcmp(end, "ms"))
        *out = v / 1000;
    else if (!strcmp(end, "m"))
        *out = v * 60;
    else if (!strcmp(end, "h"))
        *out = v * 3600;
    else
        return -1;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: shoal-loader --endpoint URL --bucket NAME [options]\n\n"
            "  --mode shoal|direct|s3|http  shoal: native API via a proxy, following redirects\n"
            "                               (default); direct: straight to the owning target;\n"
            "                               s3: path-style S3 with SigV4 (AWS_* variables);\n"
            "                               http: GET/PUT <endpoint>/<bucket>/<name>\n"
            "  --provider NAME            remote bucket's provider (e.g. s3) in shoal/direct modes\n"
            "  --query Q                  append Q (a=1&b=2, URL-encoded) to every GET's URL,\n"
            "                               e.g. transform=NAME\n"
            "  --ca FILE                  https endpoint: verify it with these CAs (PEM; default:\n"
            "                               the system's)\n"
            "  --access-key K --secret-key S  sign every request (SigV4) with this key; default:\n"
            "                               AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY\n"
            "  --region R                 region in the signature (default AWS_REGION, us-east-1)\n"
            "  --workers N                concurrent requests (default 16)\n"
            "  --threads N                event-loop threads (default: CPUs)\n"
            "  --pct-put N                percent of PUTs, 0..100 (default 0); a mixed run over\n"
            "                               generated names GETs only the names it has PUT\n"
            "  --names-exist              ...unless they exist already: GETs read any of them\n"
            "  --duration T               run time: 30s, 2m... (default 30s unless a count is set)\n"
            "  --epochs N                 pass over every name N times (each pass in a new order)\n"
            "  --max-ops N                stop after N operations\n"
            "  --min-size S, --max-size S PUT sizes, e.g. 4KiB, 1MiB (default 1MiB)\n"
            "  --num-objects N            names: N generated names (default 1000)...\n"
            "  --prefix P                 ...named P00000000, P00000001, ... (default loader/)\n"
            "  --names-file F             ...or one name per line from F\n"
            "  --list-names               ...or the bucket's own listing (under --prefix if set)\n"
            "  --sequential               names in order instead of random\n"
            "  --read-off N --read-len N  GET a byte range of each object\n"
            "  --batch N                  each GET is one GetBatch (POST /v1/batch, --mode shoal)\n"
            "                               of N names: the op's and the N-1 after it (with\n"
            "                               --epochs: each pass's names in batches of N, in its\n"
            "                               order); the summary adds entries and entries_per_s\n"
            "  --verify                   check GET bodies against X-Shoal-Checksum\n"
            "  --cleanup                  DELETE every name at the end\n"
            "  --seed N                   random seed (default 1)\n"
            "  --stats-interval T         periodic line (default 10s; 0 turns it off)\n"
            "  --timeout T                per request (default 60s)\n"
            "  --json                     final summary as JSON\n"
            "  --csv F                    a line per op and second into F: ops/s, MiB/s,\n"
            "                               failures/s, p50, p99, time to first byte (from the\n"
            "                               request's start to the answer's head, redirects\n"
            "                               included)\n"
            "Summaries count successful ops (ok, with their bytes, rates and latencies)\n"
            "and the failed ones beside them, by class.\n");
}

static void set_defaults(void)
{
    opt.workers = 16;
    opt.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    opt.min_size = opt.max_size = 1 << 20;
    opt.num_objects = 1000;
    opt.prefix = NULL; /* "loader/" for generated names, "" for a listing */
    opt.seed = 1;
    opt.stats_interval = 10;
    opt.read_len = -1;
    opt.timeout_s = 60;
    opt.max_ops = -1;
}

/* getopt over argv into opt: -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv)
{
    static const struct option lo[] = {
        {"endpoint", 1, 0, 'e'}, {"bucket", 1, 0, 'b'}, {"provider", 1, 0, 'P'},
        {"mode", 1, 0, 'm'}, {"workers", 1, 0, 'w'}, {"threads", 1, 0, 't'},
        {"pct-put", 1, 0, 'p'}, {"duration", 1, 0, 'd'}, {"epochs", 1, 0, 'E'},
        {"max-ops", 1, 0, 'x'}, {"min-size", 1, 0, 's'}, {"max-size", 1, 0, 'S'},
        {"num-objects", 1, 0, 'n'}, {"prefix", 1, 0, 'f'}, {"names-file", 1, 0, 'F'},
        {"sequential", 0, 0, 'q'}, {"list-names", 0, 0, 'L'}, {"read-off", 1, 0, 'o'}, {"read-len", 1, 0, 'l'},
        {"verify", 0, 0, 'v'}, {"cleanup", 0, 0, 'c'}, {"seed", 1, 0, 'r'},
        {"stats-interval", 1, 0, 'i'}, {"timeout", 1, 0, 'T'}, {"json", 0, 0, 'j'},
        {"access-key", 1, 0, 'A'}, {"secret-key", 1, 0, 'K'}, {"region", 1, 0, 'R'},
        {"ca", 1, 0, 'C'}, {"csv", 1, 0, 'V'}, {"names-exist", 0, 0, 'X'},
        {"query", 1, 0, 'Q'}, {"batch", 1, 0, 'B'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int ch;
    uint64_t u;
    double d;
    while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (ch) {
        case 'e': opt.endpoint = optarg; break;
        case 'C': opt.ca_file = optarg; break;
        case 'A': opt.access_key = optarg; break;
        case 'K': opt.secret_key = optarg; break;
        case 'R': opt.region = optarg; break;
        case 'b': opt.bucket = optarg; break;
        case 'P': opt.provider = optarg; break;
        case 'm':
            if (!strcmp(optarg, "shoal")) opt.mode = M_SHOAL;
            else if (!strcmp(optarg, "direct")) opt.mode = M_DIRECT;
            else if (!strcmp(optarg, "s3")) opt.mode = M_S3;
            else if (!strcmp(optarg, "http")) opt.mode = M_HTTP;
            else die("--mode must be shoal, direct, s3 or http, not '%s'", optarg);
            break;
        case 'w': if (parse_u64(optarg, strlen(optarg), &u) || u < 1 || u > 100000) die("--workers must be 1..100000"); opt.workers = (int)u; break;
        case 't': if (parse_u64(optarg, strlen(optarg), &u) || u < 1 || u > 256) die("--threads must be 1..256"); opt.threads = (int)u; break;
        case 'p': if (parse_u64(optarg, strlen(optarg), &u) || u > 100) die("--pct-put must be 0..100"); opt.pct_put = (int)u; break;
        case 'd': if (parse_duration(optarg, &opt.duration)) die("--duration: '%s' is not a duration like 30s or 2m", optarg); break;
        case 'E': if (parse_u64(optarg, strlen(optarg), &u) || u < 1 || u > 1000) die("--epochs must be 1..1000"); opt.epochs = (int)u; break;
        case 'x': if (parse_u64(optarg, strlen(optarg), &u) || u < 1) die("--max-ops must be a positive number"); opt.max_ops = (int64_t)u; break;
        case 's': if (parse_size(optarg, &opt.min_size)) die("--min-size: '%s' is not a size like 4KiB", optarg); break;
        case 'S': if (parse_size(optarg, &opt.max_size)) die("--max-size: '%s' is not a size like 1MiB", optarg); break;
        case 'n': if (parse_u64(optarg, strlen(optarg), &u) || u < 1 || u > 100000000) die("--num-objects must be 1..100000000"); opt.num_objects = (int64_t)u; break;
        case 'f': opt.prefix = optarg; break;
        case 'F': opt.names_file = optarg; break;
        case 'q': opt.sequential = 1; break;
        case 'L': opt.list_names = 1; break;
        case 'o': if (parse_size(optarg, &u)) die("--read-off: bad size"); opt.read_off = (int64_t)u; break;
        case 'l': if (parse_size(optarg, &u) || u == 0) die("--read-len: bad size"); opt.read_len = (int64_t)u; break;
        case 'v': opt.verify = 1; break;
        case 'c': opt.cleanup = 1; break;
        case 'r': if (parse_u64(optarg, strlen(optarg), &opt.seed)) die("--seed must be a number"); break;
        case 'i': if (!strcmp(optarg, "0")) opt.stats_interval = 0; else if (parse_duration(optarg, &d)) die("--stats-interval: bad duration"); else opt.stats_interval = d; break;
        case 'T': if (parse_duration(optarg, &d)) die("--timeout: bad duration"); opt.timeout_s = d < 1 ? 1 : (int)d; break;
        case 'j': opt.json = 1; break;
        case 'V':
            if (!(opt.csv = fopen(optarg, "w")))
                die("--csv: cannot write %s: %s", optarg, strerror(errno));
            break;
        case 'X': opt.names_exist = 1; break;
        case 'Q': opt.query = optarg; break;
        case 'B': if (parse_u64(optarg, strlen(optarg), &u) || u < 1 || u > 100000) die("--batch must be 1..100000"); opt.batch = (int)u; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    return -1;
}

/* Options that depend on each other, and the defaults that depend on others. */
static void check_opts(int argc, char **argv)
{
    if (optind < argc)
        die("unexpected argument '%s' (see --help)", argv[optind]);
    if (!opt.endpoint || !opt.bucket)
        die("--endpoint and --bucket are required (see --help)");
    if (strncmp(opt.endpoint, "http://", 7) && !url_is_https(opt.endpoint))
        die("--endpoint must be an http:// or https:// URL");
    size_t el = strlen(opt.endpoint);
    while (el > 8 && opt.endpoint[el - 1] == '/')
        opt.endpoint[--el] = '\0';
    if (url_is_https(opt.endpoint) || opt.ca_file) {   /* redirects may lead to https too */
        char err[512];
        SSL_CTX *ctx = tls_client_ctx(opt.ca_file ? opt.ca_file : "", err, sizeof(err));
        if (!ctx)
            die("--ca: %s", err);
        tls_set_client(ctx);
    }
    if (opt.min_size > opt.max_size)
        die("--min-size is larger than --max-size");
    if (opt.max_size > (1ull << 32))
        die("--max-size may be at most 4GiB");
    if (opt.pct_put > 0 && opt.read_len > 0)
        die("--read-len applies to GETs; use it with --pct-put 0");
    if (opt.batch && (opt.mode != M_SHOAL || opt.pct_put > 0 || opt.read_len > 0 ||
                      opt.verify || opt.query || opt.cleanup))
        die("--batch reads whole objects through a proxy: use it with --mode shoal, "
            "GETs only, and without --read-len, --verify, --query or --cleanup");
    if (opt.threads > opt.workers)
        opt.threads = opt.workers;
    if (opt.list_names && (opt.mode == M_S3 || opt.mode == M_HTTP))
        die("--list-names reads a Shoal bucket's listing: use it with --mode shoal or direct");
    if (!opt.prefix)
        opt.prefix = opt.list_names ? "" : "loader/";
    if (opt.duration == 0 && opt.epochs == 0 && opt.max_ops < 0)
        opt.duration = 30;
}

/* Credentials not given as options come from the environment. */
static void credentials(void)
{
    if (!opt.access_key && getenv("AWS_ACCESS_KEY_ID") && getenv("AWS_ACCESS_KEY_ID")[0])
        opt.access_key = getenv("AWS_ACCESS_KEY_ID");
    if (!opt.secret_key)
        opt.secret_key = getenv("AWS_SECRET_ACCESS_KEY");
    if (opt.access_key && (!opt.secret_key || !opt.secret_key[0]))
        die("an access key needs its secret: --secret-key or AWS_SECRET_ACCESS_KEY");
    if (!opt.region)
        opt.region = getenv("AWS_REGION") && getenv("AWS_REGION")[0] ? getenv("AWS_REGION")
                                                                      : "us-east-1";
}

int opts_parse(int argc, char **argv)
{
    set_defaults();
    int rc = parse_args(argc, argv);
    if (rc >= 0)
        return rc;
    check_opts(argc, argv);
    credentials();
    return -1;
}
