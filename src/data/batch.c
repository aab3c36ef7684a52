/* batch: training and evaluation batches read from a dataset; see batch.h. */
#include "data/batch.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/rng.h"

uint64_t batch_token_key(uint64_t seed, uint64_t epoch, int64_t user, int64_t pos)
{
    return rng_key(rng_key(seed, epoch, 0x746f6b6eull), (uint64_t)user, (uint64_t)pos);
}

void batch_read_user(const struct dataset *ds, int64_t u, int with_ts, int64_t **items,
                      int64_t **ts, int64_t *cap)
{
    int64_t L = dataset_length(ds, u);
    if (L > *cap) {
        *cap = L;
        *items = xrealloc(*items, (size_t)L * sizeof **items);
        if (with_ts)
            *ts = xrealloc(*ts, (size_t)L * sizeof **ts);
    }
    char err[1024];
    if (dataset_read_users(ds, u, u + 1, *items, with_ts ? *ts : NULL, NULL, err, sizeof err))
        fatal("%s", err);
}

void batch_alloc(struct seq_batch *b, int64_t B, int64_t T, int with_ts, int eval)
{
    memset(b, 0, sizeof *b);
    b->B = B;
    b->T = T;
    b->users = xmalloc((size_t)(B ? B : 1) * sizeof *b->users);
    b->ev0 = xmalloc((size_t)(B ? B : 1) * sizeof *b->ev0);
    b->offsets = xmalloc((size_t)(B + 1) * sizeof *b->offsets);
    b->items = xmalloc((size_t)(T ? T : 1) * sizeof *b->items);
    b->targets = xcalloc((size_t)(T ? T : 1), sizeof *b->targets);
    b->ts = with_ts ? xmalloc((size_t)(T ? T : 1) * sizeof *b->ts) : NULL;
    b->keys = xmalloc((size_t)(T ? T : 1) * sizeof *b->keys);
    if (eval)
        b->hist_off = xmalloc((size_t)(B + 1) * sizeof *b->hist_off);
}

/* Training inputs of user u: n_in positions from event first. */
static int64_t train_inputs(const struct dataset *ds, int hold, int N, int64_t u, int64_t *first)
{
    int64_t end = dataset_length(ds, u) - hold; /* training events [0, end) */
    int64_t n_in = end - 1 < N ? end - 1 : N;
    *first = end - 1 - n_in; /* most recent n_in inputs */
    return n_in;
}

void batch_train(const struct dataset *ds, enum split_mode mode, int N, int with_ts,
                 uint64_t seed, uint64_t epoch, const int64_t *users, const int64_t *p0,
                 const int64_t *p1, int64_t B, struct seq_batch *b)
{
    const int hold = split_holdout(mode);
    int64_t T = 0, K = 0, first;
    for (int64_t i = 0; i < B; i++) {
        int64_t n_in = train_inputs(ds, hold, N, users[i], &first);
        int64_t a = p0 ? p0[i] : 0, z = p1 ? p1[i] : n_in;
        if (p0 && (a < 0 || z > n_in || a >= z))
            fatal("batch: piece [%lld, %lld) of user %lld outside its %lld inputs",
                  (long long)a, (long long)z, (long long)users[i], (long long)n_in);
        T += z - a;
        K += z;
    }
    batch_alloc(b, B, T, with_ts, 0);
    if (p0) {
        b->pos0 = xmalloc((size_t)(B ? B : 1) * sizeof *b->pos0);
        b->key_off = xmalloc((size_t)(B + 1) * sizeof *b->key_off);
        b->key_off[0] = 0;
        b->key_ts = with_ts ? xmalloc((size_t)(K ? K : 1) * sizeof *b->key_ts) : NULL;
    }
    int64_t *items = NULL, *ts = NULL, cap = 0, t = 0;
    b->offsets[0] = 0;
    for (int64_t i = 0; i < B; i++) {
        int64_t u = users[i];
        batch_read_user(ds, u, with_ts, &items, &ts, &cap);
        int64_t n_in = train_inputs(ds, hold, N, u, &first);
        int64_t a = p0 ? p0[i] : 0, z = p1 ? p1[i] : n_in;
        for (int64_t p = a; p < z; p++, t++) {
            b->items[t] = items[first + p];
            b->targets[t] = items[first + p + 1];
            if (with_ts)
                b->ts[t] = ts[first + p];
            b->keys[t] = batch_token_key(seed, epoch, u, p);
        }
        if (p0) {
            b->pos0[i] = a;
            b->key_off[i + 1] = b->key_off[i] + z;
            if (with_ts)
                memcpy(b->key_ts + b->key_off[i], ts + first, (size_t)z * sizeof *ts);
        }
        b->users[i] = u;
        b->ev0[i] = ds->offsets[u] + first + a;
        b->offsets[i + 1] = t;
    }
    free(items);
    free(ts);
}

void batch_eval_queries(const struct dataset *ds, int N, int with_ts, const int64_t *users,
                        const int64_t *hist, const int64_t *target, int64_t B,
                        struct seq_batch *b)
{
    int64_t T = 0, H = 0;
    for (int64_t i = 0; i < B; i++) {
        T += hist[i] < N ? hist[i] : N;
        H += hist[i];
    }
    batch_alloc(b, B, T, with_ts, 1);
    b->hist = xmalloc((size_t)(H ? H : 1) * sizeof *b->hist);
    int64_t *items = NULL, *ts = NULL, cap = 0, t = 0, h = 0;
    b->offsets[0] = b->hist_off[0] = 0;
    for (int64_t i = 0; i < B; i++) {
        const int64_t u = users[i], a = hist[i];
        batch_read_user(ds, u, with_ts, &items, &ts, &cap);
        dataset_raw_numbers(ds, items, target[i] + 1); /* a raw dataset: item numbers */
        const int64_t n_in = a < N ? a : N, first = a - n_in;
        for (int64_t p = 0; p < n_in; p++, t++) {
            b->items[t] = items[first + p];
            if (with_ts)
                b->ts[t] = ts[first + p];
            b->keys[t] = 0; /* no dropout in evaluation */
        }
        b->targets[t - 1] = items[target[i]];
        memcpy(b->hist + h, items, (size_t)a * sizeof *items);
        h += a;
        b->users[i] = u;
        b->ev0[i] = ds->offsets[u] + first;
        b->offsets[i + 1] = t;
        b->hist_off[i + 1] = h;
    }
    free(items);
    free(ts);
}

void batch_eval(const struct dataset *ds, enum split_mode mode, int test, int N, int with_ts,
                const int64_t *users, int64_t B, struct seq_batch *b)
{
    int64_t *tgt = xmalloc((size_t)(B ? B : 1) * sizeof *tgt);
    for (int64_t i = 0; i < B; i++)
        tgt[i] = split_eval_target(ds, mode, test, users[i]);
    batch_eval_queries(ds, N, with_ts, users, tgt, tgt, B, b);
    free(tgt);
}

void batch_ev_picked(const int64_t *ev, int64_t n, size_t width, batch_span_reader read,
                     void *ctx, void *out)
{
    char *tmp = NULL, *o = out;
    int64_t cap = 0;
    for (int64_t j = 0, k; j < n; j = k) {
        k = batch_ev_run(ev, j, n);
        const int64_t span = ev[k - 1] - ev[j] + 1;
        if (span > cap) {
            cap = span;
            tmp = xrealloc(tmp, (size_t)cap * width);
        }
        read(ctx, ev[j], span, tmp);
        for (int64_t i = j; i < k; i++)
            memcpy(o + (size_t)i * width, tmp + (size_t)(ev[i] - ev[j]) * width, width);
    }
    free(tmp);
}

void batch_free(struct seq_batch *b)
{
    free(b->pos0);
    free(b->key_off);
    free(b->key_ts);
    free(b->users);
    free(b->ev0);
    free(b->offsets);
    free(b->items);
    free(b->targets);
    free(b->ts);
    free(b->keys);
    free(b->hist_off);
    free(b->hist);
    free(b->ncand);
    free(b->cskip);
    free(b->ev);
    free(b->labels);
    free(b->target_labels);
    free(b->no_target);
    free(b->lead);
    free(b->lead_ev);
    free(b->lead_labels);
    memset(b, 0, sizeof *b);
}
