/* bench_stream: the history lookup of streaming training (data/stream_files.h)
 * per step: a batch of users, each user's newest max_len events before a
 * time, from window files. Run by bench/stream.sh.
 *
 *   bench_stream SPEC USERS.h5 BEFORE HISTORY_FILES BATCH STEPS MAX_LEN
 *
 * SPEC: data.path (a file, a list or a glob); the users are those of
 * USERS.h5 (/user_map; the last window's), shuffled (seed 1), BATCH a step
 * for STEPS steps. Prints one line: the open time, the median and first
 * step's milliseconds, the events returned and files read per lookup. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/clock.h"
#include "base/rng.h"
#include "data/dataset.h"
#include "data/stream_files.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: bench_stream SPEC USERS.h5 BEFORE HISTORY_FILES BATCH STEPS "
                "MAX_LEN\n");
        return 2;
    }
    const char *spec = argv[1];
    const int64_t before = atoll(argv[3]);
    const int hist = atoi(argv[4]);
    const int64_t batch = atoll(argv[5]), steps = atoll(argv[6]), max_len = atoll(argv[7]);
    char err[4400];
    struct dataset ud;
    if (dataset_open(&ud, argv[2], err, sizeof err))
        fatal("%s", err);
    int64_t *users = dataset_read_map(&ud, "user_map", err, sizeof err);
    if (!users)
        fatal("%s", err);
    const int64_t nu = ud.num_users;
    dataset_close(&ud);
    if (batch < 1 || steps < 1 || max_len < 1 || batch * steps > nu)
        fatal("bench_stream: BATCH x STEPS = %lld users, the file has %lld",
              (long long)(batch * steps), (long long)nu);
    struct rng r;
    rng_init(&r, 1);
    for (int64_t i = nu - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below(&r, (uint64_t)i + 1), t = users[i];
        users[i] = users[j];
        users[j] = t;
    }
    double t0 = clock_seconds();
    struct stream_files s;
    if (stream_files_open(&s, spec, hist, err, sizeof err))
        fatal("%s", err);
    const double open_s = clock_seconds() - t0;
    int64_t *items = xmalloc((size_t)max_len * sizeof *items);
    int64_t *ts = xmalloc((size_t)max_len * sizeof *ts);
    struct stream_where *where = xmalloc((size_t)max_len * sizeof *where);
    double *ms = xmalloc((size_t)steps * sizeof *ms);
    int64_t events = 0, files = 0;
    for (int64_t st = 0; st < steps; st++) {
        double a = clock_seconds();
        for (int64_t b = 0; b < batch; b++) {
            int64_t n;
            if (stream_files_history(&s, users[st * batch + b], before, max_len, items, ts, NULL,
                                     where, &n, err, sizeof err))
                fatal("%s", err);
            events += n;
            if (n > 0) /* files the lookup took events from */
                files += where[0].file - where[n - 1].file + 1;
        }
        ms[st] = (clock_seconds() - a) * 1e3;
    }
    const double first = ms[0];
    qsort(ms, (size_t)steps, sizeof *ms, cmp_double);
    printf("files %d history_files %d open_s %.3f step_ms_median %.3f step_ms_first %.3f "
           "events_per_lookup %.1f files_spanned %.2f\n",
           s.n, hist, open_s, ms[steps / 2], first, (double)events / (double)(batch * steps),
           (double)files / (double)(batch * steps));
    stream_files_close(&s);
    free(items);
    free(ts);
    free(where);
    free(ms);
    free(users);
    return 0;
}
