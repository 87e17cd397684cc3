/* jobsum: a job's view added up from its targets' answers. Counters sum
 * over the targets that answered; the state is running while any target
 * runs it, unknown while a target it started on is unreached or forgot
 * it (never finished on partial sums), failed with errors, aborted when
 * a target aborted it, else finished; start is the earliest, end the
 * latest; error names stop at ten. */
#include <string.h>

#include "check.h"
#include "jobsum.h"

static json_t *answer(const char *target, int status, json_t *body)
{
    return json_pack("{s:s, s:i, s:o*}", "target", target, "status", status, "body", body);
}

static json_t *share(const char *state, int done, int errors, long long start, long long end)
{
    json_t *names = json_array();
    for (int i = 0; i < errors; i++)
        json_array_append_new(names, json_pack("{s:s}", "name", "x"));
    return json_pack("{s:s, s:i, s:i, s:i, s:I, s:I, s:o}", "state", state, "done", done,
                     "errors", errors, "bytes", 1048576, "start_ns", start, "end_ns", end,
                     "error_names", names);
}

/* The view's state and one counter, for answers and the targets started on. */
static const char *state_of(json_t *answers, json_t *on, const char *counter, long long *v)
{
    const char *state = NULL;
    json_t *j = jobsum_aggregate("job1", answers, on, &state);
    *v = counter ? json_integer_value(json_object_get(j, counter)) : 0;
    const char *in_view = json_string_value(json_object_get(j, "state"));
    int same = in_view && state && !strcmp(in_view, state);
    json_decref(j);
    json_decref(answers);
    json_decref(on);
    return same ? state : "(the view disagrees)";
}

int main(void)
{
    long long v;
    CHECK(!strcmp(state_of(json_pack("[o, o]", answer("t1", 200, share("finished", 3, 0, 100, 900)),
                                     answer("t2", 200, share("finished", 4, 0, 50, 700))),
                           json_pack("[s, s]", "t1", "t2"), "done", &v), "finished") && v == 7);
    CHECK(!strcmp(state_of(json_pack("[o, o]", answer("t1", 200, share("running", 1, 0, 100, 0)),
                                     answer("t2", 200, share("finished", 4, 0, 50, 700))),
                           NULL, "done", &v), "running") && v == 5);
    /* a target it started on that forgot it, or was not reached: unknown */
    CHECK(!strcmp(state_of(json_pack("[o, o]", answer("t1", 200, share("finished", 3, 0, 1, 2)),
                                     answer("t2", 404, NULL)),
                           json_pack("[s, s]", "t1", "t2"), NULL, &v), "unknown"));
    CHECK(!strcmp(state_of(json_pack("[o]", answer("t1", 200, share("finished", 3, 0, 1, 2))),
                           json_pack("[s, s]", "t1", "t3"), NULL, &v), "unknown"));
    CHECK(!strcmp(state_of(json_pack("[o, o]", answer("t1", 200, share("finished", 3, 0, 1, 2)),
                                     answer("t2", 503, NULL)),
                           NULL, NULL, &v), "unknown"));
    /* a target that joined later (404, not started on): not counted */
    CHECK(!strcmp(state_of(json_pack("[o, o]", answer("t1", 200, share("finished", 3, 0, 1, 2)),
                                     answer("t9", 404, NULL)),
                           json_pack("[s]", "t1"), "done", &v), "finished") && v == 3);
    /* errors fail it; an abort is said; errors summed */
    CHECK(!strcmp(state_of(json_pack("[o, o]", answer("t1", 200, share("finished", 3, 2, 1, 2)),
                                     answer("t2", 200, share("finished", 4, 1, 1, 2))),
                           NULL, "errors", &v), "failed") && v == 3);
    CHECK(!strcmp(state_of(json_pack("[o]", answer("t1", 200, share("aborted", 3, 0, 1, 2))),
                           NULL, NULL, &v), "aborted"));
    /* earliest start, latest end, ten error names at most */
    const char *st;
    json_t *ans = json_pack("[o, o]", answer("t1", 200, share("finished", 1, 8, 300, 900)),
                            answer("t2", 200, share("finished", 1, 8, 200, 1200)));
    json_t *j = jobsum_aggregate("job1", ans, NULL, &st);
    CHECK(json_integer_value(json_object_get(j, "start_ns")) == 200 &&
          json_integer_value(json_object_get(j, "end_ns")) == 1200 &&
          json_array_size(json_object_get(j, "error_names")) == 10 &&
          json_integer_value(json_object_get(j, "bytes")) == 2 * 1048576);
    json_decref(j);
    json_decref(ans);
    return check_done("test_proxy_jobsum");
}
