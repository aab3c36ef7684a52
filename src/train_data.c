/* train_data: splits, permutations and batches; see train_data.h. */
#include "train_data.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rng.h"

int split_holdout(enum split_mode mode) { return mode == SPLIT_LOO ? 2 : 1; }

int64_t split_train_users(const struct dataset *ds, enum split_mode mode, int64_t **users)
{
    int64_t *u = xmalloc((size_t)(ds->num_users ? ds->num_users : 1) * sizeof *u), n = 0;
    for (int64_t i = 0; i < ds->num_users; i++)
        if (dataset_length(ds, i) >= split_holdout(mode) + 2)
            u[n++] = i;
    *users = u;
    return n;
}

/* The target's index within the user's events for an evaluation split. */
static int64_t eval_target(const struct dataset *ds, enum split_mode mode, int test, int64_t u)
{
    int64_t L = dataset_length(ds, u);
    return mode == SPLIT_LOO && !test ? L - 2 : L - 1;
}

int64_t split_eval_users(const struct dataset *ds, enum split_mode mode, int test,
                         int64_t **users)
{
    int64_t *u = xmalloc((size_t)(ds->num_users ? ds->num_users : 1) * sizeof *u), n = 0;
    for (int64_t i = 0; i < ds->num_users; i++)
        if (eval_target(ds, mode, test, i) >= 1) /* at least one history event */
            u[n++] = i;
    *users = u;
    return n;
}

void split_permutation(uint64_t seed, uint64_t epoch, int64_t n, int64_t *perm)
{
    struct rng r;
    rng_init(&r, rng_key(seed, epoch, 0x7065726dull));
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below(&r, (uint64_t)i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

static uint64_t token_key(uint64_t seed, uint64_t epoch, int64_t user, int64_t pos)
{
    return rng_key(rng_key(seed, epoch, 0x746f6b6eull), (uint64_t)user, (uint64_t)pos);
}

/* Read user u's events [0, end) into growable buffers; returns end. */
static void read_user(const struct dataset *ds, int64_t u, int with_ts, int64_t **items,
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

static void batch_alloc(struct seq_batch *b, int64_t B, int64_t T, int with_ts, int eval)
{
    memset(b, 0, sizeof *b);
    b->B = B;
    b->T = T;
    b->users = xmalloc((size_t)(B ? B : 1) * sizeof *b->users);
    b->offsets = xmalloc((size_t)(B + 1) * sizeof *b->offsets);
    b->items = xmalloc((size_t)(T ? T : 1) * sizeof *b->items);
    b->targets = xcalloc((size_t)(T ? T : 1), sizeof *b->targets);
    b->ts = with_ts ? xmalloc((size_t)(T ? T : 1) * sizeof *b->ts) : NULL;
    b->keys = xmalloc((size_t)(T ? T : 1) * sizeof *b->keys);
    if (eval)
        b->hist_off = xmalloc((size_t)(B + 1) * sizeof *b->hist_off);
}

void batch_train(const struct dataset *ds, enum split_mode mode, int N, int with_ts,
                 uint64_t seed, uint64_t epoch, const int64_t *users, int64_t B,
                 struct seq_batch *b)
{
    const int hold = split_holdout(mode);
    int64_t T = 0;
    for (int64_t i = 0; i < B; i++) {
        int64_t n_in = dataset_length(ds, users[i]) - hold - 1; /* inputs with a next item */
        T += n_in < N ? n_in : N;
    }
    batch_alloc(b, B, T, with_ts, 0);
    int64_t *items = NULL, *ts = NULL, cap = 0, t = 0;
    b->offsets[0] = 0;
    for (int64_t i = 0; i < B; i++) {
        int64_t u = users[i];
        read_user(ds, u, with_ts, &items, &ts, &cap);
        int64_t end = dataset_length(ds, u) - hold; /* training events [0, end) */
        int64_t n_in = end - 1 < N ? end - 1 : N;
        int64_t first = end - 1 - n_in; /* most recent n_in inputs */
        for (int64_t p = 0; p < n_in; p++, t++) {
            b->items[t] = items[first + p];
            b->targets[t] = items[first + p + 1];
            if (with_ts)
                b->ts[t] = ts[first + p];
            b->keys[t] = token_key(seed, epoch, u, p);
        }
        b->users[i] = u;
        b->offsets[i + 1] = t;
    }
    free(items);
    free(ts);
}

void batch_eval(const struct dataset *ds, enum split_mode mode, int test, int N, int with_ts,
                const int64_t *users, int64_t B, struct seq_batch *b)
{
    int64_t T = 0, H = 0;
    for (int64_t i = 0; i < B; i++) {
        int64_t tgt = eval_target(ds, mode, test, users[i]);
        T += tgt < N ? tgt : N;
        H += tgt;
    }
    batch_alloc(b, B, T, with_ts, 1);
    b->hist = xmalloc((size_t)(H ? H : 1) * sizeof *b->hist);
    int64_t *items = NULL, *ts = NULL, cap = 0, t = 0, h = 0;
    b->offsets[0] = b->hist_off[0] = 0;
    for (int64_t i = 0; i < B; i++) {
        int64_t u = users[i];
        read_user(ds, u, with_ts, &items, &ts, &cap);
        int64_t tgt = eval_target(ds, mode, test, u);
        int64_t n_in = tgt < N ? tgt : N, first = tgt - n_in;
        for (int64_t p = 0; p < n_in; p++, t++) {
            b->items[t] = items[first + p];
            if (with_ts)
                b->ts[t] = ts[first + p];
            b->keys[t] = 0; /* no dropout in evaluation */
        }
        b->targets[t - 1] = items[tgt];
        memcpy(b->hist + h, items, (size_t)tgt * sizeof *items);
        h += tgt;
        b->users[i] = u;
        b->offsets[i + 1] = t;
        b->hist_off[i + 1] = h;
    }
    free(items);
    free(ts);
}

void batch_free(struct seq_batch *b)
{
    free(b->users);
    free(b->offsets);
    free(b->items);
    free(b->targets);
    free(b->ts);
    free(b->keys);
    free(b->hist_off);
    free(b->hist);
    memset(b, 0, sizeof *b);
}
