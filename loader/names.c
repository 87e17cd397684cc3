/*
 * names: the set of object names a run works on, and the orders it visits
 * them in. The names come from the bucket's own listing (native API,
 * paged, under --prefix), from a file (one a line), or are generated
 * (<prefix>00000000, <prefix>00000001, ...). With --epochs, each pass has
 * its own permutation (Fisher-Yates from --seed), so every name is visited
 * once per pass and runs with one seed repeat.
 *
 * Threads: built on the main thread before a run; read-only during it.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"
#include "sigv4.h"

char **names;
int64_t n_names;
uint32_t *perm;

static void add_name(const char *n)
{
    names = xrealloc(names, sizeof(char *) * (size_t)(n_names + 1));
    names[n_names++] = xstrdup(n);
}

/* The bucket's own listing (native API, paged), under --prefix if given. */
static void list_bucket_names(void)
{
    char err[256];
    char *token = xstrdup("");
    char *ep = sigv4_uri_encode(opt.prefix, strlen(opt.prefix), 0);
    for (;;) {
        char *et = sigv4_uri_encode(token, strlen(token), 0);
        char *url = xasprintf("%s/v1/buckets/%s/objects?limit=10000&prefix=%s&token=%s%s%s",
                              opt.endpoint, opt.bucket, ep, et,
                              opt.provider ? "&provider=" : "", opt.provider ? opt.provider : "");
        struct gbuf b = {0};
        long st = setup_fetch("GET", url, &b, err, sizeof(err));
        free(url);
        free(et);
        json_t *j = st == 200 ? json_loadb(b.p, b.n, 0, NULL) : NULL;
        gbuf_free(&b);
        if (!j)
            die("cannot list bucket '%s' (status %ld)", opt.bucket, st);
        size_t i;
        json_t *o;
        json_array_foreach(json_object_get(j, "objects"), i, o) {
            const char *n = json_string_value(json_object_get(o, "name"));
            if (n)
                add_name(n);
        }
        free(token);
        token = xstrdup(json_string_value(json_object_get(j, "next")) ?: "");
        json_decref(j);
        if (!token[0])
            break;
    }
    free(token);
    free(ep);
    if (n_names == 0)
        die("bucket '%s' lists no objects%s%s", opt.bucket, opt.prefix[0] ? " under " : "",
            opt.prefix);
}

static void make_names(void)
{
    if (opt.list_names) {
        list_bucket_names();
        return;
    }
    if (opt.names_file) {
        size_t len;
        char *text = file_read(opt.names_file, 1u << 30, &len);
        if (!text)
            die("cannot read --names-file %s: %s", opt.names_file, strerror(errno));
        for (char *save = NULL, *l = strtok_r(text, "\r\n", &save); l;
             l = strtok_r(NULL, "\r\n", &save)) {
            if (!l[0])
                continue;
            add_name(l);
        }
        free(text);
        if (n_names == 0)
            die("--names-file %s holds no names", opt.names_file);
        return;
    }
    n_names = opt.num_objects;
    names = xcalloc((size_t)n_names, sizeof(char *));
    for (int64_t i = 0; i < n_names; i++)
        names[i] = xasprintf("%s%08lld", opt.prefix, (long long)i);
}

static void make_perms(void)
{
    int epochs = opt.epochs > 0 ? opt.epochs : 0;
    if (!epochs)
        return;
    perm = xcalloc((size_t)(epochs * n_names), sizeof(uint32_t));
    uint64_t r = opt.seed * 0xD1B54A32D192ED03ULL + 3;
    for (int e = 0; e < epochs; e++) {
        uint32_t *p = perm + (size_t)e * (size_t)n_names;
        for (int64_t i = 0; i < n_names; i++)
            p[i] = (uint32_t)i;
        for (int64_t i = n_names - 1; i > 0; i--) { /* Fisher-Yates */
            r ^= r >> 12, r ^= r << 25, r ^= r >> 27;
            int64_t j = (int64_t)((r * 0x2545F4914F6CDD1DULL) % (uint64_t)(i + 1));
            uint32_t t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
    }
}
void names_make(void)
{
    make_names();
    make_perms();
}

void names_free(void)
{
    for (int64_t i = 0; i < n_names; i++)
        free(names[i]);
    free(names);
    free(perm);
}
