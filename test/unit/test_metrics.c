/* metrics: families and series, counters, gauges, callbacks, histograms
 * (cumulative buckets, sum, count), label escaping, and the exposition
 * text with # HELP and # TYPE. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "metrics.h"
#include "util.h"

static int64_t forty_two(void *arg)
{
    return *(int64_t *)arg;
}

int main(void)
{
    struct metric_family *req =
        metrics_family(METRIC_COUNTER, "t_requests_total", "Requests.", "op,class", NULL, 0);
    CHECK(req && metrics_family(METRIC_COUNTER, "t_requests_total", "x", "", NULL, 0) == req);
    struct metric_series *g2 = metrics_series(req, "get,2xx");
    CHECK(g2 && metrics_series(req, "get,2xx") == g2);
    metrics_add(g2, 3);
    metrics_add(metrics_series(req, "put,5xx"), 1);
    CHECK(metrics_value(g2) == 3);
    metrics_add(NULL, 1); /* a full family's NULL is harmless */

    static const double b[] = {0.001, 0.01, 0.1};
    struct metric_family *lat = metrics_family(METRIC_HISTOGRAM, "t_seconds", "Latency.", "op",
                                               b, 3);
    struct metric_series *lg = metrics_series(lat, "get");
    metrics_observe(lg, 0.0005);
    metrics_observe(lg, 0.005);
    metrics_observe(lg, 0.005);
    metrics_observe(lg, 5);

    struct metric_family *q = metrics_family(METRIC_GAUGE, "t_queue", "Queue.", "name", NULL, 0);
    metrics_set(metrics_series(q, "a\"b\\c"), -7);
    int64_t v = 42;
    metrics_fn(METRIC_GAUGE, "t_version", "Version.", forty_two, &v);
    metrics_family(METRIC_COUNTER, "t_unused_total", "Never counted.", "", NULL, 0);

    struct gbuf out = {0};
    metrics_render(&out, "node=\"n1\"");
    gbuf_add(&out, "", 1);
    const char *t = out.p;
    CHECK(strstr(t, "# HELP t_requests_total Requests.\n# TYPE t_requests_total counter\n"));
    CHECK(strstr(t, "t_requests_total{node=\"n1\",op=\"get\",class=\"2xx\"} 3\n"));
    CHECK(strstr(t, "t_requests_total{node=\"n1\",op=\"put\",class=\"5xx\"} 1\n"));
    CHECK(strstr(t, "# TYPE t_seconds histogram\n"));
    CHECK(strstr(t, "t_seconds_bucket{node=\"n1\",op=\"get\",le=\"0.001\"} 1\n"));
    CHECK(strstr(t, "t_seconds_bucket{node=\"n1\",op=\"get\",le=\"0.01\"} 3\n"));
    CHECK(strstr(t, "t_seconds_bucket{node=\"n1\",op=\"get\",le=\"0.1\"} 3\n"));
    CHECK(strstr(t, "t_seconds_bucket{node=\"n1\",op=\"get\",le=\"+Inf\"} 4\n"));
    CHECK(strstr(t, "t_seconds_count{node=\"n1\",op=\"get\"} 4\n"));
    CHECK(strstr(t, "t_seconds_sum{node=\"n1\",op=\"get\"} 5.0105\n"));
    CHECK(strstr(t, "t_queue{node=\"n1\",name=\"a\\\"b\\\\c\"} -7\n"));
    CHECK(strstr(t, "# TYPE t_version gauge\nt_version{node=\"n1\"} 42\n"));
    /* no series yet: declared, with no sample */
    CHECK(strstr(t, "# TYPE t_unused_total counter\n") && !strstr(t, "t_unused_total{"));
    gbuf_free(&out);

    /* without constant labels */
    metrics_render(&out, "");
    gbuf_add(&out, "", 1);
    CHECK(strstr(out.p, "\nt_version 42\n"));
    CHECK(strstr(out.p, "t_requests_total{op=\"get\",class=\"2xx\"} 3\n"));
    gbuf_free(&out);
    metrics_reset();
    metrics_render(&out, "");
    CHECK(out.n == 0);
    gbuf_free(&out);
    return check_done("test_metrics");
}
