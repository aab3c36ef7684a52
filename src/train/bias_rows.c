/* bias_rows: model.bias's tables as rows sharded over dp, updated
 * sparsely with the dense AdamW's arithmetic; see bias_rows.h. */
#include "train/bias_rows.h"

#include <stdlib.h>
#include <string.h>

#include "backend/adamw_elem.h"
#include "base/check.h"
#include "model/task_bias.h"

struct bias_rows {
    struct comm *c;
    int P, me, K;
    int64_t items, users, rows; /* rows = items + users */
    int64_t nloc;               /* this rank's slots */
    float *w, *m, *v;           /* [nloc, K] */
    int64_t *stamp;             /* [nloc] the step each row is at */
    int64_t *mark;              /* [nloc] the row's index among the step's touched, or -1 */
    const int64_t *imap, *umap; /* bias_rows_map's, or NULL */
    int64_t nimap, numap;
    float b1, b2, eps;
    int64_t t;                  /* the optimizer's steps applied */
    int64_t h0;                 /* the history holds steps h0 + 1 .. t */
    float *hlr, *hc1, *hc2;     /* [hcap] each step's lr and corrections */
    int64_t hcap;
    /* the last lookup, the requester's side */
    int64_t n, nu, ucap, ncap;
    int64_t *uniq, *inv;        /* [ucap] unique rows (by owner); [2 ncap] each token's */
    int64_t *seen;              /* [ucap] the unique rows as first seen, then their places */
    int64_t *hk, *hv, kcap;     /* [kcap] the de-duplication's hash table: row, index */
    float *row, *grad;          /* [ucap, K] the rows, the gradients */
    int64_t *sc, *sd, *rc, *rd; /* [P] counts and displacements in rows */
    int train;                  /* its gradients follow */
    /* the owner's side */
    int64_t nr, rcap;
    int64_t *rid, *rtouch;      /* [rcap] the rows asked, their touched index */
    float *rrow;                /* [rcap, K] rows served, then gradients received */
    int64_t nt, tcap;
    int64_t *tslot;             /* [tcap] the touched slots */
    float *tg;                  /* [tcap, K] their summed gradients */
    int pushed;                 /* tg holds this step's sums */
    void (*fetch)(void *arg);   /* a push deferred (bias_rows_defer), or NULL */
    void *fetch_arg;
    int64_t bytes, steps;
};

struct bias_rows *bias_rows_init(struct comm *c, int K, int64_t items, int64_t users, float b1,
                                 float b2, float eps, int64_t t)
{
    struct bias_rows *b = xcalloc(1, sizeof *b);
    b->c = c;
    b->P = c->g[COMM_DP].size;
    b->me = c->g[COMM_DP].rank;
    b->K = K;
    b->items = items;
    b->users = users;
    b->rows = items + users;
    b->nloc = b->rows > b->me ? (b->rows - b->me + b->P - 1) / b->P : 0;
    const size_t n = (size_t)(b->nloc ? b->nloc : 1);
    b->w = xcalloc(n * (size_t)K, sizeof *b->w);
    b->m = xcalloc(n * (size_t)K, sizeof *b->m);
    b->v = xcalloc(n * (size_t)K, sizeof *b->v);
    b->stamp = xmalloc(n * sizeof *b->stamp);
    b->mark = xmalloc(n * sizeof *b->mark);
    for (int64_t s = 0; s < b->nloc; s++) {
        b->stamp[s] = t;
        b->mark[s] = -1;
    }
    b->b1 = b1;
    b->b2 = b2;
    b->eps = eps;
    b->t = b->h0 = t;
    b->sc = xcalloc((size_t)(4 * b->P), sizeof *b->sc);
    b->sd = b->sc + b->P;
    b->rc = b->sd + b->P;
    b->rd = b->rc + b->P;
    /* one of everything: a lookup of no token passes real buffers on */
    b->ncap = b->ucap = b->rcap = b->tcap = 1;
    b->seen = xcalloc(1, sizeof *b->seen);
    b->inv = xcalloc(2, sizeof *b->inv);
    b->uniq = xcalloc(1, sizeof *b->uniq);
    b->row = xcalloc((size_t)K, sizeof *b->row);
    b->grad = xcalloc((size_t)K, sizeof *b->grad);
    b->rid = xcalloc(1, sizeof *b->rid);
    b->rtouch = xcalloc(1, sizeof *b->rtouch);
    b->rrow = xcalloc((size_t)K, sizeof *b->rrow);
    b->tslot = xcalloc(1, sizeof *b->tslot);
    b->tg = xcalloc((size_t)K, sizeof *b->tg);
    return b;
}

void bias_rows_free(struct bias_rows *b)
{
    if (!b)
        return;
    free(b->w);
    free(b->m);
    free(b->v);
    free(b->stamp);
    free(b->mark);
    free(b->hlr);
    free(b->hc1);
    free(b->hc2);
    free(b->seen);
    free(b->hk);
    free(b->hv);
    free(b->uniq);
    free(b->inv);
    free(b->row);
    free(b->grad);
    free(b->sc);
    free(b->rid);
    free(b->rtouch);
    free(b->rrow);
    free(b->tslot);
    free(b->tg);
    free(b);
}

/* Slot s brought to step b->t: steps stamp + 1 .. t replayed with a zero
 * gradient, value by value as the dense update does them. */
static void catch_up(struct bias_rows *b, int64_t s)
{
    const int K = b->K;
    float *w = b->w + s * K, *m = b->m + s * K, *v = b->v + s * K;
    for (int64_t u = b->stamp[s] + 1; u <= b->t; u++) {
        const int64_t h = u - b->h0 - 1;
        for (int k = 0; k < K; k++)
            adamw_elem(w + k, m + k, v + k, 0.0f, b->hlr[h], b->b1, b->b2, b->eps, 0.0f,
                       b->hc1[h], b->hc2[h]);
    }
    b->stamp[s] = b->t;
}

/* Every slot up to date; the history is then empty. */
static void catch_up_all(struct bias_rows *b)
{
    for (int64_t s = 0; s < b->nloc; s++)
        if (b->stamp[s] < b->t)
            catch_up(b, s);
    b->h0 = b->t;
}

static int64_t grow(int64_t want, int64_t have) { return want > have ? want + want / 2 + 16 : have; }

static void displs(const int64_t *counts, int64_t *d, int P);

/* De-duplicate the 2n rows of the tokens: b->uniq [nu] the unique rows
 * grouped by owner (rank order; within an owner, first seen first),
 * b->inv [2n] each token's index among them, b->sc [P] the rows per
 * owner. Linear: a hash table of at least 4n slots (the order of the
 * rows does not matter to the sums: each row's gradient is summed in
 * token order all the same). */
static int64_t dedup(struct bias_rows *b, const int64_t *items, const int64_t *users, int64_t n)
{
    const int P = b->P;
    int64_t cap = 16;
    while (cap < 4 * n)
        cap *= 2;
    if (cap > b->kcap) {
        b->kcap = cap;
        b->hk = xrealloc(b->hk, (size_t)cap * sizeof *b->hk);
        b->hv = xrealloc(b->hv, (size_t)cap * sizeof *b->hv);
    }
    memset(b->hk, 0xff, (size_t)cap * sizeof *b->hk); /* -1: empty */
    int64_t u = 0;
    for (int64_t i = 0; i < 2 * n; i++) {
        int64_t id = i < n ? items[i] : users[i - n];
        const int64_t *map = i < n ? b->imap : b->umap, nmap = i < n ? b->nimap : b->numap;
        if (map && (id < 0 || id >= nmap))
            fatal("model.bias: %s %lld of token %lld is outside the window's 0..%lld",
                  i < n ? "item" : "user", (long long)id, (long long)(i % (n ? n : 1)),
                  (long long)nmap - 1);
        if (map)
            id = map[id];
        const int64_t lim = i < n ? b->items : b->users;
        if (id < 0 || id >= lim)
            fatal("model.bias: %s %lld of token %lld is outside 0..%lld", i < n ? "item" : "user",
                  (long long)id, (long long)(i % (n ? n : 1)), (long long)lim - 1);
        const int64_t r = i < n ? id : b->items + id;
        uint64_t h = ((uint64_t)r * 0x9E3779B97F4A7C15ull) >> 17;
        for (;; h++) {
            const int64_t at = (int64_t)(h & (uint64_t)(cap - 1));
            if (b->hk[at] == r) {
                b->inv[i] = b->hv[at];
                break;
            }
            if (b->hk[at] < 0) {
                b->hk[at] = r;
                b->hv[at] = b->inv[i] = u;
                b->seen[u++] = r;
                break;
            }
        }
    }
    memset(b->sc, 0, (size_t)P * sizeof *b->sc);
    for (int64_t j = 0; j < u; j++)
        b->sc[b->seen[j] % P]++;
    displs(b->sc, b->sd, P);
    int64_t *next = b->rd; /* scratch until the counts come back */
    memcpy(next, b->sd, (size_t)P * sizeof *next);
    for (int64_t j = 0; j < u; j++) {
        const int64_t at = next[b->seen[j] % P]++;
        b->uniq[at] = b->seen[j];
        b->seen[j] = at;
    }
    for (int64_t i = 0; i < 2 * n; i++)
        b->inv[i] = b->seen[b->inv[i]];
    return u;
}

/* Bytes of counts[P] rows of `each` bytes to ranks other than this one. */
static int64_t to_others(const struct bias_rows *b, const int64_t *counts, int64_t each)
{
    int64_t s = 0;
    for (int p = 0; p < b->P; p++)
        if (p != b->me)
            s += counts[p] * each;
    return s;
}

static void displs(const int64_t *counts, int64_t *d, int P)
{
    d[0] = 0;
    for (int p = 1; p < P; p++)
        d[p] = d[p - 1] + counts[p - 1];
}

/* The owner's side of a lookup: each of the nr rows asked (rid) brought
 * up to date and copied to rrow [nr, K]; train: marked touched, rtouch [nr]
 * their index among the touched slots. */
static void serve(struct bias_rows *b, int64_t nr, int train)
{
    const int P = b->P, K = b->K;
    for (int64_t j = 0; j < nr; j++) {
        const int64_t s = b->rid[j] / P;
        if (b->rid[j] % P != b->me || s >= b->nloc)
            fatal("model.bias: row %lld asked of rank %d, which does not hold it",
                  (long long)b->rid[j], b->me);
        if (b->stamp[s] < b->t)
            catch_up(b, s);
        memcpy(b->rrow + j * K, b->w + s * K, (size_t)K * sizeof *b->rrow);
        if (!train)
            continue;
        if (b->mark[s] < 0) {
            b->mark[s] = b->nt;
            b->tslot[b->nt++] = s;
        }
        b->rtouch[j] = b->mark[s];
    }
}

const float *bias_rows_lookup(struct bias_rows *b, int64_t n, const int64_t *items,
                              const int64_t *users, int train, const int64_t **inv_item,
                              const int64_t **inv_user, int64_t *nu)
{
    const int P = b->P, K = b->K;
    /* a step whose update was dropped (the guard) leaves its marks */
    for (int64_t i = 0; i < b->nt; i++)
        b->mark[b->tslot[i]] = -1;
    b->nt = 0;
    b->pushed = 0;
    b->fetch = NULL;
    b->train = train;
    if (n > b->ncap) {
        b->ncap = grow(n, b->ncap);
        b->inv = xrealloc(b->inv, (size_t)(2 * b->ncap) * sizeof *b->inv);
    }
    b->n = n;
    if (2 * n > b->ucap) {
        b->ucap = grow(2 * n, b->ucap);
        b->uniq = xrealloc(b->uniq, (size_t)b->ucap * sizeof *b->uniq);
        b->seen = xrealloc(b->seen, (size_t)b->ucap * sizeof *b->seen);
        b->row = xrealloc(b->row, (size_t)(b->ucap * K) * sizeof *b->row);
        b->grad = xrealloc(b->grad, (size_t)(b->ucap * K) * sizeof *b->grad);
    }
    const int64_t u = b->nu = dedup(b, items, users, n);
    /* the rows to their owners */
    comm_alltoall_i64(b->c, COMM_DP, b->sc, b->rc, COMM_PH_BIAS);
    displs(b->rc, b->rd, P);
    const int64_t nr = b->rd[P - 1] + b->rc[P - 1];
    if (nr > b->rcap) {
        b->rcap = grow(nr, b->rcap);
        b->rid = xrealloc(b->rid, (size_t)b->rcap * sizeof *b->rid);
        b->rtouch = xrealloc(b->rtouch, (size_t)b->rcap * sizeof *b->rtouch);
        b->rrow = xrealloc(b->rrow, (size_t)(b->rcap * K) * sizeof *b->rrow);
    }
    if (train && nr > b->tcap) {
        b->tcap = grow(nr, b->tcap);
        b->tslot = xrealloc(b->tslot, (size_t)b->tcap * sizeof *b->tslot);
        b->tg = xrealloc(b->tg, (size_t)(b->tcap * K) * sizeof *b->tg);
    }
    b->nr = nr;
    comm_alltoallv(b->c, COMM_DP, COMM_I64, b->uniq, b->sc, b->sd, b->rid, b->rc, b->rd,
                   COMM_PH_BIAS);
    serve(b, nr, train);
    int64_t *sk = xmalloc((size_t)(4 * P) * sizeof *sk), *sdk = sk + P, *rk = sdk + P,
            *rdk = rk + P;
    for (int p = 0; p < P; p++) {
        sk[p] = b->rc[p] * K;
        sdk[p] = b->rd[p] * K;
        rk[p] = b->sc[p] * K;
        rdk[p] = b->sd[p] * K;
    }
    comm_alltoallv(b->c, COMM_DP, COMM_F32, b->rrow, sk, sdk, b->row, rk, rdk, COMM_PH_BIAS);
    free(sk);
    b->bytes += 8 * (P - 1) + to_others(b, b->sc, 8) + to_others(b, b->rc, 4 * K);
    if (train) {
        memset(b->grad, 0, (size_t)(u * K) * sizeof *b->grad);
        b->steps++;
    }
    *inv_item = b->inv;
    *inv_user = b->inv + n;
    *nu = u;
    return b->row;
}

float *bias_rows_grads(struct bias_rows *b) { return b->grad; }

void bias_rows_push(struct bias_rows *b)
{
    const int P = b->P, K = b->K;
    if (!b->train)
        fatal("model.bias: gradients pushed after a lookup that only reads");
    int64_t *sk = xmalloc((size_t)(4 * P) * sizeof *sk), *sdk = sk + P, *rk = sdk + P,
            *rdk = rk + P;
    for (int p = 0; p < P; p++) {
        sk[p] = b->sc[p] * K;
        sdk[p] = b->sd[p] * K;
        rk[p] = b->rc[p] * K;
        rdk[p] = b->rd[p] * K;
    }
    comm_alltoallv(b->c, COMM_DP, COMM_F32, b->grad, sk, sdk, b->rrow, rk, rdk, COMM_PH_BIAS);
    free(sk);
    b->bytes += to_others(b, b->sc, 4 * K);
    /* summed per row over the requesters, in rank order */
    memset(b->tg, 0, (size_t)(b->nt * K) * sizeof *b->tg);
    for (int64_t j = 0; j < b->nr; j++) {
        float *g = b->tg + b->rtouch[j] * K;
        const float *x = b->rrow + j * K;
        for (int k = 0; k < K; k++)
            g[k] += x[k];
    }
    b->pushed = 1;
}

void bias_rows_defer(struct bias_rows *b, void (*fetch)(void *arg), void *arg)
{
    b->fetch = fetch;
    b->fetch_arg = arg;
}

/* A deferred push, now. */
static void push_deferred(struct bias_rows *b)
{
    if (!b->fetch)
        return;
    void (*fetch)(void *) = b->fetch;
    b->fetch = NULL;
    fetch(b->fetch_arg);
    bias_rows_push(b);
}

float *bias_rows_owned_grads(struct bias_rows *b, int64_t *n)
{
    push_deferred(b);
    *n = b->pushed ? b->nt * b->K : 0;
    return b->tg;
}

double bias_rows_sumsq(struct bias_rows *b)
{
    push_deferred(b);
    double s = 0;
    for (int64_t i = 0; b->pushed && i < b->nt * b->K; i++)
        s += (double)b->tg[i] * b->tg[i];
    return comm_allreduce_sum_f64(b->c, COMM_DP, s);
}

void bias_rows_apply(struct bias_rows *b, int scaled, float scale, float lr, int64_t t)
{
    const int K = b->K;
    push_deferred(b);
    if (t != b->t + 1)
        fatal("model.bias: step %lld applied to rows at step %lld", (long long)t,
              (long long)b->t);
    if (t - b->h0 > b->hcap) {
        b->hcap = grow(t - b->h0, b->hcap);
        b->hlr = xrealloc(b->hlr, (size_t)b->hcap * sizeof *b->hlr);
        b->hc1 = xrealloc(b->hc1, (size_t)b->hcap * sizeof *b->hc1);
        b->hc2 = xrealloc(b->hc2, (size_t)b->hcap * sizeof *b->hc2);
    }
    const int64_t h = t - b->h0 - 1;
    b->hlr[h] = lr;
    adamw_corrections(b->b1, b->b2, t, &b->hc1[h], &b->hc2[h]);
    b->t = t;
    for (int64_t i = 0; b->pushed && i < b->nt; i++) {
        const int64_t s = b->tslot[i];
        float *g = b->tg + i * K, *w = b->w + s * K, *m = b->m + s * K, *v = b->v + s * K;
        for (int k = 0; scaled && k < K; k++)
            g[k] *= scale;
        for (int k = 0; k < K; k++)
            adamw_elem(w + k, m + k, v + k, g[k], lr, b->b1, b->b2, b->eps, 0.0f, b->hc1[h],
                       b->hc2[h]);
        b->stamp[s] = t;
        b->mark[s] = -1;
    }
    b->nt = 0;
    b->pushed = 0;
}

void bias_rows_full(struct bias_rows *b, int part, int all_ranks, float *item, float *user)
{
    const int P = b->P, K = b->K;
    catch_up_all(b);
    const float *mine = part == 0 ? b->w : part == 1 ? b->m : b->v;
    int64_t *cnt = xmalloc((size_t)P * sizeof *cnt);
    for (int p = 0; p < P; p++)
        cnt[p] = (b->rows > p ? (b->rows - p + P - 1) / P : 0) * K;
    const int here = all_ranks || b->me == 0;
    float *all = here ? xmalloc((size_t)(b->rows * K + 1) * sizeof *all) : NULL;
    if (all_ranks)
        comm_allgatherv(b->c, COMM_DP, COMM_F32, mine, b->nloc * K, all, cnt, COMM_PH_OTHER);
    else
        comm_gatherv(b->c, COMM_DP, COMM_F32, mine, b->nloc * K, all, cnt, 0);
    int64_t off = 0;
    for (int p = 0; !here && p < P; p++)
        off += cnt[p]; /* nothing to lay out */
    for (int p = 0; here && p < P; p++) { /* rank p's slot s: row s P + p */
        for (int64_t s = 0; s < cnt[p] / K; s++) {
            const int64_t r = s * P + p;
            float *dst = r < b->items ? item + r * K : user + (r - b->items) * K;
            memcpy(dst, all + off + s * K, (size_t)K * sizeof *dst);
        }
        off += cnt[p];
    }
    free(all);
    free(cnt);
}

void bias_rows_load(struct bias_rows *b, int part, const float *item, const float *user)
{
    const int K = b->K;
    catch_up_all(b);
    float *mine = part == 0 ? b->w : part == 1 ? b->m : b->v;
    for (int64_t s = 0; s < b->nloc; s++) {
        const int64_t r = s * b->P + b->me;
        const float *src = r < b->items ? item + r * K : user + (r - b->items) * K;
        memcpy(mine + s * K, src, (size_t)K * sizeof *mine);
    }
}

void bias_rows_set(struct bias_rows *b, const float *item, const float *user)
{
    bias_rows_load(b, 0, item, user);
}

void bias_rows_restart(struct bias_rows *b, int64_t t)
{
    for (int64_t s = 0; s < b->nloc; s++)
        b->stamp[s] = t;
    b->t = b->h0 = t;
}

void bias_rows_traffic_take(struct bias_rows *b, int64_t *bytes, int64_t *steps)
{
    *bytes = b->bytes;
    *steps = b->steps;
    b->bytes = b->steps = 0;
}

/* --- model/task_bias.h's view ----------------------------------------------------- */

static const float *hook_lookup(void *ctx, int64_t n, const int64_t *items, const int64_t *users,
                                int train, const int64_t **inv_item, const int64_t **inv_user,
                                int64_t *nu)
{
    return bias_rows_lookup(ctx, n, items, users, train, inv_item, inv_user, nu);
}
static float *hook_grads(void *ctx) { return bias_rows_grads(ctx); }
static void hook_push(void *ctx) { bias_rows_push(ctx); }
static void hook_defer(void *ctx, void (*fetch)(void *arg), void *arg)
{
    bias_rows_defer(ctx, fetch, arg);
}
static void hook_set(void *ctx, const float *item, const float *user)
{
    bias_rows_set(ctx, item, user);
}
static void hook_get(void *ctx, float *item, float *user)
{
    bias_rows_full(ctx, 0, 1, item, user);
}

void bias_rows_hooks(struct bias_rows *b, struct rank_bias_rows *h)
{
    *h = (struct rank_bias_rows){.ctx = b, .lookup = hook_lookup, .grads = hook_grads,
                                 .push = hook_push, .defer = hook_defer, .set = hook_set,
                                 .get = hook_get};
}

void bias_rows_map(struct bias_rows *b, const int64_t *imap, int64_t ni, const int64_t *umap,
                   int64_t nu)
{
    if (!b)
        return;
    b->imap = imap;
    b->nimap = ni;
    b->umap = umap;
    b->numap = nu;
}
