/* batch_window: the stream schedule's retrieval batches; see batch_window.h. */
#include "data/batch_window.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"

int64_t batch_window_inputs(const struct rsplit *rs, const struct dataset *ds, int N, int64_t u,
                            int64_t *first, int64_t *sup)
{
    (void)ds;
    const int64_t end = rs->bound[2 * u], a = rs->from[u]; /* events [0, end) read */
    const int64_t n_in = end - 1 < N ? end - 1 : N;
    if (n_in <= 0) {
        *first = 0;
        *sup = 0;
        return 0;
    }
    *first = end - 1 - n_in;
    const int64_t t0 = *first + 1 > a ? *first + 1 : a; /* the first target in the window */
    *sup = end > t0 ? end - t0 : 0;
    return n_in;
}

void batch_window_train(const struct dataset *ds, const struct rsplit *rs, int N, int with_ts,
                        uint64_t seed, uint64_t epoch, const int64_t *users, int64_t B,
                        struct seq_batch *b)
{
    int64_t T = 0, first, sup;
    for (int64_t i = 0; i < B; i++)
        T += batch_window_inputs(rs, ds, N, users[i], &first, &sup);
    batch_alloc(b, B, T, with_ts, 0);
    b->no_target = xmalloc((size_t)(T ? T : 1));
    b->n_target = 0;
    int64_t *items = NULL, *ts = NULL, cap = 0, t = 0;
    b->offsets[0] = 0;
    for (int64_t i = 0; i < B; i++) {
        const int64_t u = users[i];
        batch_read_user(ds, u, with_ts, &items, &ts, &cap);
        const int64_t n = batch_window_inputs(rs, ds, N, u, &first, &sup);
        for (int64_t p = 0; p < n; p++, t++) {
            b->items[t] = items[first + p];
            b->targets[t] = items[first + p + 1];
            if (with_ts)
                b->ts[t] = ts[first + p];
            b->keys[t] = batch_token_key(seed, epoch, batch_user_key(ds, u), p);
            b->no_target[t] = first + p + 1 < rs->from[u];
            b->n_target += !b->no_target[t];
        }
        b->users[i] = u;
        b->ev0[i] = ds->offsets[u] + first;
        b->offsets[i + 1] = t;
    }
    free(items);
    free(ts);
}

int64_t batch_window_entries(const struct rsplit *rs, const struct dataset *ds, int64_t **users,
                             int64_t **events, int64_t *skipped)
{
    int64_t n = 0, k = 0;
    *skipped = 0;
    for (int64_t u = 0; u < ds->num_users; u++) {
        const int64_t a = rs->bound[2 * u], b = rs->bound[2 * u + 1];
        if (a > 0)
            n += b - a;
        else
            *skipped += b - a;
    }
    *users = xmalloc((size_t)(n ? n : 1) * sizeof **users);
    *events = xmalloc((size_t)(n ? n : 1) * sizeof **events);
    for (int64_t u = 0; u < ds->num_users; u++) {
        const int64_t a = rs->bound[2 * u], b = rs->bound[2 * u + 1];
        for (int64_t e = a; a > 0 && e < b; e++, k++) {
            (*users)[k] = u;
            (*events)[k] = e;
        }
    }
    return n;
}

void batch_window_eval(const struct dataset *ds, const struct rsplit *rs, int N, int with_ts,
                       const int64_t *users, const int64_t *events, int64_t B,
                       struct seq_batch *b)
{
    int64_t *hist = xmalloc((size_t)(B ? B : 1) * sizeof *hist);
    for (int64_t i = 0; i < B; i++) {
        const int64_t u = users[i], a = rs->bound[2 * u];
        if (a < 1 || events[i] < a || events[i] >= dataset_length(ds, u))
            fatal("batch_window_eval: event %lld of user %lld is not after its history of "
                  "%lld events", (long long)events[i], (long long)u, (long long)a);
        hist[i] = a;
    }
    batch_eval_queries(ds, N, with_ts, users, hist, events, B, b);
    free(hist);
}
