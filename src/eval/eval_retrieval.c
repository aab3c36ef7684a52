/* eval_retrieval: distributed full ranking of the item table and the ranking
 * metrics; see eval_retrieval.h. */
#include "eval/eval_retrieval.h"
#include "model/loss.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"

/* One scored candidate of a top-K list. */
struct cand {
    float s;
    int64_t id; /* 0 = padding */
};

/* a ranks below b: lower score, or equal score and larger id */
static int cand_worse(struct cand a, struct cand b)
{
    return a.s < b.s || (a.s == b.s && a.id > b.id);
}

/* qsort order: best first, padding last */
static int cand_cmp(const void *pa, const void *pb)
{
    const struct cand *a = pa, *b = pb;
    if ((a->id == 0) != (b->id == 0))
        return a->id == 0 ? 1 : -1;
    if (cand_worse(*a, *b))
        return 1;
    if (cand_worse(*b, *a))
        return -1;
    return 0;
}

/* Offer x to the heap h[*n] of at most K candidates (worst at the root). */
static void heap_offer(struct cand *h, int *n, int K, struct cand x)
{
    if (*n < K) {
        int i = (*n)++;
        while (i > 0 && cand_worse(x, h[(i - 1) / 2])) {
            h[i] = h[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        h[i] = x;
        return;
    }
    if (K == 0 || !cand_worse(h[0], x))
        return;
    int i = 0;
    for (;;) { /* sift x down from the root */
        int l = 2 * i + 1, r = l + 1, w = i;
        struct cand wc = x;
        if (l < K && cand_worse(h[l], wc)) {
            w = l;
            wc = h[l];
        }
        if (r < K && cand_worse(h[r], wc))
            w = r;
        if (w == i)
            break;
        h[i] = h[w];
        i = w;
    }
    h[i] = x;
}

/* Sort the heap h[n] best first into out[K], padding with (-inf, 0). */
static void heap_to_list(struct cand *h, int n, int K, struct cand *out)
{
    qsort(h, (size_t)n, sizeof *h, cand_cmp);
    for (int j = 0; j < K; j++)
        out[j] = j < n ? h[j] : (struct cand){-INFINITY, 0};
}

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* This rank's shard as a dense matrix: position k holds id first + k G. */
struct shard_mat {
    int64_t m, first;
    const float *dev; /* [m, d] (normalised) rows in be memory */
    float *owned;     /* dev when it is a copy (be->free it), else NULL: the table's own rows */
    uint8_t *shared;  /* [m] 1: the row is the shared row (conf->shared_row), or NULL */
};

/* Whether shared rows are told apart (eval_retrieval.h). */
static int with_shared(const struct eval_conf *conf)
{
    return conf->shared_row && !conf->item_rows;
}

/* Whether row[d] is the shared row, bit for bit. */
static int is_shared(const float *row, const float *shared, int d)
{
    return memcmp(row, shared, (size_t)d * sizeof *row) == 0;
}

const struct backend_ops *eval_retrieval_backend(const struct emb_table *t)
{
    return backend_is_host(t->be) ? &backend_cpu : t->be;
}

/* A device table whose rows be scores in place: the shard's slots
 * first / G .. are its ids first, first + G, ... (emb_table.h), rows of
 * dim floats initialised eagerly, so the matrix is the table's memory
 * itself, with no copy through the host (the items holding the shared
 * row told apart there too: shared_flags). Not with items scored by their
 * representation (item_rows: host). */
static int in_place(const struct emb_table *t, const struct backend_ops *be,
                    const struct eval_conf *conf)
{
    return !backend_is_host(t->be) && t->be == be && !t->ready && !t->sub && !t->dyn &&
           !t->cache && t->width == t->conf.dim && !conf->item_rows;
}

/* Which of the m rows raw[m, d] (be memory) are the shared row, bit for
 * bit (as is_shared): compared on the device, m bytes down. */
static uint8_t *shared_flags(const struct backend_ops *be, const float *raw, int64_t m, int d,
                             const float *shared_row)
{
    uint8_t *h = xmalloc((size_t)(m ? m : 1));
    if (m) {
        float *row = be->alloc((size_t)d * sizeof *row);
        uint8_t *f = be->alloc((size_t)m);
        be->to_device(row, shared_row, (size_t)d * sizeof *row);
        be->rows_match(m, d, raw, row, f);
        be->to_host(h, f, (size_t)m);
        be->free(row);
        be->free(f);
    }
    return h;
}

static void shard_mat_build(struct shard_mat *sm, struct emb_table *t,
                            const struct backend_ops *be, int normalize,
                            const struct eval_conf *conf)
{
    const int G = t->G, d = t->conf.dim;
    const int64_t rows = t->conf.rows;
    sm->first = t->shard == 0 ? G : t->shard;
    sm->m = sm->first <= rows ? (rows - sm->first) / G + 1 : 0;
    size_t bytes = (size_t)(sm->m ? sm->m : 1) * (size_t)d * sizeof(float);
    sm->shared = NULL;
    sm->owned = NULL;
    const float *raw;
    float *host = NULL;
    if (in_place(t, be, conf)) {
        raw = t->w + (sm->first / G) * (int64_t)d;
        if (with_shared(conf))
            sm->shared = shared_flags(be, raw, sm->m, d, conf->shared_row);
    } else {
        host = xmalloc(bytes);
        emb_table_get_slots(t, sm->first / G, sm->m, host, NULL, NULL); /* any placement */
        if (with_shared(conf)) {
            sm->shared = xmalloc((size_t)(sm->m ? sm->m : 1));
            for (int64_t k = 0; k < sm->m; k++)
                sm->shared[k] = (uint8_t)is_shared(host + k * d, conf->shared_row, d);
        }
        if (conf->item_rows) { /* the items' representation */
            int64_t *ids = xmalloc((size_t)(sm->m ? sm->m : 1) * sizeof *ids);
            for (int64_t k = 0; k < sm->m; k++)
                ids[k] = sm->first + k * G;
            conf->item_rows(conf->item_ctx, ids, sm->m, host);
            free(ids);
        }
        if (!normalize || sm->m == 0) {
            sm->owned = be->alloc(bytes);
            be->to_device(sm->owned, host, (size_t)sm->m * (size_t)d * sizeof(float));
            sm->dev = sm->owned;
            free(host);
            return;
        }
        float *up = be->alloc(bytes);
        be->to_device(up, host, (size_t)sm->m * (size_t)d * sizeof(float));
        raw = up;
    }
    if (normalize && sm->m > 0) {
        float *norm = be->alloc((size_t)sm->m * sizeof(float));
        sm->owned = be->alloc(bytes);
        be->l2norm_fwd(sm->m, d, ITEM_NORM_EPS, raw, sm->owned, norm);
        be->free(norm);
    }
    sm->dev = sm->owned ? sm->owned : raw;
    if (host) {
        be->free((void *)raw);
        free(host);
    }
}

/* rows[n, d] := rows / max(||row||, ITEM_NORM_EPS) (be's l2norm_fwd) */
static void normalize_rows(const struct backend_ops *be, int64_t n, int d, float *rows)
{
    if (n < 1)
        return;
    size_t bytes = (size_t)n * (size_t)d * sizeof(float);
    float *a = be->alloc(bytes), *b = be->alloc(bytes), *nrm = be->alloc((size_t)n * 4);
    be->to_device(a, rows, bytes);
    be->l2norm_fwd(n, d, ITEM_NORM_EPS, a, b, nrm);
    be->to_host(rows, b, bytes);
    be->free(a);
    be->free(b);
    be->free(nrm);
}

/* u[d] . e[d] as float, in one order: the targets' and the shared row's scores */
static float dot_score(const float *u, const float *e, int d)
{
    float s = 0;
    for (int j = 0; j < d; j++)
        s += u[j] * e[j];
    return s;
}

/* The shared row's score of every query, ss[n] = u_q . e_sh (with_shared;
 * e_sh normalised as the shard's rows are). Local. */
static void shared_scores(const struct backend_ops *be, const struct eval_conf *conf, int d,
                          const struct eval_queries *q, float *ss)
{
    float *e = xmalloc((size_t)d * sizeof *e);
    memcpy(e, conf->shared_row, (size_t)d * sizeof *e);
    if (conf->normalize_items)
        normalize_rows(be, 1, d, e);
    for (int64_t i = 0; i < q->n; i++)
        ss[i] = dot_score(q->u + i * d, e, d);
    free(e);
}

/* Target scores st[n] = u_q . e_target (float dot, e as in the shard); a
 * target whose row is the shared row scores ss[i] (ss NULL: none). */
static void target_scores(struct emb_table *t, struct comm *c, const struct backend_ops *be,
                          const struct eval_conf *conf, const struct eval_queries *q,
                          const float *ss, float *st)
{
    const int normalize = conf->normalize_items;
    const int d = t->conf.dim;
    const int64_t n = q->n;
    size_t bytes = (size_t)(n ? n : 1) * (size_t)d * sizeof(float);
    float *rows = xmalloc(bytes);
    emb_exchange_free(emb_lookup(t, c, q->targets, n, rows, NULL)); /* collective over emb */
    uint8_t *sh = xcalloc((size_t)(n ? n : 1), 1);
    for (int64_t i = 0; ss && i < n; i++)
        sh[i] = (uint8_t)is_shared(rows + i * d, conf->shared_row, d);
    if (conf->item_rows)
        conf->item_rows(conf->item_ctx, q->targets, n, rows);
    if (normalize)
        normalize_rows(be, n, d, rows);
    for (int64_t i = 0; i < n; i++)
        st[i] = sh[i] ? ss[i] : dot_score(q->u + i * d, rows + i * d, d);
    free(sh);
    free(rows);
}

/* The queries of one round, gathered over the emb group in rank order. */
struct round {
    int64_t ng;                 /* gathered queries */
    int64_t *cnt, *off;         /* [G], [G + 1]: queries per rank, offsets */
    float *u, *st, *ss;         /* [ng, d], [ng], [ng] (ss: shared rows' scores, or NULL) */
    int64_t *tgt;               /* [ng] */
    int64_t *tpos;              /* [ng] shard position of the target, or -1 */
    int64_t *skip_off, *skip;   /* CSR [ng + 1]: sorted unique shard positions of
                                   the excluded history (target removed) */
};

static void round_gather(struct round *rd, struct comm *c, const struct emb_table *t,
                         const struct shard_mat *sm, const struct eval_queries *q,
                         const float *st, const float *ss, int64_t q0, int64_t mine)
{
    const int G = t->G, d = t->conf.dim;
    const int64_t ng = rd->ng;
    int64_t *rc = xmalloc((size_t)G * sizeof *rc);
    /* user vectors, targets, target scores */
    for (int r = 0; r < G; r++)
        rc[r] = rd->cnt[r] * d;
    rd->u = xmalloc((size_t)(ng ? ng : 1) * (size_t)d * sizeof(float));
    comm_allgatherv(c, COMM_EMB, COMM_F32, mine ? q->u + q0 * d : NULL, mine * d, rd->u, rc,
                    COMM_PH_OTHER);
    rd->tgt = xmalloc((size_t)(ng ? ng : 1) * sizeof(int64_t));
    comm_allgatherv(c, COMM_EMB, COMM_I64, mine ? q->targets + q0 : NULL, mine, rd->tgt,
                    rd->cnt, COMM_PH_OTHER);
    rd->st = xmalloc((size_t)(ng ? ng : 1) * sizeof(float));
    comm_allgatherv(c, COMM_EMB, COMM_F32, mine ? st + q0 : NULL, mine, rd->st, rd->cnt,
                    COMM_PH_OTHER);
    rd->ss = NULL;
    if (ss) { /* the same on every rank of the group: all have shared rows or none */
        rd->ss = xmalloc((size_t)(ng ? ng : 1) * sizeof(float));
        comm_allgatherv(c, COMM_EMB, COMM_F32, mine ? ss + q0 : NULL, mine, rd->ss, rd->cnt,
                        COMM_PH_OTHER);
    }
    /* history lengths, then the histories */
    int64_t *len = xmalloc((size_t)(mine ? mine : 1) * sizeof *len);
    for (int64_t i = 0; i < mine; i++)
        len[i] = q->hist_off[q0 + i + 1] - q->hist_off[q0 + i];
    int64_t *glen = xmalloc((size_t)(ng ? ng : 1) * sizeof *glen);
    comm_allgatherv(c, COMM_EMB, COMM_I64, len, mine, glen, rd->cnt, COMM_PH_OTHER);
    int64_t htot = 0;
    for (int r = 0; r < G; r++) {
        rc[r] = 0;
        for (int64_t g = rd->off[r]; g < rd->off[r + 1]; g++)
            rc[r] += glen[g];
        htot += rc[r];
    }
    int64_t *gh = xmalloc((size_t)(htot ? htot : 1) * sizeof *gh);
    int64_t hmine = mine ? q->hist_off[q0 + mine] - q->hist_off[q0] : 0;
    comm_allgatherv(c, COMM_EMB, COMM_I64, hmine ? q->hist_ids + q->hist_off[q0] : NULL, hmine,
                    gh, rc, COMM_PH_OTHER);
    /* keep what this shard owns, as sorted unique positions */
    rd->tpos = xmalloc((size_t)(ng ? ng : 1) * sizeof(int64_t));
    rd->skip_off = xmalloc((size_t)(ng + 1) * sizeof(int64_t));
    rd->skip = xmalloc((size_t)(htot ? htot : 1) * sizeof(int64_t));
    int64_t h = 0, ns = 0;
    rd->skip_off[0] = 0;
    for (int64_t g = 0; g < ng; g++) {
        int64_t tg = rd->tgt[g], start = ns;
        rd->tpos[g] = tg >= 1 && tg % G == t->shard ? (tg - sm->first) / G : -1; /* 0: none */
        for (int64_t k = 0; k < glen[g]; k++, h++) {
            int64_t id = gh[h];
            if (id >= 1 && id != tg && id % G == t->shard)
                rd->skip[ns++] = (id - sm->first) / G;
        }
        qsort(rd->skip + start, (size_t)(ns - start), sizeof(int64_t), cmp_i64);
        int64_t w = start;
        for (int64_t k = start; k < ns; k++)
            if (k == start || rd->skip[k] != rd->skip[w - 1])
                rd->skip[w++] = rd->skip[k];
        ns = w;
        rd->skip_off[g + 1] = ns;
    }
    free(rc);
    free(len);
    free(glen);
    free(gh);
}

static void round_free(struct round *rd)
{
    free(rd->u);
    free(rd->st);
    free(rd->ss);
    free(rd->tgt);
    free(rd->tpos);
    free(rd->skip_off);
    free(rd->skip);
}

/* Score the round's queries against the shard: pc[ng, 3] partial counts of
 * candidates of their own rows above and tied with the target, and of
 * candidates with the shared row (rd->ss: scored ss[g], compared on the
 * query's rank); lists[ng, K] this shard's top-K. */
static void round_score(const struct round *rd, const struct shard_mat *sm, int G, int d, int K,
                        const struct eval_conf *conf, const struct backend_ops *be, int64_t *pc,
                        struct cand *lists)
{
    const int64_t QB = conf->qblock, IB = conf->iblock, m = sm->m;
    float *dq = be->alloc((size_t)QB * (size_t)d * sizeof(float));
    float *ds = be->alloc((size_t)QB * (size_t)IB * sizeof(float));
    float *S = xmalloc((size_t)QB * (size_t)IB * sizeof(float));
    struct cand *heaps = xmalloc((size_t)QB * (size_t)(K ? K : 1) * sizeof *heaps);
    int *hn = xmalloc((size_t)QB * sizeof *hn);
    int64_t *cur = xmalloc((size_t)QB * sizeof *cur); /* next skip entry per query */
    for (int64_t b0 = 0; b0 < rd->ng; b0 += QB) {
        int64_t nb = min64(QB, rd->ng - b0);
        be->to_device(dq, rd->u + b0 * d, (size_t)nb * (size_t)d * sizeof(float));
        for (int64_t i = 0; i < nb; i++) {
            hn[i] = 0;
            cur[i] = rd->skip_off[b0 + i];
            pc[3 * (b0 + i)] = pc[3 * (b0 + i) + 1] = pc[3 * (b0 + i) + 2] = 0;
        }
        for (int64_t i0 = 0; i0 < m; i0 += IB) {
            int64_t ni = min64(IB, m - i0);
            /* S[nb, ni] = Q[nb, d] E[i0 .. i0 + ni, d]^T */
            be->gemm(0, 1, nb, ni, d, 1.0f, dq, d, sm->dev + i0 * d, d, 0.0f, ds, ni);
            be->to_host(S, ds, (size_t)nb * (size_t)ni * sizeof(float));
            for (int64_t i = 0; i < nb; i++) {
                const int64_t g = b0 + i, send = rd->skip_off[g + 1], tp = rd->tpos[g];
                const float thr = rd->st[g], *s = S + i * ni, ssg = rd->ss ? rd->ss[g] : 0;
                const uint8_t *sh = sm->shared;
                struct cand *hp = heaps + i * K;
                int64_t above = 0, tied = 0, shared = 0, k = cur[i];
                for (int64_t j = 0; j < ni; j++) {
                    int64_t pos = i0 + j;
                    if (k < send && rd->skip[k] == pos) { /* excluded history */
                        k++;
                        continue;
                    }
                    float x = s[j];
                    if (sh && sh[pos]) { /* one score for the whole group */
                        x = ssg;
                        shared += pos != tp;
                    } else if (pos != tp) {
                        above += x > thr;
                        tied += x == thr;
                    }
                    /* NaN scores never enter a list; ids rise along the scan, so
                     * once the heap is full only a strictly higher score can */
                    if (K > 0 && (hn[i] < K ? x == x : x > hp[0].s))
                        heap_offer(hp, &hn[i], K, (struct cand){x, sm->first + pos * G});
                }
                cur[i] = k;
                pc[3 * g] += above;
                pc[3 * g + 1] += tied;
                pc[3 * g + 2] += shared;
            }
        }
        for (int64_t i = 0; i < nb && K > 0; i++)
            heap_to_list(heaps + i * K, hn[i], K, lists + (b0 + i) * K);
    }
    be->free(dq);
    be->free(ds);
    free(S);
    free(heaps);
    free(hn);
    free(cur);
}

/* Partial counts pc[ng, 3] back to each query's rank (all-to-allv), summed
 * there: rank[mine] and ties[mine] (or NULL) of this rank's queries of the
 * round, st[mine] their target scores (not finite: rank = rows, no ties),
 * ss[mine] their shared rows' scores (NULL: none), the one comparison
 * that places the group of shared rows. */
static void round_return_counts(struct comm *c, const struct round *rd, int G, int me,
                                const int64_t *pc, const float *st, const float *ss,
                                int64_t rows, int64_t *rank, int64_t *ties)
{
    const int64_t mine = rd->cnt[me];
    int64_t *v = xmalloc((size_t)G * 4 * sizeof *v), *sc = v, *sd = v + G, *rc = v + 2 * G,
            *rdis = v + 3 * G;
    int64_t *rpc = xmalloc((size_t)(mine > 0 ? 3 * G * mine : 1) * sizeof *rpc);
    for (int r = 0; r < G; r++) {
        sc[r] = 3 * rd->cnt[r];
        sd[r] = 3 * rd->off[r];
        rc[r] = 3 * mine;
        rdis[r] = 3 * r * mine;
    }
    comm_alltoallv(c, COMM_EMB, COMM_I64, pc, sc, sd, rpc, rc, rdis, COMM_PH_OTHER);
    for (int64_t i = 0; i < mine; i++) {
        int64_t above = 0, tied = 0, shared = 0;
        for (int r = 0; r < G; r++) {
            const int64_t *p = rpc + 3 * (r * mine + i);
            above += p[0];
            tied += p[1];
            shared += p[2];
        }
        if (ss && ss[i] > st[i])
            above += shared;
        else if (ss && ss[i] == st[i])
            tied += shared;
        rank[i] = isfinite(st[i]) ? above : rows;
        if (ties)
            ties[i] = isfinite(st[i]) ? tied : 0;
    }
    free(rpc);
    free(v);
}

/* The shards' top-K lists[ng, K] back to each query's rank, where the G
 * sorted lists of a query are merged: ids, scores[mine, K] (scores may be
 * NULL). */
static void round_return_topk(struct comm *c, const struct round *rd, int G, int me, int K,
                              const struct cand *lists, int64_t *ids, float *scores)
{
    const int64_t ng = rd->ng, mine = rd->cnt[me], nr = (int64_t)G * mine * K;
    int64_t *sid = xmalloc((size_t)(ng ? ng : 1) * (size_t)K * sizeof *sid);
    float *ssc = xmalloc((size_t)(ng ? ng : 1) * (size_t)K * sizeof *ssc);
    for (int64_t j = 0; j < ng * K; j++) {
        sid[j] = lists[j].id;
        ssc[j] = lists[j].s;
    }
    int64_t *rid = xmalloc((size_t)(nr ? nr : 1) * sizeof *rid);
    float *rsc = xmalloc((size_t)(nr ? nr : 1) * sizeof *rsc);
    int64_t *sc = xmalloc((size_t)G * 4 * sizeof *sc), *sd = sc + G, *rc = sc + 2 * G,
            *rdis = sc + 3 * G;
    for (int r = 0; r < G; r++) {
        sc[r] = rd->cnt[r] * K;
        sd[r] = rd->off[r] * K;
        rc[r] = mine * K;
        rdis[r] = r * mine * K;
    }
    comm_alltoallv(c, COMM_EMB, COMM_I64, sid, sc, sd, rid, rc, rdis, COMM_PH_OTHER);
    comm_alltoallv(c, COMM_EMB, COMM_F32, ssc, sc, sd, rsc, rc, rdis, COMM_PH_OTHER);
    int *head = xmalloc((size_t)G * sizeof *head);
    for (int64_t i = 0; i < mine; i++) {
        /* merge the G sorted lists of query i: take the best head each time */
        for (int r = 0; r < G; r++)
            head[r] = 0;
        for (int j = 0; j < K; j++) {
            int best = -1;
            struct cand bc = {-INFINITY, 0};
            for (int r = 0; r < G; r++) {
                int64_t src = (r * mine + i) * K + head[r];
                if (head[r] == K || rid[src] == 0) /* list used up, or padding */
                    continue;
                struct cand x = {rsc[src], rid[src]};
                if (best < 0 || cand_worse(bc, x)) {
                    best = r;
                    bc = x;
                }
            }
            if (best >= 0)
                head[best]++;
            ids[i * K + j] = bc.id;
            if (scores)
                scores[i * K + j] = bc.id ? bc.s : -INFINITY;
        }
    }
    free(head);
    free(sc);
    free(sid);
    free(ssc);
    free(rid);
    free(rsc);
}

/* Check the ids of this rank's queries (the targets only with_targets);
 * fatal() on the first bad one. */
static void check_queries(const struct emb_table *t, const struct comm *c,
                          const struct eval_queries *q, int K, int with_targets)
{
    const int64_t rows = t->conf.rows;
    if (K < 0 || K > EVAL_MAX_TOPK)
        fatal("eval: top-K of %d items (at most %d)", K, EVAL_MAX_TOPK);
    if (q->n < 0 || (q->n > 0 && (!q->u || (with_targets && !q->targets) || !q->hist_off)))
        fatal("eval: %lld queries without their arrays", (long long)q->n);
    for (int64_t i = 0; i < q->n; i++) {
        if (with_targets && (q->targets[i] < 1 || q->targets[i] > rows))
            fatal("eval: table '%s': query %lld on rank %d has target %lld outside 1..%lld",
                  t->conf.name, (long long)i, c->rank, (long long)q->targets[i],
                  (long long)rows);
        if (q->hist_off[i + 1] < q->hist_off[i])
            fatal("eval: query %lld on rank %d: history offsets decrease", (long long)i,
                  c->rank);
        for (int64_t k = q->hist_off[i]; k < q->hist_off[i + 1]; k++)
            if (q->hist_ids[k] < 0 || q->hist_ids[k] > rows)
                fatal("eval: table '%s': query %lld on rank %d has history id %lld outside "
                      "0..%lld",
                      t->conf.name, (long long)i, c->rank, (long long)q->hist_ids[k],
                      (long long)rows);
    }
}

/* The ranking of eval_retrieval_queries; without targets (with_targets = 0,
 * q->targets unread) only the top-K lists are meaningful: every query is
 * given target 0 (none: no row is the target, nothing is counted above it)
 * and rank[] receives placeholders. */
static void rank_queries(struct emb_table *t, struct comm *c, const struct backend_ops *be,
                         const struct eval_conf *conf_in, const struct eval_queries *q_in,
                         int with_targets, int64_t *rank, int64_t *ties, int64_t *topk_ids,
                         float *topk_scores)
{
    const int G = t->G, me = t->shard, d = t->conf.dim, K = conf_in->topk;
    if (G != c->g[COMM_EMB].size || me != c->g[COMM_EMB].rank)
        fatal("eval: table '%s' is sharded over %d ranks, the emb group has %d", t->conf.name, G,
              c->g[COMM_EMB].size);
    check_queries(t, c, q_in, K, with_targets);
    struct eval_queries qq = *q_in, *q = &qq;
    int64_t *no_targets = NULL;
    if (!with_targets) {
        no_targets = xcalloc((size_t)(q->n ? q->n : 1), sizeof *no_targets);
        qq.targets = no_targets;
    }
    if (K > 0 && !topk_ids)
        fatal("eval: top-%d requested without an output array", K);
    struct eval_conf conf = *conf_in;
    if (conf.round <= 0)
        conf.round = 4096 / G > 16 ? 4096 / G : 16;
    if (conf.qblock <= 0)
        conf.qblock = 256;
    if (conf.iblock <= 0)
        conf.iblock = 4096;

    float *st = xmalloc((size_t)(q->n ? q->n : 1) * sizeof *st), *ss = NULL;
    if (with_shared(&conf)) {
        ss = xmalloc((size_t)(q->n ? q->n : 1) * sizeof *ss);
        shared_scores(be, &conf, d, q, ss);
    }
    if (with_targets)
        target_scores(t, c, be, &conf, q, ss, st);
    else /* no item scores above +inf: nothing counted */
        for (int64_t i = 0; i < q->n; i++)
            st[i] = INFINITY;
    struct shard_mat sm;
    shard_mat_build(&sm, t, be, conf.normalize_items, &conf);

    int64_t *nq = xmalloc((size_t)G * sizeof *nq), rounds = 0;
    comm_allgather_i64(c, COMM_EMB, q->n, nq);
    for (int r = 0; r < G; r++)
        if ((nq[r] + conf.round - 1) / conf.round > rounds)
            rounds = (nq[r] + conf.round - 1) / conf.round;

    struct round rd;
    rd.cnt = xmalloc((size_t)G * sizeof(int64_t));
    rd.off = xmalloc((size_t)(G + 1) * sizeof(int64_t));
    for (int64_t k = 0; k < rounds; k++) {
        const int64_t q0 = k * conf.round; /* every rank's queries q0 .. q0 + round */
        rd.off[0] = 0;
        for (int r = 0; r < G; r++) {
            int64_t left = nq[r] - q0;
            rd.cnt[r] = left < 0 ? 0 : min64(left, conf.round);
            rd.off[r + 1] = rd.off[r] + rd.cnt[r];
        }
        rd.ng = rd.off[G];
        round_gather(&rd, c, t, &sm, q, st, ss, q0, rd.cnt[me]);
        int64_t *pc = xmalloc((size_t)(rd.ng ? rd.ng : 1) * 3 * sizeof *pc);
        struct cand *lists = xmalloc((size_t)(rd.ng ? rd.ng : 1) * (size_t)(K ? K : 1) *
                                     sizeof *lists);
        round_score(&rd, &sm, G, d, K, &conf, be, pc, lists);
        round_return_counts(c, &rd, G, me, pc, st + q0, ss ? ss + q0 : NULL, t->conf.rows,
                            rank + q0, ties ? ties + q0 : NULL);
        if (K > 0)
            round_return_topk(c, &rd, G, me, K, lists, topk_ids + q0 * K,
                              topk_scores ? topk_scores + q0 * K : NULL);
        free(pc);
        free(lists);
        round_free(&rd);
    }
    free(rd.cnt);
    free(rd.off);
    free(nq);
    free(st);
    free(ss);
    free(no_targets);
    free(sm.shared);
    be->free(sm.owned);
}

void eval_retrieval_queries(struct emb_table *t, struct comm *c, const struct backend_ops *be,
                            const struct eval_conf *conf, const struct eval_queries *q,
                            int64_t *rank, int64_t *ties, int64_t *topk_ids, float *topk_scores)
{
    rank_queries(t, c, be, conf, q, 1, rank, ties, topk_ids, topk_scores);
}

void eval_retrieval_topk(struct emb_table *t, struct comm *c, const struct backend_ops *be,
                         const struct eval_conf *conf, const struct eval_queries *q,
                         int64_t *topk_ids, float *topk_scores)
{
    if (conf->topk < 1)
        fatal("eval_retrieval_topk: top-%d (at least 1)", conf->topk);
    int64_t *rank = xmalloc((size_t)(q->n ? q->n : 1) * sizeof *rank);
    rank_queries(t, c, be, conf, q, 0, rank, NULL, topk_ids, topk_scores);
    free(rank);
}

/* --- metrics ------------------------------------------------------------------ */

const int eval_hr_k[EVAL_NHR] = {1, 10, 50, 200};
const int eval_ndcg_k[EVAL_NNDCG] = {10, 50, 200};

double eval_tie_hr(int64_t above, int64_t ties, int K)
{
    if (above >= K)
        return 0.0;
    const int64_t last = above + ties < K - 1 ? above + ties : K - 1; /* the last hit */
    return (double)(last - above + 1) / (double)(ties + 1);
}

double eval_tie_ndcg(int64_t above, int64_t ties, int K)
{
    double s = 0;
    for (int64_t r = above; r <= above + ties && r < K; r++) /* at most K terms */
        s += 1.0 / log2((double)r + 2.0);
    return s / (double)(ties + 1);
}

#define TIE_SUM_MAX 4096 /* ties summed term by term up to this; beyond, H in closed form */

/* H(n) = 1 + 1/2 + ... + 1/n for n > TIE_SUM_MAX: ln n + gamma + 1/(2n) -
 * 1/(12 n^2) + 1/(120 n^4), the next term below 1e-22 */
static double harmonic_big(int64_t n)
{
    const double x = (double)n, x2 = x * x;
    return log(x) + 0.57721566490153286061 + 1.0 / (2.0 * x) - 1.0 / (12.0 * x2) +
           1.0 / (120.0 * x2 * x2);
}

double eval_tie_mrr(int64_t above, int64_t ties)
{
    if (ties <= TIE_SUM_MAX) {
        double s = 0;
        for (int64_t r = above + ties; r >= above; r--) /* small terms first */
            s += 1.0 / ((double)r + 1.0);
        return s / (double)(ties + 1);
    }
    double lo = 0; /* H(above) */
    if (above > TIE_SUM_MAX)
        lo = harmonic_big(above);
    else
        for (int64_t r = above; r >= 1; r--)
            lo += 1.0 / (double)r;
    return (harmonic_big(above + ties + 1) - lo) / (double)(ties + 1);
}

void eval_metrics_init(struct eval_metrics *m) { memset(m, 0, sizeof *m); }

void eval_metrics_add(struct eval_metrics *m, int64_t above, int64_t ties)
{
    if (m->finished)
        fatal("eval_metrics_add: the metrics are already finished");
    if (above < 0 || ties < 0)
        fatal("eval_metrics_add: negative rank %lld or ties %lld", (long long)above,
              (long long)ties);
    m->count++;
    double v[EVAL_NHR + EVAL_NNDCG + 1];
    for (int i = 0; i < EVAL_NHR; i++)
        m->hr[i] += v[i] = eval_tie_hr(above, ties, eval_hr_k[i]);
    for (int i = 0; i < EVAL_NNDCG; i++)
        m->ndcg[i] += v[EVAL_NHR + i] = eval_tie_ndcg(above, ties, eval_ndcg_k[i]);
    m->mrr += v[EVAL_NHR + EVAL_NNDCG] = eval_tie_mrr(above, ties);
    for (int i = 0; i < EVAL_NHR + EVAL_NNDCG + 1; i++)
        exact_add_double(m->x[i], v[i], &m->x[i][EXACT_LIMBS]);
}

void eval_metrics_finish(struct eval_metrics *m)
{
    if (m->finished)
        return;
    double inv = m->count > 0 ? 1.0 / (double)m->count : 0.0;
    /* the sums from the exact accumulators: the same bits whatever the order */
    for (int i = 0; i < EVAL_NHR; i++)
        m->hr[i] = exact_to_double(m->x[i], m->x[i][EXACT_LIMBS]);
    for (int i = 0; i < EVAL_NNDCG; i++)
        m->ndcg[i] = exact_to_double(m->x[EVAL_NHR + i], m->x[EVAL_NHR + i][EXACT_LIMBS]);
    m->mrr = exact_to_double(m->x[EVAL_NHR + EVAL_NNDCG], m->x[EVAL_NHR + EVAL_NNDCG][EXACT_LIMBS]);
    for (int i = 0; i < EVAL_NHR; i++)
        m->hr[i] *= inv;
    for (int i = 0; i < EVAL_NNDCG; i++)
        m->ndcg[i] *= inv;
    m->mrr *= inv;
    m->finished = 1;
}

void eval_metrics_reduce(struct eval_metrics *m, struct comm *c)
{
    if (m->finished)
        fatal("eval_metrics_reduce: the metrics are already finished");
    /* integer sums of the exact accumulators (finish reads them) */
    comm_allreduce_sum_i64v(c, COMM_DP, &m->x[0][0], (int64_t)(sizeof m->x / sizeof m->x[0][0]));
    /* exact: counts are far below 2^53 */
    m->count = (int64_t)comm_allreduce_sum_f64(c, COMM_DP, (double)m->count);
    eval_metrics_finish(m);
}

void eval_metrics_format(const struct eval_metrics *m, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < EVAL_NHR && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "HR@%d %.4f ", eval_hr_k[i], m->hr[i]);
    for (int i = 0; i < EVAL_NNDCG && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "NDCG@%d %.4f ", eval_ndcg_k[i], m->ndcg[i]);
    if (n < len)
        snprintf(buf + n, len - n, "MRR %.4f (%lld queries)%s", m->mrr, (long long)m->count,
                 m->finished ? "" : " [sums]");
}
