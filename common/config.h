/*
 * config: node configuration. Values come from, in order of precedence,
 * command-line overrides (--name value or --name=value), a JSON config file
 * (--config PATH; lines whose first non-blank character is # are
 * comments), then the defaults in the table in config.c. Every value
 * is validated against its table entry; errors name the option and say what
 * was expected.
 */
#ifndef SHOAL_CONFIG_H
#define SHOAL_CONFIG_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#define CONF_SECRET_MIN 16 /* bytes of cluster secret */

struct conf {
    char *id;              /* node id; generated and persisted when empty */
    char *host;            /* listen address */
    int port;              /* listen port */
    char *public_url;      /* URL clients use; default http://host:port */
    char *primary_url;     /* proxies to join through, comma-separated; empty on the founder */
    int raft_port;         /* proxies' consensus port; 0: port + 1000 */
    char *state_dir;       /* node id, last cluster map, bucket metadata */
    char **mountpaths;     /* targets: one directory per drive */
    int n_mountpaths;
    int workers;           /* HTTP worker threads (event loops) */
    int io_threads;        /* blocking-call pool size */
    int inline_max;        /* bytes: smaller objects live in their record */
    int job_workers;       /* objects in flight per batch job, per target */
    int job_max;           /* batch jobs running at once, per target */
    int job_ttl_s;         /* an ended job is kept this long */
    int space_low_wm;      /* percent of a mountpath: eviction's goal */
    int space_high_wm;     /* percent: eviction starts above it */
    int space_oos;         /* percent: PUTs of Shoal-only buckets get 507 */
    int space_sample_ms;   /* statvfs period */
    int space_census_s;    /* the census gauges' period */
    int lru_dont_evict_s;  /* read this recently: not evicted */
    int atime_flush_s;     /* last reads to RocksDB this often */
    int wbq_workers;       /* write-back uploads at once, per target */
    int wbq_quiet_ms;      /* uploads wait for this long without PUTs */
    int wbq_defer_max_s;   /* but not longer than this */
    int wbq_multipart_mb;  /* larger write-back uploads go in parts */
    int wbq_part_mb;       /* of this size */
    int rebalance;         /* a map change moves objects to their owners */
    int rebalance_workers; /* objects in flight per target during a rebalance */
    int rebalance_busy_mbps; /* per target, while clients are served (0: no limit) */
    int tombstone_ttl_s;   /* how long a deleted name's version is kept */
    int scrub_mbps;        /* how fast a scrub reads, per target */
    int scrub_interval_h;  /* a scrub of everything this often (0: only when asked) */
    double mpu_expire_h;   /* unfinished multipart uploads dropped after (0: never) */
    int shutdown_grace_s;  /* SIGTERM: requests under way get this long to finish */
    int drain;             /* SIGTERM: write back first */
    int drain_timeout_s;
    char *log_level;       /* error|warn|info|debug */
    int keepalive_ms;      /* node -> primary heartbeat period */
    int node_timeout_ms;   /* primary drops a node silent this long */
    int max_header_bytes;  /* request header block limit (431 past it) */
    int max_headers;       /* request header count limit (431 past it) */
    int idle_timeout_s;    /* keep-alive connection idle limit */
    char *cluster_secret_file; /* file holding the cluster secret (mode 0600) */
    char *cluster_secret;  /* its contents, read by conf_load (not an option:
                            * a secret never goes on a command line) */
    int fsync;             /* fsync data and metadata before acknowledging */
    int redirect_ttl_s;    /* lifetime of a signed redirect */
    /* defaults for S3 backends (buckets may override endpoint, region,
     * addressing); empty values fall back to the AWS_* variables */
    char *s3_endpoint;
    char *s3_region;
    char *s3_addressing;   /* path | virtual | "" (path with an endpoint) */
    char *s3_access_key;
    char *s3_secret_key;
    char *s3_session_token;
    char *s3_profile;
    int backend_timeout_s; /* one backend request, start to end */
    int transform_timeout_s; /* one object through a transform, start to end */
    int backend_retries;   /* attempts after the first on 5xx, 503 SlowDown, connection errors */
    /* client credentials for both APIs, every node */
    char **auth_keys;      /* "ACCESS_KEY:SECRET" each; none: anonymous access;
                            * conf_load adds auth_keys_file's to them */
    int n_auth_keys;
    char *auth_keys_file;  /* more of them, from a file only the daemon's user reads */
    char *backends_file;   /* proxies: backend profiles (bprof.h), a private file */
    json_t *backends;      /* its profiles, checked (conf_load); NULL without */
    int auth_keys_argv;    /* auth_keys came from the command line, which every
                            * user of the host sees (ps): warned about at start */
    char **admin_keys;     /* access keys that may use every bucket (authz.h) */
    int n_admin_keys;
    char **users;          /* ACCESS:ID:DISPLAY_NAME[:EMAIL], the keys as S3 users (s3user.h) */
    int n_users;
    int allow_anonymous;   /* no auth_keys on a non-loopback address is allowed */
    int header_timeout_s;  /* a request head must arrive within this */
    int max_connections;   /* open client connections per server */
    /* the S3 API served by proxies */
    int s3_api_port;       /* a second port serving S3 at the root; 0: none */
    int s3_redirect;       /* redirect object requests instead of forwarding them */
    char *tls_cert_file;   /* with tls_key_file: port serves HTTPS */
    char *tls_key_file;
    char *tls_ca_file;     /* CAs that verify other nodes' HTTPS; "": the system's */
    int plain_port;        /* with TLS: an extra plain-HTTP port; 0: none */
};

/*
 * Fill conf from defaults, the file named by --config (if any) and the
 * remaining arguments. Returns 0, or -1 with a message in err (errlen bytes).
 * conf must be released with conf_free() either way.
 */
int conf_load(struct conf *conf, int argc, char **argv, char *err, size_t errlen);
/* Apply a single name=value setting (used by conf_load and tests). */
int conf_set(struct conf *conf, const char *name, const char *value, char *err,
             size_t errlen);
void conf_defaults(struct conf *conf);
void conf_free(struct conf *conf);
enum conf_role { CONF_PROXY, CONF_TARGET };

/* The options role's daemon uses, with their defaults (--help). Options
 * of the other role are accepted and ignored, so one file may serve both. */
void conf_usage(FILE *out, const char *prog, enum conf_role role);

/* --help, --version, --check-config or --example-config among the
 * arguments: printed to stdout, and the exit status (0, or 2 after a bad
 * option or file); else -1. --check-config loads the configuration the
 * other arguments give as the daemon would and says whether it is valid;
 * --example-config prints a config file with every option of role, under
 * its help as a comment, at its default or at the value the other
 * arguments give it (deploy/config/ is made so). */
int conf_info(int argc, char **argv, const char *prog, enum conf_role role);

#endif
