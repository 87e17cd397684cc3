/*
 * azreq: how to reach an Azure Blob Storage account, and signed requests
 * to it (SharedKey, or a SAS token appended to the URL). Pure apart from
 * reading the environment in az_cfg_from_env(); used by the target's
 * backend client (target/backend/backend.c).
 */
#ifndef SHOAL_AZREQ_H
#define SHOAL_AZREQ_H

#include <time.h>

#include "s3req.h"

#define AZ_VERSION "2021-08-06"  /* x-ms-version: the REST API's */

struct az_cfg {
    char *endpoint;              /* the blob service URL, no trailing slash:
                                  * https://ACCOUNT.blob.core.windows.net, or an
                                  * emulator's http://HOST:PORT/ACCOUNT */
    char *account;
    char *key;                   /* base64 account key; "" none */
    char *sas;                   /* a SAS token, no leading '?'; "" none */
};

/* From these settings alone: no endpoint is the account's public one. */
void az_cfg_make(struct az_cfg *out, const char *endpoint, const char *account,
                 const char *key, const char *sas);
/* The default profile: AZURE_STORAGE_CONNECTION_STRING (as Azure's tools
 * read it: AccountName, AccountKey, BlobEndpoint, SharedAccessSignature,
 * DefaultEndpointsProtocol, EndpointSuffix), else AZURE_STORAGE_ACCOUNT,
 * AZURE_STORAGE_KEY, AZURE_STORAGE_ENDPOINT, AZURE_STORAGE_SAS_TOKEN.
 * Its account is "" when none is set. */
void az_cfg_from_env(struct az_cfg *out);
/* The same from a connection string's text (pure; the one parser of it). */
void az_cfg_from_conn(struct az_cfg *out, const char *conn);
void az_cfg_copy(struct az_cfg *dst, const struct az_cfg *src);
void az_cfg_free(struct az_cfg *c);

/*
 * Build a request of container (and blob, NULL or "" for container-level
 * calls). query is the raw query string, percent-encoded ("" for none).
 * extra: header lines to send and sign ("Name: value": Content-Length,
 * Content-Type, Range, If-Match, x-ms-*, ...), at most 8. With a key the
 * request carries "Authorization: SharedKey ACCOUNT:SIG"; with a SAS the
 * token is appended to the URL; with neither it is anonymous.
 */
void az_req_build(struct s3_req *out, const struct az_cfg *c, const char *method,
                  const char *container, const char *blob, const char *query,
                  const char *const *extra, int n_extra, time_t now);
/* The string a SharedKey signs (exposed for tests): a new string. */
char *az_string_to_sign(const char *method, const char *account, const char *path,
                        const char *query, const char *const *hdrs, int n);

#endif
