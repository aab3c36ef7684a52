/* balance: sequence-to-rank assignment; see balance.h. */
#include "balance/balance.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"

int balance_parse(const char *name)
{
    if (!strcmp(name, "none")) return BALANCE_NONE;
    if (!strcmp(name, "lpt")) return BALANCE_LPT;
    if (!strcmp(name, "kk")) return BALANCE_KK;
    return -1;
}

const char *balance_name(enum balance_mode m)
{
    return m == BALANCE_NONE ? "none" : m == BALANCE_LPT ? "lpt" : "kk";
}

static const double *g_cost; /* for the sorts below */

static int by_cost_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    if (g_cost[x] != g_cost[y])
        return g_cost[x] > g_cost[y] ? -1 : 1;
    return (x > y) - (x < y);
}

/* Indexes 0..n-1 sorted by cost descending (ties by index). */
static int64_t *sorted_by_cost(const double *cost, int64_t n)
{
    int64_t *ord = xmalloc((size_t)(n ? n : 1) * sizeof *ord);
    for (int64_t i = 0; i < n; i++)
        ord[i] = i;
    g_cost = cost;
    qsort(ord, (size_t)n, sizeof *ord, by_cost_desc);
    return ord;
}

static int64_t quota(int64_t n, int P, int r) { return n * (r + 1) / P - n * r / P; }

static void assign_lpt(const double *cost, int64_t n, int P, const double *speed,
                       int equal_count, int *owner)
{
    int64_t *ord = sorted_by_cost(cost, n);
    double *load = xcalloc((size_t)P, sizeof *load);
    int64_t *count = xcalloc((size_t)P, sizeof *count);
    for (int64_t k = 0; k < n; k++) {
        int64_t i = ord[k];
        int best = -1;
        double best_t = 0;
        for (int r = 0; r < P; r++) {
            if (equal_count && count[r] >= quota(n, P, r))
                continue;
            double t = (load[r] + cost[i]) / (speed ? speed[r] : 1.0);
            if (best < 0 || t < best_t) {
                best = r;
                best_t = t;
            }
        }
        owner[i] = best;
        load[best] += cost[i];
        count[best]++;
    }
    free(ord);
    free(load);
    free(count);
}

/* Karmarkar-Karp works on partial partitions of P subsets. They are kept
 * sparse: only the k non-empty subsets are stored (the other P - k are
 * empty), so memory stays O(n) even for P = 4096. The k subsets are a
 * binary min-heap (subs[0] the lightest, in the order of by_sum_desc
 * reversed) with the heaviest sum beside it: most merges add one sequence
 * to a partition (its lightest subset takes it, or a new subset does),
 * O(log k); a merge of two partitions of several subsets sorts both. The
 * order is total (ties by first item), so the subsets' sorted order, and
 * the assignment, do not depend on how they are stored. */
struct kk_sub {
    double sum;
    int64_t *items, len, cap;
};

struct kk_part {
    int64_t k, cap;      /* subsets, room for them in subs */
    struct kk_sub *subs; /* [k] a min-heap */
    double top;          /* the heaviest subset's sum */
};

static double kk_spread(const struct kk_part *p, int P)
{
    return p->k == 0 ? 0 : p->top - (p->k == P ? p->subs[0].sum : 0.0);
}

static int by_sum_desc(const void *a, const void *b)
{
    const struct kk_sub *x = a, *y = b;
    if (x->sum != y->sum)
        return x->sum > y->sum ? -1 : 1;
    /* ties: by first item, for determinism */
    int64_t ix = x->len ? x->items[0] : -1, iy = y->len ? y->items[0] : -1;
    return (ix > iy) - (ix < iy);
}

/* Append the items of b to a (the longer list absorbs the shorter). */
static void sub_absorb(struct kk_sub *a, struct kk_sub *b)
{
    if (b->len > a->len) {
        struct kk_sub t = *a;
        *a = *b;
        *b = t;
    }
    if (a->len + b->len > a->cap) {
        a->cap = 2 * (a->len + b->len);
        a->items = xrealloc(a->items, (size_t)a->cap * sizeof *a->items);
    }
    memcpy(a->items + a->len, b->items, (size_t)b->len * sizeof *b->items);
    a->len += b->len;
    a->sum += b->sum;
    free(b->items);
}

/* Merge the sorted run y[ny] into the sorted run x[nx] in place (x has
 * room for nx + ny), by sum descending, x's first on ties: from the back,
 * so that x's entries heavier than all of y's do not move. */
static int64_t merge_into(struct kk_sub *x, int64_t nx, const struct kk_sub *y, int64_t ny)
{
    int64_t i = nx - 1, j = ny - 1, out = nx + ny - 1;
    while (j >= 0) {
        const int x_after = i >= 0 && by_sum_desc(&x[i], &y[j]) > 0;
        x[out--] = x_after ? x[i--] : y[j--];
    }
    return nx + ny;
}

/* the min-heap of subsets: x lighter than y */
static int lighter(const struct kk_sub *x, const struct kk_sub *y) { return by_sum_desc(x, y) > 0; }

static void sub_up(struct kk_sub *h, int64_t i)
{
    while (i > 0 && lighter(&h[i], &h[(i - 1) / 2])) {
        struct kk_sub t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static void sub_down(struct kk_sub *h, int64_t k, int64_t i)
{
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < k && lighter(&h[l], &h[m]))
            m = l;
        if (r < k && lighter(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        struct kk_sub t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* p's subsets sorted heaviest first (no longer a heap) */
static void part_sort_desc(struct kk_part *p)
{
    qsort(p->subs, (size_t)p->k, sizeof *p->subs, by_sum_desc);
}

/* room for k subsets in p */
static void part_room(struct kk_part *p, int64_t k, int P)
{
    if (k > p->cap) {
        p->cap = k < P / 2 ? 2 * k : P;
        p->subs = xrealloc(p->subs, (size_t)p->cap * sizeof *p->subs);
    }
}

/* a's s-th heaviest subset with b's (P-1-s)-th heaviest; returns the merge.
 * The pairing is symmetric, so b is taken as the one with fewer subsets.
 * b of one subset (most merges): it joins a's lightest subset when a has
 * P, else it is a new subset: a heap update. Else both are sorted: a's
 * heaviest P - b.k subsets are untouched, the other b.k entries are sorted
 * and merged into them in place, and the result (heaviest first) is
 * reversed into a heap. */
static struct kk_part kk_merge(struct kk_part *a, struct kk_part *b, int P)
{
    if (b->k > a->k) {
        struct kk_part *t = a;
        a = b;
        b = t;
    }
    struct kk_part m = *a;
    if (b->k == 1) {
        struct kk_sub x = b->subs[0];
        if (m.k == P) { /* the lightest takes it */
            struct kk_sub low = m.subs[0];
            sub_absorb(&low, &x);
            m.subs[0] = low;
            sub_down(m.subs, m.k, 0);
            x = low;
        } else {
            part_room(&m, m.k + 1, P);
            m.subs[m.k++] = x;
            sub_up(m.subs, m.k - 1);
        }
        if (x.sum > m.top)
            m.top = x.sum;
        free(b->subs);
        return m;
    }
    part_sort_desc(a);
    part_sort_desc(b);
    m = *a;
    int64_t keep = a->k < P - b->k ? a->k : P - b->k; /* untouched prefix of a */
    struct kk_sub *tail = xmalloc((size_t)(b->k ? b->k : 1) * sizeof *tail);
    int64_t nt = 0;
    for (int64_t s = keep; s < P; s++) {
        int64_t t = P - 1 - s;
        int has_a = s < a->k, has_b = t < b->k;
        if (!has_a && !has_b)
            continue;
        struct kk_sub x = has_a ? a->subs[s] : b->subs[t];
        if (has_a && has_b)
            sub_absorb(&x, &b->subs[t]);
        tail[nt++] = x;
    }
    qsort(tail, (size_t)nt, sizeof *tail, by_sum_desc);
    part_room(&m, keep + nt, P);
    m.k = merge_into(m.subs, keep, tail, nt);
    m.top = m.subs[0].sum;
    for (int64_t i = 0, j = m.k - 1; i < j; i++, j--) { /* lightest first: a heap */
        struct kk_sub t = m.subs[i];
        m.subs[i] = m.subs[j];
        m.subs[j] = t;
    }
    free(tail);
    free(b->subs);
    return m;
}

/* max-heap of partitions by spread */
struct kk_heap {
    struct kk_part *v;
    int64_t n;
    int P;
};

static void heap_swap(struct kk_heap *h, int64_t i, int64_t j)
{
    struct kk_part t = h->v[i];
    h->v[i] = h->v[j];
    h->v[j] = t;
}

static void heap_push(struct kk_heap *h, struct kk_part p)
{
    int64_t i = h->n++;
    h->v[i] = p;
    while (i > 0 && kk_spread(&h->v[(i - 1) / 2], h->P) < kk_spread(&h->v[i], h->P)) {
        heap_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static struct kk_part heap_pop(struct kk_heap *h)
{
    struct kk_part top = h->v[0];
    h->v[0] = h->v[--h->n];
    for (int64_t i = 0;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && kk_spread(&h->v[l], h->P) > kk_spread(&h->v[m], h->P)) m = l;
        if (r < h->n && kk_spread(&h->v[r], h->P) > kk_spread(&h->v[m], h->P)) m = r;
        if (m == i)
            break;
        heap_swap(h, i, m);
        i = m;
    }
    return top;
}

static void assign_kk(const double *cost, int64_t n, int P, int *owner)
{
    int64_t *ord = sorted_by_cost(cost, n);
    int64_t np = n;
    struct kk_heap h = {.v = xcalloc((size_t)(np ? np : 1), sizeof *h.v), .n = 0, .P = P};
    for (int64_t q = 0; q < np; q++) {
        /* each sequence starts as a partition of one non-empty subset */
        struct kk_part p = {.k = 1, .cap = 1, .subs = xcalloc(1, sizeof(struct kk_sub)),
                            .top = cost[ord[q]]};
        p.subs[0].items = xmalloc(sizeof(int64_t));
        p.subs[0].items[0] = ord[q];
        p.subs[0].len = p.subs[0].cap = 1;
        p.subs[0].sum = cost[ord[q]];
        heap_push(&h, p);
    }
    while (h.n > 1) {
        struct kk_part a = heap_pop(&h), b = heap_pop(&h);
        heap_push(&h, kk_merge(&a, &b, P));
    }
    if (h.n == 1) {
        struct kk_part f = h.v[0];
        part_sort_desc(&f);
        for (int64_t s = 0; s < f.k; s++) { /* subset s (heaviest first) -> rank s */
            for (int64_t j = 0; j < f.subs[s].len; j++)
                owner[f.subs[s].items[j]] = (int)s;
            free(f.subs[s].items);
        }
        free(f.subs);
    }
    free(h.v);
    free(ord);
}

void balance_assign(enum balance_mode mode, int equal_count, const double *cost, int64_t n,
                    int P, const double *speed, int *owner)
{
    if (mode == BALANCE_NONE || P == 1) {
        for (int r = 0; r < P; r++)
            for (int64_t i = n * r / P; i < n * (r + 1) / P; i++)
                owner[i] = r;
    } else if (mode == BALANCE_LPT || speed || equal_count) {
        /* unequal speeds: weighted greedy (kk has no weighted form here);
         * equal counts: the quota-constrained greedy, because balanced
         * differencing (one sequence per rank from each group of P) is poor
         * on heavy tails: bubble 0.20 against 0.001 for 32 lognormal
         * sequences per rank (tests/test_balance) */
        assign_lpt(cost, n, P, speed, equal_count, owner);
    } else {
        assign_kk(cost, n, P, owner);
    }
}

void balance_bubble(const double *cost, int64_t n, int P, const int *owner, const double *speed,
                    double *bubble, double *imbalance)
{
    double *t = xcalloc((size_t)P, sizeof *t);
    for (int64_t i = 0; i < n; i++)
        t[owner[i]] += cost[i];
    double T = 0, sum = 0;
    for (int r = 0; r < P; r++) {
        t[r] /= speed ? speed[r] : 1.0;
        if (t[r] > T)
            T = t[r];
        sum += t[r];
    }
    *bubble = T > 0 ? (P * T - sum) / (P * T) : 0.0;
    *imbalance = sum > 0 ? T / (sum / P) : 1.0;
    free(t);
}
