/*
 * jobsum: a job's targets' answers added up (see jobsum.h).
 */
#include "jobsum.h"

#include <string.h>

#include "jobkind.h"
#include "util.h"

/* Is target (a JSON string) one of on (NULL: not known)? */
static int was_started_on(json_t *on, json_t *target)
{
    size_t i;
    json_t *v;
    json_array_foreach(on, i, v)
        if (json_equal(v, target))
            return 1;
    return 0;
}

/* The targets' answers added up. A target the job started on that no
 * longer knows it (it forgot the job job_ttl_s after its share ended)
 * makes the sums partial: the state is "unknown", never "finished". */
json_t *jobsum_aggregate(const char *id, json_t *answers, json_t *on, const char **state)
{
    json_int_t tot[JC_N] = {0}, start = 0, end = 0, selected = 0;
    int running = 0, aborted = 0, unreached = 0, waiting = 0, forgotten = 0;
    json_t *errs = json_array();
    size_t i;
    json_t *a;
    json_array_foreach(answers, i, a) {
        json_t *b = json_object_get(a, "body");
        const char *st = json_string_value(json_object_get(b, "state"));
        json_int_t status = json_integer_value(json_object_get(a, "status"));
        if (status == 404) {     /* not part of it (joined later), or forgot it */
            forgotten += was_started_on(on, json_object_get(a, "target"));
            continue;
        }
        if (status != 200 || !st) {
            unreached++;
            continue;
        }
        running += !strcmp(st, "running");
        aborted += !strcmp(st, "aborted");
        waiting += json_is_true(json_object_get(b, "waiting"));
        for (int k = 0; k < JC_N; k++)
            tot[k] += json_integer_value(json_object_get(b, jobkind_ctr_name((enum job_ctr)k)));
        json_int_t sel = json_integer_value(json_object_get(b, "selected"));
        selected = sel > selected ? sel : selected;   /* the same on each, or (a job one
                                                         * target leads) the leader's */
        json_int_t s = json_integer_value(json_object_get(b, "start_ns"));
        json_int_t e = json_integer_value(json_object_get(b, "end_ns"));
        start = !start || (s && s < start) ? s : start;
        end = e > end ? e : end;
        size_t k;
        json_t *en;
        json_array_foreach(json_object_get(b, "error_names"), k, en)
            if (json_array_size(errs) < 10)
                json_array_append(errs, en);
    }
    size_t oi;
    json_t *tid;
    json_array_foreach(on, oi, tid) {  /* one that left the map, or is down: not asked */
        int asked = 0;
        json_array_foreach(answers, i, a)
            asked |= json_equal(json_object_get(a, "target"), tid);
        unreached += !asked;
    }
    *state = running     ? "running"
             : unreached || forgotten ? "unknown"
             : aborted   ? "aborted"
             : tot[JC_ERRORS] ? "failed"
                         : "finished";
    uint64_t until = running || !end ? wall_ns() : (uint64_t)end;
    double secs = start ? (double)(until - (uint64_t)start) / 1e9 : 0;
    json_t *j = json_pack("{s:s, s:s, s:I, s:o, s:f, s:I, s:I, s:i, s:i, s:i, s:O}", "id", id,
                          "state", *state, "selected", selected, "error_names", errs,
                          "mib_per_s", secs > 0 ? (double)tot[JC_BYTES] / 1048576.0 / secs : 0.0,
                          "start_ns", start, "end_ns", running ? 0 : end, "waiting_targets",
                          waiting, "unreached_targets", unreached, "forgotten_targets",
                          forgotten, "targets", answers);
    for (int k = 0; k < JC_N; k++)
        json_object_set_new(j, jobkind_ctr_name((enum job_ctr)k), json_integer(tot[k]));
    return j;
}
