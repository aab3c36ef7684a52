/* eval_retrieval: full-ranking evaluation against the sharded item table, and the
 * ranking metrics (doc/training.md, "Splits and evaluation").
 *
 * Every rank brings nq queries (the users it evaluates): a user vector, a
 * target id and the history to exclude. No rank holds the whole table: the
 * queries are all-gathered within the emb group (in rounds of a bounded
 * number of queries), each owner scores its shard against them in blocks
 * with be->gemm, counts the items scoring above and tied with the target
 * (and those holding the shared row: one group) and keeps its
 * best K; partial counts and top-K lists go back to each query's rank
 * (all-to-allv), which sums the counts and merges the lists. With G < P each
 * emb group evaluates its own queries independently.
 *
 * Scores: s(q, i) = u_q . e_i with e_i = row_i / max(||row_i||, ITEM_NORM_EPS) when
 * normalize_items (HSTU; same normalisation as the training loss), else the
 * raw row (SASRec).
 *
 * Rank of the target (0-based): the number of candidate items scoring
 * strictly above the target ("above"), and the number scoring exactly the
 * same ("ties"), where the candidates are the ids 1..rows minus the query's
 * history minus the target itself. The metrics take the target's position
 * among its ties as uniformly random (eval_metrics_add: never in the
 * target's favour; doc/training.md, "Splits and evaluation"). The target's
 * score is a float dot product with its looked-up row, the items' scores
 * come from gemm: scores that are equal in exact arithmetic may differ in
 * the last bit, so an item of its own row tied with the target within float
 * rounding may fall on either side.
 *
 * Shared rows (conf->shared_row, a dynamic table's unadmitted row; not with
 * item_rows): every item whose row is bit for bit the shared row (no row of
 * its own) is scored once per query, s_sh = u_q . e_sh on the query's rank,
 * and the whole group is above, tied with or below the target by that one
 * comparison (a target without a row of its own scores s_sh itself: tied
 * with the group), so that no rounding difference between ranks or blocks
 * can move part of a group; in the top-K lists they score s_sh. A query
 * whose target score is not finite (a diverged model) gets rank = rows, no
 * ties: a miss at every cutoff.
 *
 * Top-K: the K (<= EVAL_MAX_TOPK) best items of the candidates ids 1..rows
 * minus the history (the target is NOT excluded), by score descending, ties
 * by smaller id (the same order on any number of ranks); padded with id 0,
 * score -inf when fewer than K remain.
 *
 * All functions of the ranking are collective over the emb group. */
#ifndef FS_EVAL_RETRIEVAL_H
#define FS_EVAL_RETRIEVAL_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "base/exact.h"
#include "comm/comm.h"
#include "embedding/emb_exchange.h"

#define EVAL_MAX_TOPK 200

/* The queries of this rank (host memory). */
struct eval_queries {
    int64_t n;               /* queries on this rank (may be 0) */
    const float *u;          /* [n, d] user vectors */
    const int64_t *targets;  /* [n] ids in 1..rows */
    const int64_t *hist_off; /* [n + 1] CSR offsets into hist_ids */
    const int64_t *hist_ids; /* items to exclude, ids in 1..rows (0 = padding, ignored);
                                repeats and the target itself may appear */
};

struct eval_conf {
    int normalize_items; /* 1: score against L2-normalised rows (HSTU) */
    int topk;            /* K of the top-K lists, 0..EVAL_MAX_TOPK (0 = none) */
    /* blocking (0 = default); must be the same on every rank of the group */
    int64_t round;       /* queries per rank gathered per round (default 4096 / G, >= 16) */
    int64_t qblock;      /* queries per score block (default 256) */
    int64_t iblock;      /* items per score block (default 4096) */
    /* the items' representation: rows [n, d] of ids[n] as read from the table
     * are changed in place (item features, eval.h: eval_conf_items); NULL:
     * the rows themselves. Called collectively over the group: once for the
     * targets, once for each rank's shard. */
    void (*item_rows)(void *ctx, const int64_t *ids, int64_t n, float *rows);
    void *item_ctx;
    /* [d]: the row the items without one of their own share, as the table's
     * lookups return it (the same bits on every rank of the group), or NULL
     * (a dense table); ignored with item_rows (features make them differ) */
    const float *shared_row;
};

/* The backend that scores against t: t's device when t lives on one (its
 * rows are scored where they are, with no copy of the shard through the
 * host: doc/gpu.md), else the CPU. */
const struct backend_ops *eval_retrieval_backend(const struct emb_table *t);

/* Rank every query of this rank against the whole table t (sharded over c's
 * emb group), scoring with be (buffers are copied to and from be's memory;
 * a device table in be's memory is scored in place).
 *   rank: [q->n] out, candidates strictly above the target (see above);
 *   ties: [q->n] out, candidates scoring the same as the target, or NULL;
 *   topk_ids: [q->n, conf->topk] out, or NULL (conf->topk must then be 0);
 *   topk_scores: [q->n, conf->topk] out, or NULL.
 * Bad ids end the job through fatal(), naming the rank and the query. */
void eval_retrieval_queries(struct emb_table *t, struct comm *c, const struct backend_ops *be,
                            const struct eval_conf *conf, const struct eval_queries *q,
                            int64_t *rank, int64_t *ties, int64_t *topk_ids, float *topk_scores);

/* Top-K only (recommendation after the whole history): the lists as above
 * with no target, i.e. the conf->topk (>= 1) best of the candidates ids
 * 1..rows minus each query's history; q->targets is not read (may be
 * NULL). topk_ids: [q->n, conf->topk] out; topk_scores: the same, or NULL. */
void eval_retrieval_topk(struct emb_table *t, struct comm *c, const struct backend_ops *be,
                         const struct eval_conf *conf, const struct eval_queries *q,
                         int64_t *topk_ids, float *topk_scores);

/* --- metrics ------------------------------------------------------------------ */

#define EVAL_NHR 4   /* HR@{1, 10, 50, 200} */
#define EVAL_NNDCG 3 /* NDCG@{10, 50, 200} */
extern const int eval_hr_k[EVAL_NHR];
extern const int eval_ndcg_k[EVAL_NNDCG];

/* Sums over queries while accumulating; means once finished (reduced).
 * A query's figures at a 0-based rank r: */
struct eval_metrics {
    int64_t count;
    double hr[EVAL_NHR];     /* r < K */
    double ndcg[EVAL_NNDCG]; /* 1 / log2(r + 2) if r < K, else 0 */
    double mrr;              /* 1 / (r + 1), no cutoff */
    int finished;            /* 1: the fields are means */
    /* the same sums as exact accumulators (base/exact.h: hr, ndcg, mrr; the
     * last int64 of each counts values out of range), which the reduction
     * adds as integers: the same means on any number of ranks */
    int64_t x[EVAL_NHR + EVAL_NNDCG + 1][EXACT_LIMBS + 1];
};

/* Ties: a target with `above` candidates strictly above it and `ties`
 * tied with it has rank r uniform over above .. above + ties (the ties'
 * order drawn at random), and its figures are their exact expectations:
 *   HR@K   = #{r in above .. above + ties : r < K} / (ties + 1)
 *   NDCG@K = sum over those r < K of 1 / log2(r + 2), / (ties + 1)
 *   MRR    = (H(above + ties + 1) - H(above)) / (ties + 1), H harmonic
 * (ties = 0: the plain rank's figures, bit for bit). Counts >= 0. */
double eval_tie_hr(int64_t above, int64_t ties, int K);
double eval_tie_ndcg(int64_t above, int64_t ties, int K);
double eval_tie_mrr(int64_t above, int64_t ties);

void eval_metrics_init(struct eval_metrics *m);
/* Add one query: `above` candidates strictly above its target, `ties`
 * tied with it (both >= 0; see above). */
void eval_metrics_add(struct eval_metrics *m, int64_t above, int64_t ties);
/* Turn this rank's sums into means (count = 0 gives zeros). */
void eval_metrics_finish(struct eval_metrics *m);
/* Sum over COMM_DP (every query is counted on exactly one rank), then
 * finish: the same means on every rank. */
void eval_metrics_reduce(struct eval_metrics *m, struct comm *c);
/* "HR@1 0.0123 HR@10 ... NDCG@10 ... MRR 0.0456 (6040 queries)" */
void eval_metrics_format(const struct eval_metrics *m, char *buf, size_t len);

#endif
