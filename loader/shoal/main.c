/*
 * shoal: the command-line client for everyday administration of a Shoal
 * cluster (buckets, objects, batch jobs, the cluster map), over the
 * native API of a proxy.
 *
 * This file is the entry: the table of commands (group, name, function,
 * positional arguments, options, usage, help), the help texts, and the
 * dispatch. The rest: args.c (options, environment), conn.c (requests:
 * signing, redirects, streamed bodies), out.c (errors, exit statuses,
 * JSON), progress.c (the progress line), and one file per family of
 * commands: cluster.c, bucket.c, object.c, batch.c, job.c.
 *
 * Thread: the main thread only; requests run on an event loop of the
 * client's own, one at a time (conn.c).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cmds.h"
#include "conn.h"
#include "out.h"

struct cmd {
    const char *group;           /* "cluster", "node", "bucket", "job", or NULL (a top-level word) */
    const char *name;
    int (*run)(const struct args *a);
    int min_pos, max_pos;        /* positional arguments; max -1: no bound */
    const char *opts;            /* options besides the common ones */
    const char *usage;           /* after "shoal " */
    const char *about;
};

#define SEL "provider prefix template names"

static const struct cmd cmds[] = {
    {"cluster", "show", cmd_cluster_show, 0, 0, "", "cluster show",
     "The cluster map (GET /v1/cluster): its version, the primary proxy, and every node\n"
     "with its health, asked of the node itself (GET /v1/health)."},
    {"cluster", "space", cmd_cluster_space, 0, 0, "", "cluster space",
     "How full every target's mountpaths are (GET /v1/cluster/space): used and total\n"
     "bytes, the share used, and ok, high (above space_high_wm) or oos (at space_oos)."},
    {"node", "maintenance", cmd_node_maintenance, 1, 1, "off", "node maintenance ID [--off]",
     "Put a target into maintenance: it owns no names, its objects move to their new\n"
     "owners and stay readable meanwhile. --off: it owns names again."},
    {"node", "decommission", cmd_node_decommission, 1, 1, "", "node decommission ID",
     "Decommission a target: its objects move away, then it leaves the cluster and\n"
     "shuts down (a target that is down leaves at once: what only it held is lost)."},
    {"bucket", "ls", cmd_bucket_ls, 0, 0, "provider", "bucket ls", "List the buckets."},
    {"bucket", "create", cmd_bucket_create, 1, 1, "provider backend props",
     "bucket create BUCKET [--backend s3://X] [--props JSON]",
     "Create a bucket, with properties: --props '{\"validate_warm_get\": true}', and\n"
     "--backend for the bucket it reads through (s3://BUCKET or an http(s):// origin)."},
    {"bucket", "rm", cmd_bucket_rm, 1, 1, "provider", "bucket rm BUCKET",
     "Destroy the bucket and Shoal's copy of its objects (a backend keeps its own)."},
    {"bucket", "props", cmd_bucket_props, 1, 1, "provider", "bucket props BUCKET",
     "The bucket and its properties."},
    {"bucket", "set", cmd_bucket_set, 2, -1, "provider", "bucket set BUCKET key=value...",
     "Change properties (a JSON merge; unknown properties are refused). A value that\n"
     "parses as JSON is JSON, anything else a string:\n"
     "  shoal bucket set ckpt validate_warm_get=true labels='{\"team\": \"vision\"}'"},
    {"bucket", "summary", cmd_bucket_summary, 1, 1, "provider prefix template",
     "bucket summary BUCKET [--prefix P | --template T]",
     "How much of the bucket (or of a prefix, or of the names a template makes) Shoal\n"
     "holds: objects and bytes present of the total, and the percentages."},
    {NULL, "ls", cmd_ls, 0, 1, "provider limit cached",
     "ls [BUCKET[/PREFIX]] [--limit N] [--cached]",
     "List the objects under the prefix, page after page: size, cached, name. With no\n"
     "bucket, the buckets."},
    {NULL, "get", cmd_get, 1, 2, "provider", "get BUCKET/NAME [FILE|-]",
     "Read an object into FILE (default: the name's last segment here; a directory\n"
     "takes it under that name; - is stdout). The body streams to the file, is checked\n"
     "against its length and checksum, and only then takes the file's name. A FILE\n"
     "that is a device or a FIFO (/dev/null) is written into as it is, never replaced."},
    {NULL, "put", cmd_put, 2, 2, "provider", "put FILE|- BUCKET/NAME",
     "Write an object from FILE (- is stdin). BUCKET/ or BUCKET/DIR/ puts it under\n"
     "the file's name. The body streams; it is never read whole into memory."},
    {NULL, "rm", cmd_rm, 1, 1, "provider evict", "rm BUCKET/NAME [--evict]",
     "Delete an object (from the backend too, for a backed bucket), or with --evict\n"
     "drop only Shoal's copy."},
    {NULL, "batch", cmd_batch, 0, 1,
     "out extract output continue-on-error name-only manifest provider",
     "batch [-o FILE | -x DIR] [--output .tar|.tar.gz|.zip] [--continue-on-error] "
     "[--name-only] [--manifest] [LIST]",
     "Read many objects, or members of shards, as one archive (POST /v1/batch). LIST\n"
     "(a file; - or none: stdin) has one entry a line: BUCKET/NAME, optionally a TAB\n"
     "and the ARCHPATH of a member inside that shard, or a JSON object as the API\n"
     "takes it:\n"
     "  {\"bucket\": \"b\", \"name\": \"n\", \"archpath\": \"a\", \"provider\": \"s3\",\n"
     "   \"start\": 0, \"length\": 4096}\n"
     "Blank lines and lines starting with # are skipped; a malformed line is a usage\n"
     "error naming it, and nothing is sent. --provider is the provider of the entries\n"
     "that name none. Members come in the list's order, named BUCKET/NAME[/ARCHPATH]\n"
     "(NAME[/ARCHPATH] with --name-only); with --continue-on-error a missing entry is an\n"
     "empty member __404__/ + that name. The archive goes to stdout (never a terminal),\n"
     "or to FILE (-o), written as FILE.partial and renamed once all of it came; or -x\n"
     "extracts it into DIR once all of it came, refusing names with '..', absolute\n"
     "names and writes through symlinks. The format is --output's, else -o FILE's\n"
     "extension (.tar, .tar.gz, .tgz, .zip), else .tar. An archive the cluster cuts\n"
     "short (an entry failed after it began) exits 1 and keeps nothing. A summary\n"
     "(entries, bytes, seconds) goes to stderr unless --quiet."},
    {"job", "start", cmd_job_start, 2, -1,
     SEL " latest key prepend dry-run wait timeout output-template shard-size shuffle seed "
         "transform args ext concurrency",
     "job start prefetch|evict|copy|download|shard|reshard|transform ARGS [--wait]",
     "Start a batch job on every target:\n"
     "  shoal job start prefetch|evict BUCKET [--prefix P | --template T | --names a,b,c]\n"
     "                 [--latest] [--key K]\n"
     "  shoal job start copy SRC DST [--prepend P] [--dry-run] [selection flags]\n"
     "  shoal job start download BUCKET (URL... | --template URLTEMPLATE) [--names n1,n2]\n"
     "  shoal job start shard|reshard SRC DST --output-template T [--shard-size N]\n"
     "                 [--shuffle [--seed S]] [selection flags]\n"
     "  shoal job start transform SRC DST --transform NAME [--args A=1&B=2]\n"
     "                 [--ext .jpg=.png,...] [--prepend P] [--dry-run] [selection flags]\n"
     "Every walking kind takes --concurrency N (objects at once per target).\n"
     "No selection means the whole bucket. With --wait it waits as job wait does\n"
     "(and --timeout S bounds the wait)."},
    {"job", "ls", cmd_job_ls, 0, 0, "kind bucket state",
     "job ls [--kind K] [--bucket B] [--state S]",
     "The jobs the targets know: running, and the last ones ended."},
    {"job", "show", cmd_job_show, 1, 1, "", "job show ID",
     "A job's state and figures, its failed names and each target's share."},
    {"job", "wait", cmd_job_wait, 1, 1, "timeout", "job wait ID [--timeout S]",
     "Wait for the job to end, with a progress line on stderr; then show it. Exit 0\n"
     "when it finished, 1 when it failed or was aborted, 5 when --timeout passed."},
    {"job", "stop", cmd_job_stop, 1, 1, "", "job stop ID",
     "Abort the job on every target (what is in flight finishes)."},
};

#define N_CMDS (sizeof(cmds) / sizeof(cmds[0]))

static void top_help(FILE *f)
{
    fprintf(f, "usage: shoal COMMAND [ARGS] [OPTIONS]      (shoal COMMAND --help for more)\n\n"
               "Commands:\n");
    for (size_t i = 0; i < N_CMDS; i++)
        fprintf(f, "  shoal %s\n", cmds[i].usage);
    fprintf(f, "\nCommon options (any command, anywhere on the line):\n");
    args_help_common(f);
    fprintf(f,
            "\nEnvironment: SHOAL_ENDPOINT; SHOAL_ACCESS_KEY and SHOAL_SECRET_KEY (else\n"
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) sign every request with SigV4;\n"
            "SHOAL_TOKEN sends a bearer token instead; SHOAL_REGION. Options override them.\n"
            "\nExit status:\n"
            "  0  success\n"
            "  1  the operation failed: the cluster refused it (4xx/5xx, 501 for what it does\n"
            "     not implement yet), or a job ended failed or aborted\n"
            "  2  usage error: an unknown command or option, a bad argument\n"
            "  3  the endpoint (or a node it redirected to) cannot be reached\n"
            "  4  the cluster refused the credentials (401/403)\n"
            "  5  job wait --timeout passed while the job still runs\n");
}

static void group_help(FILE *f, const char *group)
{
    fprintf(f, "usage:\n");
    for (size_t i = 0; i < N_CMDS; i++)
        if (cmds[i].group && !strcmp(cmds[i].group, group))
            fprintf(f, "  shoal %s\n", cmds[i].usage);
    fprintf(f, "\nshoal %s SUBCOMMAND --help for more; shoal --help for the common options.\n",
            group);
}

static void cmd_help(FILE *f, const struct cmd *c)
{
    fprintf(f, "usage: shoal %s\n\n%s\n", c->usage, c->about);
    if (c->opts[0]) {
        fprintf(f, "\nOptions:\n");
        args_help(f, c->opts);
    }
    fprintf(f, "\nCommon options:\n");
    args_help_common(f);
}

static const struct cmd *find(const char *group, const char *name)
{
    for (size_t i = 0; i < N_CMDS; i++)
        if (((!group && !cmds[i].group) || (group && cmds[i].group &&
                                           !strcmp(cmds[i].group, group))) &&
            !strcmp(cmds[i].name, name))
            return &cmds[i];
    return NULL;
}

static int is_group(const char *w)
{
    return !strcmp(w, "cluster") || !strcmp(w, "node") || !strcmp(w, "bucket") ||
           !strcmp(w, "job");
}

/*
 * Take the command words out of argv: the first word not an option (nor
 * an option's value), then a second one after a group. The rest, options
 * before the words included, goes to rest. Returns the command, or NULL
 * with *rc the exit status (help shown, or a usage error told).
 */
static const struct cmd *pick(int argc, char **argv, char **rest, int *nrest, int *rc)
{
    const char *words[2] = {NULL, NULL};
    int nw = 0, help = 0;
    *nrest = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int want = nw == 0 || (nw == 1 && is_group(words[0]));
        if (nw == 0 && !strcmp(s, "help")) {
            help = 1;
        } else if (want && s[0] != '-') {
            words[nw++] = s;
        } else {
            help |= !strcmp(s, "--help") || !strcmp(s, "-h");
            rest[(*nrest)++] = argv[i];
            if (args_takes_value(s) && i + 1 < argc)
                rest[(*nrest)++] = argv[++i];
        }
    }
    *rc = help ? RC_OK : RC_USAGE;
    FILE *f = help ? stdout : stderr;
    if (nw == 0 && *nrest && !help) {
        *rc = args_usage_error("no command given (see shoal --help)");
        return NULL;
    }
    if (nw == 0) {
        top_help(f);
        return NULL;
    }
    if (is_group(words[0]) && nw == 1) {
        group_help(f, words[0]);
        return NULL;
    }
    const struct cmd *c = find(is_group(words[0]) ? words[0] : NULL, words[nw - 1]);
    if (!c) {
        *rc = args_usage_error("unknown command '%s%s%s' (see shoal --help)", words[0],
                               nw > 1 ? " " : "", nw > 1 ? words[1] : "");
        return NULL;
    }
    return c;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);    /* a closed stdout or socket is an error, not a death */
    char *rest[argc > 0 ? argc : 1];
    int nrest, rc;
    const struct cmd *c = pick(argc, argv, rest, &nrest, &rc);
    if (!c)
        return rc;
    char label[64];
    snprintf(label, sizeof(label), "%s%s%s", c->group ? c->group : "", c->group ? " " : "",
             c->name);
    struct args a;
    if ((rc = args_parse(&a, nrest, rest, c->opts, label)))
        return rc;
    if (a.help) {
        cmd_help(stdout, c);
        return RC_OK;
    }
    if (a.npos < c->min_pos || (c->max_pos >= 0 && a.npos > c->max_pos))
        return args_usage_error("usage: shoal %s (see shoal %s --help)", c->usage, label);
    if ((rc = args_env(&a)))
        return rc;
    out_json_mode = a.json;
    conn_init(&a);
    rc = c->run(&a);
    conn_deinit();
    return rc;
}
