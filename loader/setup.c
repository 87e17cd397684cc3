/*
 * setup: the loader's blocking requests before a run (libcurl easy, signed
 * like the run's requests when a key is set): that the endpoint answers
 * and the bucket exists, and in direct mode the cluster map that places
 * each name on its target. Failures end the program with a message that
 * says what to fix.
 *
 * Threads: main thread, before any loop thread starts.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmap.h"
#include "loader.h"

struct cmap *cmap;

static size_t sink(char *p, size_t s, size_t n, void *arg)
{
    gbuf_add(arg, p, s * n);
    return s * n;
}

long setup_fetch(const char *method, const char *url, struct gbuf *body, char *err,
                 size_t errlen)
{
    CURL *c = curl_easy_init();
    char eb[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, eb);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    char sigv4[128];
    if (opt.access_key) {
        snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", opt.region);
        curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4);
        curl_easy_setopt(c, CURLOPT_USERNAME, opt.access_key);
        curl_easy_setopt(c, CURLOPT_PASSWORD, opt.secret_key);
    }
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    else
        snprintf(err, errlen, "%s", eb[0] ? eb : curl_easy_strerror(rc));
    curl_easy_cleanup(c);
    return status;
}

void setup_check_target(void)
{
    char err[CURL_ERROR_SIZE];
    struct gbuf b = {0};
    char *url;
    if (opt.mode == M_SHOAL || opt.mode == M_DIRECT) {
        url = xasprintf("%s/v1/buckets/%s%s%s", opt.endpoint, opt.bucket,
                        opt.provider ? "?provider=" : "", opt.provider ? opt.provider : "");
        long st = setup_fetch("HEAD", url, &b, err, sizeof(err));
        if (st == 0)
            die("cannot reach %s: %s", opt.endpoint, err);
        if (st == 404 && !opt.provider)
            die("bucket '%s' not found at %s (create it with PUT /v1/buckets/%s)", opt.bucket,
                opt.endpoint, opt.bucket);
        if (st >= 400 && st != 404)
            die("%s answered %ld for bucket '%s'", opt.endpoint, st, opt.bucket);
        free(url);
        if (opt.mode == M_DIRECT) {
            gbuf_free(&b);
            url = xasprintf("%s/v1/cluster", opt.endpoint);
            if (setup_fetch("GET", url, &b, err, sizeof(err)) != 200)
                die("cannot read the cluster map from %s", opt.endpoint);
            json_t *j = json_loadb(b.p, b.n, 0, NULL);
            char e2[256];
            cmap = j ? cmap_from_json(j, e2, sizeof(e2)) : NULL;
            json_decref(j);
            if (!cmap || cmap->n_targets == 0)
                die("the cluster map from %s has no targets", opt.endpoint);
            free(url);
        }
    } else {
        url = xasprintf("%s/", opt.endpoint);
        if (setup_fetch("GET", url, &b, err, sizeof(err)) == 0)
            die("cannot reach %s: %s", opt.endpoint, err);
        free(url);
    }
    gbuf_free(&b);
}
