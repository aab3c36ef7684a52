/* batch_ranking: ranking batches and their labels; see batch_ranking.h. */
#include "data/batch_ranking.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/rng.h"
#include "data/pools.h"

double label_of(const struct label_col *c, double v)
{
    switch (c->op) {
    case LOP_VALUE:
        return v;
    case LOP_NONZERO:
        return v != 0;
    case LOP_GE:
        return v >= c->x;
    case LOP_GT:
        return v > c->x;
    case LOP_LE:
        return v <= c->x;
    case LOP_LT:
        return v < c->x;
    case LOP_EQ:
        return v == c->x;
    case LOP_NE:
        return v != c->x;
    }
    return NAN;
}

void labels_read_events(const struct dataset *ds, const struct label_conf *lc, int64_t e0,
                        int64_t n, float *out)
{
    const int K = lc->n;
    if (n <= 0)
        return;
    float *fv = xmalloc((size_t)n * sizeof *fv);
    int32_t *iv = xmalloc((size_t)n * sizeof *iv);
    char err[1024];
    for (int k = 0; k < K; k++) {
        const struct label_col *c = &lc->c[k];
        if (c->f->is_float ? dataset_feat_floats(ds, c->f, e0, n, fv, err, sizeof err)
                           : dataset_feat_ints(ds, c->f, e0, n, iv, err, sizeof err))
            fatal("%s", err);
        for (int64_t j = 0; j < n; j++) {
            double v = c->f->is_float ? (double)fv[j] : iv[j] ? c->decode[iv[j]] : NAN;
            out[j * K + k] = isnan(v) ? NAN : (float)label_of(c, v);
        }
    }
    free(fv);
    free(iv);
}

/* labels_read_events as a batch_span_reader (data.pools' picked events) */
struct labels_span {
    const struct dataset *ds;
    const struct label_conf *lc;
};
static void labels_span_read(void *ctx, int64_t first, int64_t span, void *buf)
{
    const struct labels_span *c = ctx;
    labels_read_events(c->ds, c->lc, first, span, buf);
}

void batch_ranking_read_labels(const struct dataset *ds, const struct label_conf *lc,
                               struct seq_batch *b)
{
    const int K = lc->n;
    b->nlab = K;
    b->labels = xmalloc((size_t)(b->T * K > 0 ? b->T * K : 1) * sizeof *b->labels);
    for (int64_t i = 0; i < b->T * K; i++)
        b->labels[i] = NAN;
    for (int64_t q = 0; q < b->B; q++) { /* the history, then the candidates (a part: a gap) */
        int64_t e1;
        const int64_t n = batch_file_events(b, q), h = batch_file_run(b, q, &e1);
        if (b->ev) { /* data.pools: the tokens' events */
            struct labels_span c = {ds, lc};
            batch_ev_picked(b->ev + b->offsets[q], n, (size_t)K * sizeof *b->labels,
                            labels_span_read, &c, b->labels + b->offsets[q] * K);
            continue;
        }
        labels_read_events(ds, lc, b->ev0[q], h, b->labels + b->offsets[q] * K);
        labels_read_events(ds, lc, e1, n - h, b->labels + (b->offsets[q] + h) * K);
    }
}

/* data.pools: user u's pooled events [0, end) with room `room` appended to
 * *sel (growable, *n used of *cap); their count. */
static int64_t pooled(const struct dataset *ds, const struct label_conf *lc, int64_t u,
                      int64_t end, int64_t room, int64_t **sel, int64_t *n, int64_t *cap)
{
    const int64_t per = pools_per(lc->pools, room), need = *n + per * lc->pools->n;
    if (need > *cap) {
        *cap = need > 2 * *cap ? need : 2 * *cap;
        *sel = xrealloc(*sel, (size_t)*cap * sizeof **sel);
    }
    const int64_t m = pools_select(ds, lc->pools, u, end, per, *sel + *n);
    *n += m;
    return m;
}

/* The events [*e0, *e1) of entry i's piece of a sequence of n events
 * (pc: NULL, the whole sequence); fatal() on a piece off its grid. */
static void piece_events(const struct rank_pieces *pc, int64_t i, int64_t u, int64_t n,
                         int64_t *e0, int64_t *e1)
{
    *e0 = 0;
    *e1 = n;
    if (!pc)
        return;
    const int64_t h = pc->head, s = pc->step, a = pc->p0[i], z = pc->p1[i], L = h + s * n;
    const int on_a = a == 0 || (a >= h + s && (a - h) % s == 0);
    const int on_z = z == L || (z >= h + s && (z - h) % s == 0);
    if (n == 0 && a == 0 && z == L) /* no event (none in a pool): the contextual tokens */
        return;
    if (!on_a || !on_z || a >= z || z > L)
        fatal("batch_ranking: piece [%lld, %lld) of user %lld off its %lld model positions' "
              "event boundaries (%lld contextual, %d per event)", (long long)a, (long long)z,
              (long long)u, (long long)L, (long long)h, (int)s);
    *e0 = a ? (a - h) / s : 0;
    *e1 = (z - h) / s;
}

void batch_ranking_train(const struct dataset *ds, const struct rsplit *rs,
                         const struct label_conf *lc, int N, int with_ts, uint64_t seed,
                         uint64_t epoch, const int64_t *users, const struct rank_pieces *pc,
                         int64_t B, struct seq_batch *b)
{
    int64_t T = 0, K = 0, a, bb, e0, e1, *sel = NULL, nsel = 0, csel = 0;
    int64_t *cnt = xmalloc((size_t)(B ? B : 1) * sizeof *cnt); /* each user's events */
    for (int64_t i = 0; i < B; i++) {
        rsplit_bounds(rs, ds, users[i], &a, &bb);
        cnt[i] = lc->pools ? pooled(ds, lc, users[i], a, N, &sel, &nsel, &csel) : a < N ? a : N;
        piece_events(pc, i, users[i], cnt[i], &e0, &e1);
        T += e1 - e0;
        K += pc ? pc->p1[i] : 0;
    }
    batch_alloc(b, B, T, with_ts, 0);
    if (lc->pools)
        b->ev = xmalloc((size_t)(T ? T : 1) * sizeof *b->ev);
    if (pc) {
        b->pos0 = xmalloc((size_t)(B ? B : 1) * sizeof *b->pos0);
        b->key_off = xmalloc((size_t)(B + 1) * sizeof *b->key_off);
        b->key_off[0] = 0;
        b->key_ts = with_ts ? xmalloc((size_t)(K ? K : 1) * sizeof *b->key_ts) : NULL;
        b->lead = xmalloc((size_t)(B ? B : 1) * sizeof *b->lead);
        b->lead_ev = xmalloc((size_t)(B ? B : 1) * sizeof *b->lead_ev);
    }
    int64_t *items = NULL, *ts = NULL, cap = 0, t = 0, s0 = 0; /* s0: sel's user start */
    b->offsets[0] = 0;
    for (int64_t i = 0; i < B; i++) {
        const int64_t u = users[i];
        batch_read_user(ds, u, with_ts, &items, &ts, &cap);
        rsplit_bounds(rs, ds, u, &a, &bb);
        /* the user's p-th event: pooled (sel), or the last cnt[i] before the cut */
        const int64_t first = a - cnt[i], *pick = lc->pools ? sel + s0 : NULL;
#define EVENT(p) (pick ? pick[p] : first + (p))
        piece_events(pc, i, u, cnt[i], &e0, &e1);
        for (int64_t p = e0; p < e1; p++, t++) {
            const int64_t e = EVENT(p);
            b->items[t] = items[e];
            if (with_ts)
                b->ts[t] = ts[e];
            if (b->ev)
                b->ev[t] = ds->offsets[u] + e;
            b->keys[t] = batch_token_key(seed, epoch, batch_user_key(ds, u), p);
        }
        if (pc) { /* the keys: model positions [0, p1) */
            const int64_t z = pc->p1[i], *k0 = b->key_off + i;
            b->pos0[i] = pc->p0[i];
            b->key_off[i + 1] = b->key_off[i] + z;
            for (int64_t x = 0; with_ts && x < z; x++)
                b->key_ts[*k0 + x] = ts[EVENT(x < pc->head ? 0 : (x - pc->head) / pc->step)];
        }
        b->users[i] = u;
        b->ev0[i] = ds->offsets[u] + (pick ? (e1 > e0 ? pick[e0] : 0) : first + e0);
        b->offsets[i + 1] = t;
        if (pc) {
            b->lead[i] = e0 > 0 ? b->nlead : -1;
            if (e0 > 0) /* the event before the piece's first */
                b->lead_ev[b->nlead++] = ds->offsets[u] + EVENT(e0 - 1);
        }
#undef EVENT
        s0 += lc->pools ? cnt[i] : 0;
    }
    free(cnt);
    free(items);
    free(ts);
    free(sel);
    batch_ranking_read_labels(ds, lc, b);
    if (pc) { /* the leads' labels: their actions' */
        const size_t nl = (size_t)(b->nlead * lc->n > 0 ? b->nlead * lc->n : 1);
        b->lead_labels = xmalloc(nl * sizeof *b->lead_labels);
        for (int64_t j = 0; j < b->nlead; j++)
            labels_read_events(ds, lc, b->lead_ev[j], 1, b->lead_labels + j * lc->n);
    }
    if (!rs->from)
        return;
    /* the stream's history: its labels are inputs (actions), not targets */
    const size_t nl = (size_t)(T * lc->n > 0 ? T * lc->n : 1);
    b->target_labels = xmalloc(nl * sizeof *b->target_labels);
    memcpy(b->target_labels, b->labels, (size_t)(T * lc->n) * sizeof *b->labels);
    for (int64_t i = 0; i < B; i++) {
        const int64_t e1 = ds->offsets[users[i]] + rs->from[users[i]];
        for (int64_t t = b->offsets[i]; t < b->offsets[i + 1]; t++)
            if (batch_event(b, i, t) < e1)
                for (int k = 0; k < lc->n; k++)
                    b->target_labels[t * lc->n + k] = NAN;
    }
}

/* User u's candidates in the split, at most max_cand; with part (first,
 * count) the count of them from the first-th: events [*cs, *c1), the
 * history the events before *c0 (the first candidate). */
static void eval_candidates(const struct dataset *ds, const struct rsplit *rs, int test,
                            int64_t max_cand, int64_t u, const int64_t *part, int64_t *c0,
                            int64_t *cs, int64_t *c1)
{
    rsplit_candidates(rs, ds, test, u, c0, c1);
    if (max_cand > 0 && *c1 - *c0 > max_cand)
        *c1 = *c0 + max_cand;
    *cs = *c0;
    if (!part)
        return;
    if (part[0] < 0 || part[1] < 1 || part[0] + part[1] > *c1 - *c0)
        fatal("batch_ranking_eval: user %lld: candidates %lld + %lld of %lld", (long long)u,
              (long long)part[0], (long long)part[1], (long long)(*c1 - *c0));
    *cs = *c0 + part[0];
    *c1 = *cs + part[1];
}

void batch_ranking_eval(const struct dataset *ds, const struct rsplit *rs,
                        const struct label_conf *lc, int test, int N, int64_t max_cand,
                        int with_ts, const int64_t *users, const int64_t *part, int64_t B,
                        struct seq_batch *b)
{
    int64_t T = 0, c0, cs, c1, *sel = NULL, nsel = 0, csel = 0;
    int64_t *hn = xmalloc((size_t)(B ? B : 1) * sizeof *hn); /* each history's events */
    for (int64_t i = 0; i < B; i++) {
        eval_candidates(ds, rs, test, max_cand, users[i], part ? part + 2 * i : NULL, &c0, &cs,
                        &c1);
        hn[i] = lc->pools ? pooled(ds, lc, users[i], c0, N - 1, &sel, &nsel, &csel)
                          : c0 < N - 1 ? c0 : N - 1;
        T += hn[i] + c1 - cs;
    }
    batch_alloc(b, B, T, with_ts, 0);
    b->ncand = xmalloc((size_t)(B ? B : 1) * sizeof *b->ncand);
    b->cand_events = 1;
    if (part)
        b->cskip = xmalloc((size_t)(B ? B : 1) * sizeof *b->cskip);
    if (lc->pools)
        b->ev = xmalloc((size_t)(T ? T : 1) * sizeof *b->ev);
    int64_t *items = NULL, *ts = NULL, cap = 0, t = 0, s0 = 0;
    b->offsets[0] = 0;
    for (int64_t i = 0; i < B; i++) {
        const int64_t u = users[i];
        batch_read_user(ds, u, with_ts, &items, &ts, &cap);
        eval_candidates(ds, rs, test, max_cand, u, part ? part + 2 * i : NULL, &c0, &cs, &c1);
        if (c1 <= cs)
            fatal("batch_ranking_eval: user %lld has no candidate", (long long)u);
        dataset_raw_numbers(ds, items, c1); /* a raw dataset: item numbers */
        const int64_t first = c0 - hn[i];
        for (int64_t j = 0; j < hn[i] + c1 - cs; j++, t++) {
            /* the history (pooled, or the last events before c0), then the candidates */
            const int64_t e = j >= hn[i] ? cs + j - hn[i] : lc->pools ? sel[s0 + j] : first + j;
            b->items[t] = items[e];
            if (with_ts)
                b->ts[t] = ts[e];
            if (b->ev)
                b->ev[t] = ds->offsets[u] + e;
            b->keys[t] = 0; /* no dropout in evaluation */
        }
        b->users[i] = u;
        b->ev0[i] = ds->offsets[u] + (lc->pools ? (hn[i] ? sel[s0] : cs) : first);
        b->ncand[i] = c1 - cs;
        if (part)
            b->cskip[i] = cs - c0;
        b->offsets[i + 1] = t;
        s0 += lc->pools ? hn[i] : 0;
    }
    free(hn);
    free(sel);
    free(items);
    free(ts);
    batch_ranking_read_labels(ds, lc, b);
}

void batch_ranking_pairs(const struct dataset *ds, const struct label_conf *lc, int N, int with_ts,
                         const int64_t *users, int64_t B, const int64_t *coff,
                         const int64_t *citems, const int64_t *cts, struct seq_batch *b)
{
    int64_t T = 0, *sel = NULL, nsel = 0, csel = 0;
    int64_t *hn = xmalloc((size_t)(B ? B : 1) * sizeof *hn); /* each history's events */
    for (int64_t i = 0; i < B; i++) {
        const int64_t L = dataset_length(ds, users[i]);
        hn[i] = lc->pools ? pooled(ds, lc, users[i], L, N - 1, &sel, &nsel, &csel)
                          : L < N - 1 ? L : N - 1;
        T += hn[i] + coff[i + 1] - coff[i];
    }
    batch_alloc(b, B, T, with_ts, 0);
    b->ncand = xmalloc((size_t)(B ? B : 1) * sizeof *b->ncand);
    b->cand_events = 0;
    if (lc->pools)
        b->ev = xmalloc((size_t)(T ? T : 1) * sizeof *b->ev);
    int64_t *items = NULL, *ts = NULL, cap = 0, t = 0, s0 = 0;
    b->offsets[0] = 0;
    for (int64_t i = 0; i < B; i++) {
        const int64_t u = users[i], L = dataset_length(ds, u);
        if (L < 1)
            fatal("batch_ranking_pairs: user %lld has no events", (long long)u);
        batch_read_user(ds, u, with_ts, &items, &ts, &cap);
        dataset_raw_numbers(ds, items, L); /* a raw dataset: item numbers, as citems */
        const int64_t first = L - hn[i];
        for (int64_t j = 0; j < hn[i]; j++, t++) {
            const int64_t e = lc->pools ? sel[s0 + j] : first + j;
            b->items[t] = items[e];
            if (with_ts)
                b->ts[t] = ts[e];
            if (b->ev)
                b->ev[t] = ds->offsets[u] + e;
            b->keys[t] = 0;
        }
        for (int64_t j = coff[i]; j < coff[i + 1]; j++, t++) {
            b->items[t] = citems[j];
            if (with_ts)
                b->ts[t] = cts ? cts[j] : ts[L - 1];
            if (b->ev)
                b->ev[t] = -1; /* not an event of the file */
            b->keys[t] = 0;
        }
        b->users[i] = u;
        b->ev0[i] = ds->offsets[u] + (lc->pools ? (hn[i] ? sel[s0] : 0) : first);
        b->ncand[i] = coff[i + 1] - coff[i];
        b->offsets[i + 1] = t;
        s0 += lc->pools ? hn[i] : 0;
    }
    free(hn);
    free(sel);
    free(items);
    free(ts);
    batch_ranking_read_labels(ds, lc, b);
}
