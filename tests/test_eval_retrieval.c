/* test_eval_retrieval: distributed full ranking (src/eval/eval_retrieval.c) on P ranks
 * against a brute-force single-rank computation, for every embedding group
 * G in {1, 2, P} that divides P.
 *
 * The table has 97 rows of dim 6. Every rank has its own number of queries
 * (the last rank none when P > 1); histories repeat ids, contain padding 0
 * and sometimes the target. Three tables:
 *   init, raw         the table's initial rows (emb_init_row), SASRec scores;
 *   init, normalised  the same rows L2-normalised (HSTU);
 *   integer           small integer rows and user vectors written into the
 *                     shards: every score is exact in float, so ties are
 *                     frequent and the tie rules (items strictly above and
 *                     tied with the target counted apart; top-K ties by
 *                     smaller id) are checked exactly;
 *   shared            the normalised init rows, but every third id holds one
 *                     shared row (a dynamic table's unadmitted row), given as
 *                     eval_conf.shared_row: those items must be placed as one
 *                     group (all above, all tied or all below the target; all
 *                     tied with a target that holds the shared row) and show
 *                     one score in the top-K lists, in ascending ids.
 * Each with the default blocking and with tiny blocks (several rounds, query
 * and item blocks that split the shard), top-K of 7 and of 100 (> rows:
 * padded lists). For float tables a rank must lie between the counts of
 * items above the target by more than a tolerance and within it; top-K
 * scores must match the brute-force ones position by position. The metrics
 * reduced over all ranks must equal sums computed from the brute-force
 * ranks of every rank's queries. A NaN user vector must miss every cutoff
 * (rank = rows) with an empty top-K list. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/check.h"
#include "comm/comm.h"
#include "embedding/emb_exchange.h"
#include "eval/eval_retrieval.h"
#include "mpitest.h"
#include "base/rng.h"

#define ROWS 97
#define DIM 6

enum table_kind { TAB_RAW, TAB_NORM, TAB_INT, TAB_SHARED, TAB_N };
static const char *kind_name[TAB_N] = {"init/raw", "init/normalised", "integer", "shared"};

static int is_shared_id(enum table_kind kind, int64_t id) { return kind == TAB_SHARED && id % 3 == 0; }

/* the shared row of TAB_SHARED */
static void shared_row(float *row)
{
    static const float v[DIM] = {0.3f, -0.2f, 0.5f, 0.1f, -0.4f, 0.25f};
    memcpy(row, v, sizeof v);
}

struct qset {
    int64_t n;
    float *u;
    int64_t *targets, *hist_off, *hist_ids;
};

static int64_t queries_of_rank(int r, int P) { return P > 1 && r == P - 1 ? 0 : 11 + 4 * r; }

static void int_row(int64_t id, float *row)
{
    struct rng g;
    rng_init(&g, rng_key(5, 1000 + (uint64_t)id, 0));
    for (int j = 0; j < DIM; j++)
        row[j] = (float)rng_below(&g, 5) - 2.0f;
}

/* The queries of (world) rank r. */
static void make_queries(struct qset *q, int r, int P, enum table_kind kind)
{
    int64_t n = queries_of_rank(r, P);
    q->n = n;
    q->u = xmalloc((size_t)(n + 1) * DIM * sizeof(float));
    q->targets = xmalloc((size_t)(n + 1) * sizeof(int64_t));
    q->hist_off = xmalloc((size_t)(n + 1) * sizeof(int64_t));
    q->hist_ids = xmalloc((size_t)(n + 1) * 40 * sizeof(int64_t));
    int64_t h = 0;
    q->hist_off[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        struct rng g;
        rng_init(&g, rng_key(7, (uint64_t)r, (uint64_t)i));
        for (int j = 0; j < DIM; j++)
            q->u[i * DIM + j] = kind == TAB_INT ? (float)rng_below(&g, 5) - 2.0f
                                                : (float)rng_normal(&g);
        int64_t tgt = 1 + (int64_t)rng_below(&g, ROWS);
        q->targets[i] = tgt;
        /* one query with a very long history: few candidates are left */
        int64_t len = i == 3 ? 35 : (int64_t)rng_below(&g, 25);
        for (int64_t k = 0; k < len; k++) {
            double x = rng_uniform(&g);
            q->hist_ids[h++] = x < 0.1 ? 0 : x < 0.2 ? tgt : 1 + (int64_t)rng_below(&g, ROWS);
        }
        q->hist_off[i + 1] = h;
    }
}

static void free_queries(struct qset *q)
{
    free(q->u);
    free(q->targets);
    free(q->hist_off);
    free(q->hist_ids);
}

/* Brute force: all rows e[ROWS + 1][DIM] in double as the ranking sees them. */
static void table_rows(const struct emb_table_conf *conf, enum table_kind kind, double *e)
{
    float row[DIM];
    for (int64_t id = 1; id <= ROWS; id++) {
        if (kind == TAB_INT)
            int_row(id, row);
        else if (is_shared_id(kind, id))
            shared_row(row);
        else
            emb_init_row(conf, id, row);
        double n = 0;
        for (int j = 0; j < DIM; j++)
            n += (double)row[j] * row[j];
        n = kind == TAB_NORM || kind == TAB_SHARED ? fmax(sqrt(n), 1e-6) : 1.0;
        for (int j = 0; j < DIM; j++)
            e[id * DIM + j] = row[j] / n;
    }
}

struct truth {
    int64_t lo, hi;       /* rank bounds (equal when exact) */
    int64_t ties;         /* exact: the candidates tied with the target */
    int64_t shared;       /* TAB_SHARED: the candidates holding the shared row */
    int group;            /* TAB_SHARED, a target of its own row: the shared group is
                             1 above it, -1 below, 0 within the tolerance (either) */
    int64_t ids[ROWS];    /* candidates best first, padded with 0 */
    double s[ROWS + 1];   /* score of every id */
    double tol;
    uint8_t excluded[ROWS + 1];
};

static void brute_force(const double *e, const struct qset *q, int64_t i, int exact,
                        enum table_kind kind, struct truth *tr)
{
    const float *u = q->u + i * DIM;
    const int64_t tgt = q->targets[i];
    memset(tr->excluded, 0, sizeof tr->excluded);
    for (int64_t k = q->hist_off[i]; k < q->hist_off[i + 1]; k++)
        if (q->hist_ids[k] != tgt)
            tr->excluded[q->hist_ids[k]] = 1;
    double un = 0, emax = 0;
    for (int j = 0; j < DIM; j++)
        un += (double)u[j] * u[j];
    for (int64_t id = 1; id <= ROWS; id++) {
        double s = 0, en = 0;
        for (int j = 0; j < DIM; j++) {
            s += u[j] * e[id * DIM + j];
            en += e[id * DIM + j] * e[id * DIM + j];
        }
        tr->s[id] = s;
        emax = fmax(emax, sqrt(en));
    }
    tr->tol = exact ? 0 : 1e-5 * (1 + sqrt(un) * emax);
    tr->lo = tr->hi = tr->ties = tr->shared = 0;
    int64_t nc = 0;
    const double ssh = kind == TAB_SHARED ? tr->s[3] : 0; /* id 3 holds the shared row */
    const int tsh = is_shared_id(kind, tgt);
    tr->group = ssh > tr->s[tgt] + tr->tol ? 1 : ssh < tr->s[tgt] - tr->tol ? -1 : 0;
    for (int64_t id = 1; id <= ROWS; id++) {
        if (tr->excluded[id])
            continue;
        tr->ids[nc++] = id;
        if (id == tgt)
            continue;
        if (is_shared_id(kind, id)) { /* one group, placed as a whole below */
            tr->shared++;
            continue;
        }
        tr->lo += tr->s[id] > tr->s[tgt] + tr->tol;
        tr->hi += tr->s[id] > tr->s[tgt] - tr->tol;
        tr->ties += tr->s[id] == tr->s[tgt];
    }
    if (kind == TAB_SHARED && !tsh) {
        tr->lo += tr->group == 1 ? tr->shared : 0;
        tr->hi += tr->group == -1 ? 0 : tr->shared;
    }
    /* candidates best first: insertion sort by score desc, id asc */
    for (int64_t a = 1; a < nc; a++) {
        int64_t x = tr->ids[a], b = a;
        while (b > 0 && (tr->s[tr->ids[b - 1]] < tr->s[x] ||
                         (tr->s[tr->ids[b - 1]] == tr->s[x] && tr->ids[b - 1] > x))) {
            tr->ids[b] = tr->ids[b - 1];
            b--;
        }
        tr->ids[b] = x;
    }
    for (int64_t a = nc; a < ROWS; a++)
        tr->ids[a] = 0;
}

struct stats {
    int64_t queries, exact_ranks, id_mismatch, ties, groups;
    enum table_kind kind; /* of the run being checked */
    float sh_score;       /* the shared rows' score in the query's list */
    int sh_score_set;
};

static void check_topk(const struct truth *tr, const int64_t *ids, const float *sc, int K,
                       int exact, const char *what, int64_t i, struct stats *st)
{
    uint8_t seen[ROWS + 1] = {0};
    for (int j = 0; j < K; j++) {
        int64_t want = j < ROWS ? tr->ids[j] : 0, got = ids[j];
        if (want == 0) {
            T_CHECK(got == 0 && isinf(sc[j]) && sc[j] < 0,
                    "%s query %lld: top-K[%d] = %lld (%g), want padding", what, (long long)i, j,
                    (long long)got, (double)sc[j]);
            continue;
        }
        T_CHECK(got >= 1 && got <= ROWS && !tr->excluded[got] && !seen[got],
                "%s query %lld: top-K[%d] = %lld is not a fresh candidate", what, (long long)i,
                j, (long long)got);
        seen[got] = 1;
        for (int k = 0; k < j; k++) /* the shared rows: one score, ascending ids */
            if (sc[k] == sc[j] && is_shared_id(TAB_SHARED, ids[k]) &&
                is_shared_id(TAB_SHARED, got) && st->kind == TAB_SHARED)
                T_CHECK(ids[k] < got, "%s query %lld: shared ids %lld before %lld", what,
                        (long long)i, (long long)ids[k], (long long)got);
        if (st->kind == TAB_SHARED && is_shared_id(TAB_SHARED, got)) {
            if (st->sh_score_set)
                T_CHECK(sc[j] == st->sh_score, "%s query %lld: shared id %lld scores %.9g, "
                        "another %.9g", what, (long long)i, (long long)got, (double)sc[j],
                        (double)st->sh_score);
            st->sh_score = sc[j];
            st->sh_score_set = 1;
        }
        if (exact)
            T_CHECK(got == want && sc[j] == (float)tr->s[want],
                    "%s query %lld: top-K[%d] = %lld (%g), want %lld (%g)", what, (long long)i,
                    j, (long long)got, (double)sc[j], (long long)want, tr->s[want]);
        T_CHECK(fabs(tr->s[got] - tr->s[want]) <= tr->tol && fabs(sc[j] - tr->s[got]) <= tr->tol,
                "%s query %lld: top-K[%d] = %lld scores %g (returned %g), want %lld at %g", what,
                (long long)i, j, (long long)got, tr->s[got], (double)sc[j], (long long)want,
                tr->s[want]);
        st->id_mismatch += got != want;
    }
}

static void run(struct comm *c, int G, enum table_kind kind, int tiny, int K, struct stats *st)
{
    char err[512], what[160];
    T_CHECK(!comm_setup_groups(c, G, err, sizeof err), "%s", err);
    snprintf(what, sizeof what, "G=%d %s %s K=%d", G, kind_name[kind],
             tiny ? "tiny blocks" : "default blocks", K);
    struct emb_table_conf conf = {.rows = ROWS, .dim = DIM, .init = EMB_INIT_NORMAL,
                                  .init_scale = 0.5f, .seed = 31};
    snprintf(conf.name, sizeof conf.name, "items");
    struct emb_registry reg = {0};
    struct emb_table *t = emb_registry_add(&reg, c, &conf);
    float shrow[DIM];
    shared_row(shrow);
    if (kind == TAB_INT || kind == TAB_SHARED) /* write the rows into this rank's shard */
        for (int64_t id = 1; id <= ROWS; id++)
            if (id % G == t->shard && (kind == TAB_INT || is_shared_id(kind, id))) {
                if (kind == TAB_INT)
                    int_row(id, emb_shard_slot(t, id));
                else
                    memcpy(emb_shard_slot(t, id), shrow, sizeof shrow);
            }
    struct qset q;
    make_queries(&q, c->rank, c->size, kind);
    struct eval_conf ec = {.normalize_items = kind == TAB_NORM || kind == TAB_SHARED, .topk = K,
                           .shared_row = kind == TAB_SHARED ? shrow : NULL};
    st->kind = kind;
    if (tiny) {
        ec.round = 3;
        ec.qblock = 2;
        ec.iblock = 5;
    }
    int64_t *rank = xmalloc((size_t)(q.n + 1) * sizeof *rank);
    int64_t *ties = xmalloc((size_t)(q.n + 1) * sizeof *ties);
    int64_t *ids = xmalloc((size_t)(q.n + 1) * (size_t)K * sizeof *ids);
    float *sc = xmalloc((size_t)(q.n + 1) * (size_t)K * sizeof *sc);
    struct eval_queries eq = {q.n, q.u, q.targets, q.hist_off, q.hist_ids};
    eval_retrieval_queries(t, c, &backend_cpu, &ec, &eq, rank, ties, ids, sc);

    double *e = xmalloc((ROWS + 1) * DIM * sizeof *e);
    table_rows(&conf, kind, e);
    struct truth *tr = xmalloc(sizeof *tr);
    const int exact = kind == TAB_INT;
    for (int64_t i = 0; i < q.n; i++) {
        brute_force(e, &q, i, exact, kind, tr);
        /* rank .. rank + ties within lo .. hi and the ties that hi leaves out (exact
         * ties; a shared target's group) */
        const int64_t hi = tr->hi + (exact ? tr->ties : 0) +
                           (is_shared_id(kind, q.targets[i]) ? tr->shared : 0);
        T_CHECK(rank[i] >= tr->lo && rank[i] + ties[i] <= hi,
                "%s query %lld: rank %lld (+%lld ties), want %lld..%lld", what, (long long)i,
                (long long)rank[i], (long long)ties[i], (long long)tr->lo, (long long)hi);
        if (exact)
            T_CHECK(ties[i] == tr->ties, "%s query %lld: %lld ties, want %lld", what,
                    (long long)i, (long long)ties[i], (long long)tr->ties);
        if (kind == TAB_SHARED) { /* the group as a whole: tied with a shared target, and
                                     else above (counted in rank), tied or below it */
            if (is_shared_id(kind, q.targets[i])) /* no own row ties a float exactly */
                T_CHECK(ties[i] == tr->shared, "%s query %lld: shared target with %lld ties, "
                        "%lld shared candidates", what, (long long)i, (long long)ties[i],
                        (long long)tr->shared);
            else if (tr->group != 0)
                T_CHECK(ties[i] == 0, "%s query %lld: %lld ties though the shared group is %s "
                        "the target", what, (long long)i, (long long)ties[i],
                        tr->group > 0 ? "above" : "below");
            else
                T_CHECK(ties[i] == 0 || ties[i] == tr->shared, "%s query %lld: %lld ties, "
                        "not the shared group (%lld) nor none", what, (long long)i,
                        (long long)ties[i], (long long)tr->shared);
            st->groups += tr->shared > 0;
        }
        st->queries++;
        st->exact_ranks += tr->lo == tr->hi;
        st->ties += exact ? tr->ties : 0;
        st->sh_score_set = 0;
        check_topk(tr, ids + i * K, sc + i * K, K, exact, what, i, st);
    }
    /* rank only, no top-K: the same ranks */
    ec.topk = 0;
    int64_t *rank2 = xmalloc((size_t)(q.n + 1) * sizeof *rank2);
    int64_t *ties2 = xmalloc((size_t)(q.n + 1) * sizeof *ties2);
    eval_retrieval_queries(t, c, &backend_cpu, &ec, &eq, rank2, ties2, NULL, NULL);
    for (int64_t i = 0; i < q.n; i++)
        T_CHECK(rank2[i] == rank[i] && ties2[i] == ties[i],
                "%s query %lld: rank without top-K %lld + %lld != %lld + %lld", what,
                (long long)i, (long long)rank2[i], (long long)ties2[i], (long long)rank[i],
                (long long)ties[i]);
    free(ties2);

    /* a diverged model: a NaN user vector (rank 0 only) misses every cutoff
     * and gets an empty (padded) top-K list */
    if (kind == TAB_RAW && !tiny) {
        float un[DIM] = {NAN, 0, 0, 0, 0, 0};
        int64_t tg = 5, off[2] = {0, 0}, r0 = -1, nid[100];
        float nsc[100];
        struct eval_queries nq = {c->rank == 0, un, &tg, off, NULL};
        ec.topk = K;
        eval_retrieval_queries(t, c, &backend_cpu, &ec, &nq, &r0, NULL, nid, nsc);
        if (c->rank == 0) {
            T_CHECK(r0 == ROWS, "%s: NaN query ranked %lld", what, (long long)r0);
            for (int j = 0; j < K; j++)
                T_CHECK(nid[j] == 0 && isinf(nsc[j]), "%s: NaN query top-K[%d] = %lld", what,
                        j, (long long)nid[j]);
        }
    }

    /* metrics over all ranks against sums of every rank's brute-force ranks */
    if (exact && !tiny) {
        struct eval_metrics m;
        eval_metrics_init(&m);
        for (int64_t i = 0; i < q.n; i++)
            eval_metrics_add(&m, rank[i], ties[i]);
        eval_metrics_reduce(&m, c);
        double hr10 = 0, nd50 = 0, mrr = 0, hr1 = 0;
        int64_t n = 0;
        for (int r = 0; r < c->size; r++) {
            struct qset o;
            make_queries(&o, r, c->size, kind);
            for (int64_t i = 0; i < o.n; i++, n++) { /* the mean over the ties' positions */
                brute_force(e, &o, i, 1, kind, tr);
                for (int64_t p = tr->lo; p <= tr->lo + tr->ties; p++) {
                    const double w = 1.0 / (double)(tr->ties + 1);
                    hr1 += w * (p < 1);
                    hr10 += w * (p < 10);
                    nd50 += w * (p < 50 ? 1 / log2((double)p + 2) : 0);
                    mrr += w / ((double)p + 1);
                }
            }
            free_queries(&o);
        }
        T_CHECK(m.count == n && m.finished, "%s: metrics count %lld, want %lld", what,
                (long long)m.count, (long long)n);
        T_CHECK(fabs(m.hr[0] - hr1 / n) < 1e-12 && fabs(m.hr[1] - hr10 / n) < 1e-12 &&
                    fabs(m.ndcg[1] - nd50 / n) < 1e-12 && fabs(m.mrr - mrr / n) < 1e-12,
                "%s: metrics HR@1 %g HR@10 %g NDCG@50 %g MRR %g, want %g %g %g %g", what,
                m.hr[0], m.hr[1], m.ndcg[1], m.mrr, hr1 / n, hr10 / n, nd50 / n, mrr / n);
        T_CHECK(m.hr[1] > 0 && m.hr[3] == 1.0, "%s: degenerate metrics", what);
    }
    free(rank2);
    free(tr);
    free(e);
    free(rank);
    free(ties);
    free(ids);
    free(sc);
    free_queries(&q);
    emb_registry_free(&reg);
}

int main(int argc, char **argv)
{
    struct comm c;
    comm_init(&c, &argc, &argv);
    const int P = c.size;
    int groups[3] = {1, 2, P}, tested = 0;
    struct stats st = {0};
    for (int gi = 0; gi < 3; gi++) {
        int G = groups[gi];
        if (P % G != 0 || (gi == 2 && (G == 1 || G == 2)))
            continue;
        for (int kind = 0; kind < TAB_N; kind++)
            for (int tiny = 0; tiny < 2; tiny++)
                for (int K = 7; K <= 100; K += 93)
                    run(&c, G, (enum table_kind)kind, tiny, K, &st);
        tested++;
    }
    int64_t queries = comm_allreduce_sum_i64(&c, st.queries);
    int64_t exact = comm_allreduce_sum_i64(&c, st.exact_ranks);
    int64_t mism = comm_allreduce_sum_i64(&c, st.id_mismatch);
    int64_t ties = comm_allreduce_sum_i64(&c, st.ties);
    /* the tolerance bands must be narrow: almost every rank pinned exactly */
    T_CHECK(exact >= queries * 98 / 100, "only %lld of %lld ranks exact", (long long)exact,
            (long long)queries);
    T_CHECK(ties > 0, "the integer table produced no ties with the target");
    int64_t shgroups = comm_allreduce_sum_i64(&c, st.groups);
    T_CHECK(shgroups > 0, "the shared table had no shared candidates");
    if (c.rank == 0)
        printf("eval_rank on %d ranks: %d group sizes, %lld query checks (%lld ranks exact, "
               "%lld items tied with their target, %lld shared groups, %lld top-K ids "
               "differing within tolerance) ok\n",
               P, tested, (long long)queries, (long long)exact, (long long)ties,
               (long long)shgroups, (long long)mism);
    comm_free(&c);
    return 0;
}
