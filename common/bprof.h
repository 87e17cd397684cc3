/*
 * bprof: backend profiles, how the targets reach one remote store and with
 * which credentials (a bucket names one in its "profile" property). A
 * profile is a JSON object kept in the BMD (bmd.h), replicated with the
 * buckets and stored by every node in its state_dir (mode 0600):
 *
 *   {"provider": "s3", "endpoint": "https://host:port", "region": "...",
 *    "addressing": "path" | "virtual", "access_key": "...",
 *    "secret_key": "...", "session_token": "..."}
 *
 * or {"provider": "azure", "endpoint": BLOB-SERVICE-URL, "account": "...",
 *     "account_key": BASE64 | "sas": TOKEN}
 *
 * or {"provider": "shoal", "endpoint": A-PROXY'S-URL, "access_key": "...",
 *     "secret_key": "..."} (another Shoal cluster, through its native API)
 *
 * Every field but provider (an Azure profile's account, a shoal one's
 * endpoint) is optional;
 * an S3 profile without an endpoint is AWS's regional one, an Azure one
 * https://ACCOUNT.blob.core.windows.net. The secret fields are never shown back:
 * bprof_public() is the only view of a profile that leaves the cluster.
 */
#ifndef SHOAL_BPROF_H
#define SHOAL_BPROF_H

#include <jansson.h>
#include <stddef.h>

#define BPROF_NAME_MAX 63

/* Is this a valid profile name: 1..63 of [A-Za-z0-9._-], starting with a
 * letter or digit (as a bucket name). */
int bprof_valid_name(const char *name, size_t n);
/* Validate profile p (an object): known fields of the right types, a
 * provider Shoal serves, an http(s) endpoint, a secret key with its access
 * key. 0, or -1 with err (which never quotes a secret). */
int bprof_check(const json_t *p, char *err, size_t errlen);
/* Is field k of a profile a secret (never shown back). */
int bprof_is_secret(const char *k);
/* A new object: p without its secrets, with "name" and "secrets" (the
 * names of the secret fields that are set). */
json_t *bprof_public(const char *name, const json_t *p);
/* Field k of p, NULL when absent or "". */
const char *bprof_str(const json_t *p, const char *k);

#endif
