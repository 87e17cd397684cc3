/* jobsel: what a batch job selects, in what order. A template's names by
 * index, the last range fastest; a list's names as given; a download's
 * URLs, each named as given or by its path (decoded, the query left
 * out); a prefix, or nothing, is a listing: the backend's for a bucket
 * with an S3 backend, the drives' for one without, never an HTTP
 * origin's. And the table of kinds every node and the CLI read
 * (common/jobkind.h). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "bmd.h"
#include "check.h"
#include "fixture.h"
#include "jobkind.h"
#include "jobsel.h"
#include "target.h"
#include "util.h"

static struct target t;          /* large: not on the stack */

static void one(struct job *j, const char *name, size_t n, const char *url, char *mkey,
                size_t klen, int held, const struct objmeta *m)
{
    (void)j, (void)name, (void)n, (void)url, (void)klen, (void)held, (void)m;
    free(mkey);
}

/* A walk of spec over bucket (of provider shoal), or NULL with err set. */
static struct job *walk(const char *bucket, const char *spec, int urls, char *err)
{
    struct job *j = xcalloc(1, sizeof(*j));
    j->t = &t;
    snprintf(j->provider, sizeof(j->provider), "shoal");
    snprintf(j->bucket, sizeof(j->bucket), "%s", bucket);
    json_t *s = json_loads(spec, 0, NULL);
    err[0] = '\0';
    int rc = jobsel_init(j, s, one, urls, err, 256);
    json_decref(s);
    if (rc) {
        jobsel_free(j);
        free(j);
        return NULL;
    }
    return j;
}

static void done(struct job *j)
{
    jobsel_free(j);
    free(j);
}

/* The names j selects, "|" between them (at most cap bytes); how many,
 * or -1 when an index was out of order or a name too long. */
static int names(struct job *j, char *out, size_t cap)
{
    char buf[1100];
    uint64_t idx, want = 0;
    int n = 0, len;
    out[0] = '\0';
    while ((len = jobsel_next(j, buf, sizeof(buf), &idx)) != JOBSEL_END) {
        if (len < 0 || idx != want++)
            return -1;
        size_t used = strlen(out);
        snprintf(out + used, cap - used, "%s%s", n++ ? "|" : "", buf);
    }
    return n;
}

static void selections(void)
{
    char err[256], got[1024];
    struct job *j = walk("plain", "{\"template\": \"f-{08..11}.bin\"}", 0, err);
    CHECK(j && j->total == 4 && !j->unsized);
    CHECK(j && names(j, got, sizeof(got)) == 4 &&
          !strcmp(got, "f-08.bin|f-09.bin|f-10.bin|f-11.bin"));
    CHECK(j && j->pos == 4);
    if (j)
        done(j);
    j = walk("plain", "{\"template\": \"d{0..1}/x{2..1}\"}", 0, err);   /* the last range fastest */
    CHECK(j && names(j, got, sizeof(got)) == 4 && !strcmp(got, "d0/x2|d0/x1|d1/x2|d1/x1"));
    if (j)
        done(j);
    j = walk("plain", "{\"names\": [\"a\", \"b/c\", \"a\"]}", 0, err);
    CHECK(j && j->total == 3 && names(j, got, sizeof(got)) == 3 && !strcmp(got, "a|b/c|a"));
    if (j)
        done(j);
    CHECK(walk("plain", "{\"template\": \"x{1..}\"}", 0, err) == NULL && err[0]);
    CHECK(walk("nosuch", "{\"names\": [\"a\"]}", 0, err) == NULL && strstr(err, "not known"));

    /* a prefix, or nothing: a listing, whose size is not known yet */
    j = walk("plain", "{\"prefix\": \"p/\"}", 0, err);
    CHECK(j && jobsel_of(j)->listed == JL_LOCAL && j->unsized && j->total == 0);
    CHECK(j && !strcmp(jobsel_of(j)->prefix, "p/") && !strcmp(jobsel_of(j)->token, ""));
    if (j)
        done(j);
    j = walk("plain", "{}", 0, err);
    CHECK(j && jobsel_of(j)->listed == JL_LOCAL && !strcmp(jobsel_of(j)->prefix, ""));
    if (j)
        done(j);
    j = walk("cloud", "{\"prefix\": \"p/\"}", 0, err);
    CHECK(j && jobsel_of(j)->listed == JL_BACKEND && jobsel_of(j)->b.kind == BK_S3);
    if (j)
        done(j);
    CHECK(walk("origin", "{\"prefix\": \"p/\"}", 0, err) == NULL &&
          strstr(err, "cannot be listed"));
    j = walk("origin", "{\"names\": [\"x\"]}", 0, err);   /* named, an origin's objects are fine */
    CHECK(j && !jobsel_of(j)->listed && jobsel_of(j)->b.kind == BK_HTTP);
    if (j)
        done(j);
}

static void downloads(void)
{
    char err[256], got[1024], nm[1100];
    const char *spec =
        "{\"urls\": [\"http://h/a/b%20c.tar?x=1\", \"http://h/\", \"https://h:9/p#f\"]}";
    struct job *j = walk("plain", spec, 1, err);
    CHECK(j && names(j, got, sizeof(got)) == 3 &&
          !strcmp(got, "http://h/a/b%20c.tar?x=1|http://h/|https://h:9/p#f"));
    const struct jobsel *s = j ? jobsel_of(j) : NULL;
    CHECK(s && jobsel_url_name(s, 0, "http://h/a/b%20c.tar?x=1", nm, sizeof(nm)) == 9 &&
          !strcmp(nm, "a/b c.tar"));
    CHECK(s && jobsel_url_name(s, 1, "http://h/", nm, sizeof(nm)) == -1);   /* no name */
    CHECK(s && jobsel_url_name(s, 2, "https://h:9/p#f", nm, sizeof(nm)) == 1 && !strcmp(nm, "p"));
    CHECK(s && jobsel_url_name(s, 0, "no-scheme/x", nm, sizeof(nm)) == -1);
    CHECK(s && jobsel_url_name(s, 0, "http://h/a/b", nm, 3) == -1);   /* too long for buf */
    if (j)
        done(j);
    j = walk("plain", "{\"urls\": [\"http://h/1\", \"http://h/2\"], \"names\": [\"one\", \"\"]}", 1,
             err);
    s = j ? jobsel_of(j) : NULL;
    CHECK(s && jobsel_url_name(s, 0, "http://h/1", nm, sizeof(nm)) == 3 && !strcmp(nm, "one"));
    CHECK(s && jobsel_url_name(s, 1, "http://h/2", nm, sizeof(nm)) == -1);   /* "" names none */
    if (j)
        done(j);
    j = walk("plain", "{\"template\": \"http://h/s-{0..2}\"}", 1, err);
    CHECK(j && names(j, got, sizeof(got)) == 3 &&
          !strcmp(got, "http://h/s-0|http://h/s-1|http://h/s-2"));
    if (j)
        done(j);
    CHECK(walk("plain", "{\"prefix\": \"p/\"}", 1, err) == NULL && strstr(err, "\"urls\""));
}

static void kinds(void)
{
    const struct jobkind *k;
    size_t n = 0, api = 0;
    for (size_t i = 0; (k = jobkind_at(i)); i++, n++) {
        CHECK((k->ctrs & JC_EVERY) == JC_EVERY);   /* owned, done, bytes, errors: every kind's */
        CHECK(jobkind_find(k->name) == k);
        api += (k->flags & JKF_API) != 0;
    }
    CHECK(n == 13 && api == 10);
    CHECK(!strcmp(jobkind_api_names(),
                  "prefetch, evict, copy, download, flush, scrub, ec-encode, shard, reshard, transform"));
    CHECK(jobkind_find("lru") && !(jobkind_find("lru")->flags & JKF_API));
    CHECK(jobkind_find("nope") == NULL && jobkind_find(NULL) == NULL);
    CHECK(jobkind_find("prefetch")->unbacked && !jobkind_find("copy")->unbacked);
    CHECK((jobkind_find("scrub")->flags & (JKF_DRIVES | JKF_EVERY)) == (JKF_DRIVES | JKF_EVERY));
    CHECK((jobkind_find("copy")->flags & (JKF_READS | JKF_TO)) == (JKF_READS | JKF_TO));
    CHECK(jobkind_find("rebalance")->ctrs & JC_BIT(JC_MOVED));
    int outcomes = 0;
    for (int c = 0; c < JC_N; c++) {
        outcomes += jobkind_ctr_outcome((enum job_ctr)c);
        CHECK(strcmp(jobkind_ctr_name((enum job_ctr)c), "other"));
        for (int d = 0; d < c; d++)
            CHECK(strcmp(jobkind_ctr_name((enum job_ctr)c), jobkind_ctr_name((enum job_ctr)d)));
    }
    CHECK(outcomes == 7 && !jobkind_ctr_outcome(JC_DONE) && jobkind_ctr_outcome(JC_ERRORS));
}

int main(void)
{
    static const char *const buckets[] = {"plain", "cloud", "origin"};
    static const char *const props[] = {NULL, "{\"backend\": \"s3://remote\"}",
                                        "{\"backend\": \"http://127.0.0.1:9/d\"}"};
    CHECK(fixture_bmd(3, buckets, props) == 0);
    s3_cfg_resolve(&t.s3, "http://127.0.0.1:9", "us-east-1", NULL, "key", "secret", NULL, NULL);
    selections();
    downloads();
    kinds();
    s3_cfg_free(&t.s3);
    return check_done("test_jobsel");
}
