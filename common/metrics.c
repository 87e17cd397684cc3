#include "metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define MAX_FAMILIES 96
#define MAX_LABELS 6

struct metric_series {
    const struct metric_family *fam;
    char *values;                        /* comma-separated label values */
    int64_t v;                           /* counter or gauge */
    uint64_t buckets[METRICS_MAX_BUCKETS + 1]; /* histogram: per bucket, not cumulative */
    uint64_t count;
    uint64_t sum_bits;                   /* the sum, a double's bits (CAS updated) */
};

struct metric_family {
    enum metric_kind kind;
    char *name, *help;
    char *label[MAX_LABELS];
    int n_labels;
    double bounds[METRICS_MAX_BUCKETS];
    int n_bounds;
    int64_t (*fn)(void *arg);            /* a gauge read at scrape time */
    void *fn_arg;
    pthread_mutex_t mu;                  /* creating series */
    struct metric_series *series[METRICS_MAX_SERIES];
    int n_series;                        /* published with release stores */
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct metric_family *families[MAX_FAMILIES];
static int n_families;

static struct metric_family *family_find(const char *name)
{
    int n = __atomic_load_n(&n_families, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (!strcmp(families[i]->name, name))
            return families[i];
    return NULL;
}

struct metric_family *metrics_family(enum metric_kind kind, const char *name,
                                     const char *help, const char *labels,
                                     const double *bounds, int n_bounds)
{
    pthread_mutex_lock(&reg_mu);
    struct metric_family *f = family_find(name);
    if (f || n_families == MAX_FAMILIES) {
        pthread_mutex_unlock(&reg_mu);
        return f; /* NULL when full: a programming error the tests catch */
    }
    f = xcalloc(1, sizeof(*f));
    f->kind = kind;
    f->name = xstrdup(name);
    f->help = xstrdup(help);
    for (const char *p = labels; p && *p && f->n_labels < MAX_LABELS;) {
        size_t n = strcspn(p, ",");
        f->label[f->n_labels++] = xstrndup(p, n);
        p += n + (p[n] == ',');
    }
    if (n_bounds > METRICS_MAX_BUCKETS)
        n_bounds = METRICS_MAX_BUCKETS;
    for (int i = 0; i < n_bounds; i++)
        f->bounds[i] = bounds[i];
    f->n_bounds = kind == METRIC_HISTOGRAM ? n_bounds : 0;
    pthread_mutex_init(&f->mu, NULL);
    families[n_families] = f;
    __atomic_store_n(&n_families, n_families + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&reg_mu);
    return f;
}

struct metric_series *metrics_series(struct metric_family *f, const char *values)
{
    if (!f)
        return NULL;
    int n = __atomic_load_n(&f->n_series, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (!strcmp(f->series[i]->values, values))
            return f->series[i];
    pthread_mutex_lock(&f->mu);
    struct metric_series *s = NULL;
    for (int i = n; i < f->n_series; i++) /* made by another thread meanwhile */
        if (!strcmp(f->series[i]->values, values))
            s = f->series[i];
    if (!s && f->n_series < METRICS_MAX_SERIES) {
        s = xcalloc(1, sizeof(*s));
        s->fam = f;
        s->values = xstrdup(values);
        f->series[f->n_series] = s;
        __atomic_store_n(&f->n_series, f->n_series + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&f->mu);
    return s;
}

void metrics_add(struct metric_series *s, uint64_t v)
{
    if (s)
        __atomic_add_fetch(&s->v, (int64_t)v, __ATOMIC_RELAXED);
}

void metrics_set(struct metric_series *s, int64_t v)
{
    if (s)
        __atomic_store_n(&s->v, v, __ATOMIC_RELAXED);
}

int64_t metrics_value(const struct metric_series *s)
{
    return s ? __atomic_load_n(&s->v, __ATOMIC_RELAXED) : 0;
}

void metrics_observe(struct metric_series *s, double v)
{
    if (!s)
        return;
    const struct metric_family *f = s->fam;
    int b = 0;
    while (b < f->n_bounds && v > f->bounds[b])
        b++;
    __atomic_add_fetch(&s->buckets[b], 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->count, 1, __ATOMIC_RELAXED);
    uint64_t old = __atomic_load_n(&s->sum_bits, __ATOMIC_RELAXED), nw;
    do {
        double d;
        memcpy(&d, &old, sizeof(d));
        d += v;
        memcpy(&nw, &d, sizeof(nw));
    } while (!__atomic_compare_exchange_n(&s->sum_bits, &old, nw, 1, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
}

void metrics_fn(enum metric_kind kind, const char *name, const char *help,
                int64_t (*fn)(void *arg), void *arg)
{
    struct metric_family *f = metrics_family(kind, name, help, "", NULL, 0);
    if (f) {
        f->fn_arg = arg;
        __atomic_store_n(&f->fn, fn, __ATOMIC_RELEASE);
    }
}

/* One label value, escaped as the exposition format wants. */
static void put_escaped(struct gbuf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\\' || c == '"')
            gbuf_add(out, "\\", 1);
        if (c == '\n') {
            gbuf_str(out, "\\n");
            continue;
        }
        gbuf_add(out, &c, 1);
    }
}

/* {const_labels,name="value",...[,le="bound"]} */
static void put_labels(struct gbuf *out, const struct metric_family *f,
                       const struct metric_series *s, const char *const_labels, const char *le)
{
    int any = const_labels && const_labels[0];
    gbuf_str(out, "{");
    if (any)
        gbuf_str(out, const_labels);
    const char *v = s ? s->values : "";
    for (int i = 0; i < f->n_labels; i++) {
        size_t n = strcspn(v, ",");
        if (any)
            gbuf_str(out, ",");
        gbuf_str(out, f->label[i]);
        gbuf_str(out, "=\"");
        put_escaped(out, v, n);
        gbuf_str(out, "\"");
        any = 1;
        v += n + (v[n] == ',');
    }
    if (le) {
        if (any)
            gbuf_str(out, ",");
        gbuf_str(out, "le=\"");
        gbuf_str(out, le);
        gbuf_str(out, "\"");
        any = 1;
    }
    if (!any)
        out->n--; /* no labels at all: drop the "{" */
    else
        gbuf_str(out, "}");
}

static void put_num(struct gbuf *out, const char *fmt, double v)
{
    char b[64];
    snprintf(b, sizeof(b), fmt, v);
    gbuf_str(out, b);
}

static void render_histogram(struct gbuf *out, const struct metric_family *f,
                             const struct metric_series *s, const char *cl)
{
    uint64_t cum = 0;
    char le[48];
    for (int b = 0; b <= f->n_bounds; b++) {
        cum += __atomic_load_n(&s->buckets[b], __ATOMIC_RELAXED);
        if (b < f->n_bounds)
            snprintf(le, sizeof(le), "%g", f->bounds[b]);
        else
            snprintf(le, sizeof(le), "+Inf");
        gbuf_str(out, f->name);
        gbuf_str(out, "_bucket");
        put_labels(out, f, s, cl, le);
        put_num(out, " %.0f\n", (double)cum);
    }
    uint64_t bits = __atomic_load_n(&s->sum_bits, __ATOMIC_RELAXED);
    double sum;
    memcpy(&sum, &bits, sizeof(sum));
    gbuf_str(out, f->name);
    gbuf_str(out, "_sum");
    put_labels(out, f, s, cl, NULL);
    put_num(out, " %.9g\n", sum);
    gbuf_str(out, f->name);
    gbuf_str(out, "_count");
    put_labels(out, f, s, cl, NULL);
    /* the count is the +Inf bucket, read above: the two always agree */
    put_num(out, " %.0f\n", (double)cum);
}

void metrics_render(struct gbuf *out, const char *const_labels)
{
    static const char *const kinds[] = {"counter", "gauge", "histogram"};
    int nf = __atomic_load_n(&n_families, __ATOMIC_ACQUIRE);
    for (int i = 0; i < nf; i++) {
        const struct metric_family *f = families[i];
        int64_t (*fn)(void *) = __atomic_load_n(&f->fn, __ATOMIC_ACQUIRE);
        int ns = __atomic_load_n(&f->n_series, __ATOMIC_ACQUIRE);
        /* a family with no series yet is declared all the same: scrapers and
         * dashboards know it before its first sample */
        gbuf_str(out, "# HELP ");
        gbuf_str(out, f->name);
        gbuf_str(out, " ");
        gbuf_str(out, f->help);
        gbuf_str(out, "\n# TYPE ");
        gbuf_str(out, f->name);
        gbuf_str(out, " ");
        gbuf_str(out, kinds[f->kind]);
        gbuf_str(out, "\n");
        if (fn) {
            gbuf_str(out, f->name);
            put_labels(out, f, NULL, const_labels, NULL);
            put_num(out, " %.0f\n", (double)fn(f->fn_arg));
            continue;
        }
        for (int j = 0; j < ns; j++) {
            const struct metric_series *s = f->series[j];
            if (f->kind == METRIC_HISTOGRAM) {
                render_histogram(out, f, s, const_labels);
                continue;
            }
            gbuf_str(out, f->name);
            put_labels(out, f, s, const_labels, NULL);
            put_num(out, " %.0f\n", (double)__atomic_load_n(&s->v, __ATOMIC_RELAXED));
        }
    }
}

void metrics_reset(void)
{
    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i < n_families; i++) {
        struct metric_family *f = families[i];
        for (int j = 0; j < f->n_series; j++) {
            free(f->series[j]->values);
            free(f->series[j]);
        }
        for (int j = 0; j < f->n_labels; j++)
            free(f->label[j]);
        pthread_mutex_destroy(&f->mu);
        free(f->name);
        free(f->help);
        free(f);
        families[i] = NULL;
    }
    __atomic_store_n(&n_families, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&reg_mu);
}
