/* test_loss_full: the full softmax over the sharded table (model/loss_full.c)
 * on P ranks with embedding group G, against a double-precision reference
 * computed here over the whole table on one rank; the results (loss, du of
 * every position, the gradient of every table row) go to OUT.bin for the
 * PyTorch oracle tests/torch_loss_full.py and for comparisons between rank
 * counts (tests/grad_loss_full.sh).
 *
 * usage: mpirun -np P test_loss_full OUT.bin [G]
 * Cases: HSTU-like (normalised rows, tau = 0.05) and SASRec-like (raw rows,
 * tau = 1) on a small table, and a table of 40000 items that takes the
 * blocked paths (several blocks of positions, several item blocks per
 * shard at G <= 2). Every rank holds a contiguous share of the positions,
 * some unsupervised. Record format: tests/test_loss.c. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/check.h"
#include "base/rng.h"
#include "comm/comm.h"
#include "model/loss.h"
#include "model/loss_full.h"
#include "mpitest.h"
#include "oracle_records.h"

struct fcase {
    const char *name;
    int64_t N, I; /* positions (all ranks), items */
    int d, normalize;
    float tau;
};

/* The reference: loss sum and gradients (scaled) in double over the whole
 * table. u: [N, d], tab: [I + 1, d] (row 0 unused), tgt: [N]. */
static double reference(const struct fcase *k, const float *u, const float *tab,
                        const int64_t *tgt, double scale, double *du, double *dtab)
{
    const int d = k->d;
    const int64_t I = k->I;
    double *e = calloc((size_t)(I + 1) * d, sizeof *e), *nrm = calloc((size_t)I + 1, 8);
    double *s = malloc((size_t)(I + 1) * sizeof *s), *de = calloc((size_t)(I + 1) * d, 8);
    for (int64_t j = 1; j <= I; j++) {
        double n = 0;
        for (int c = 0; c < d; c++)
            n += (double)tab[j * d + c] * tab[j * d + c];
        nrm[j] = k->normalize ? fmax(sqrt(n), 1e-6) : 1.0;
        for (int c = 0; c < d; c++)
            e[j * d + c] = tab[j * d + c] / nrm[j];
    }
    double total = 0;
    memset(du, 0, (size_t)k->N * d * sizeof *du);
    for (int64_t i = 0; i < k->N; i++) {
        if (tgt[i] < 1)
            continue;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 1; j <= I; j++) {
            double v = 0;
            for (int c = 0; c < d; c++)
                v += (double)u[i * d + c] * e[j * d + c];
            s[j] = v / k->tau;
            mx = fmax(mx, s[j]);
        }
        for (int64_t j = 1; j <= I; j++)
            sum += exp(s[j] - mx);
        total += mx + log(sum) - s[tgt[i]];
        for (int64_t j = 1; j <= I; j++) {
            double g = (exp(s[j] - mx) / sum - (j == tgt[i])) * scale / k->tau;
            for (int c = 0; c < d; c++) {
                du[i * d + c] += g * e[j * d + c];
                de[j * d + c] += g * u[i * d + c];
            }
        }
    }
    memset(dtab, 0, (size_t)(I + 1) * d * sizeof *dtab);
    for (int64_t j = 1; j <= I; j++) { /* through the normalisation */
        double dot = 0;
        for (int c = 0; c < d; c++)
            dot += e[j * d + c] * de[j * d + c];
        for (int c = 0; c < d; c++)
            dtab[j * d + c] = k->normalize ? (de[j * d + c] - e[j * d + c] * dot) / nrm[j]
                                           : de[j * d + c];
    }
    free(e);
    free(nrm);
    free(s);
    free(de);
    return total;
}

/* |got - want| / |want| */
static double norm_rel(const float *got, const double *want, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num += (got[i] - want[i]) * (got[i] - want[i]);
        den += want[i] * want[i];
    }
    return sqrt(num / (den > 0 ? den : 1e-300));
}

/* elementwise, floored at 1% of the largest |want| */
static double max_rel(const float *got, const double *want, int64_t n)
{
    double big = 0, worst = 0;
    for (int64_t i = 0; i < n; i++)
        big = fmax(big, fabs(want[i]));
    for (int64_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(got[i] - want[i]) / (fabs(want[i]) + 0.01 * big + 1e-30));
    return worst;
}

static int run_case(struct comm *c, const struct fcase *k, FILE *out)
{
    const struct backend_ops *be = &backend_cpu;
    const int P = c->size, me = c->rank, G = c->g[COMM_EMB].size, d = k->d;
    const int64_t N = k->N, I = k->I;
    /* the same inputs on every rank */
    float *u = xmalloc((size_t)N * d * sizeof *u), *tab = xcalloc((size_t)(I + 1) * d, 4);
    int64_t *tgt = xmalloc((size_t)N * sizeof *tgt), nsup = 0;
    struct rng g;
    rng_init(&g, rng_key(7, (uint64_t)N, (uint64_t)I));
    for (int64_t i = 0; i < N; i++) { /* HSTU's user vectors are L2-normalised */
        double n2 = 0;
        for (int c = 0; c < d; c++) {
            u[i * d + c] = (float)rng_normal(&g) * 0.3f;
            n2 += (double)u[i * d + c] * u[i * d + c];
        }
        for (int c = 0; k->normalize && c < d; c++)
            u[i * d + c] = (float)(u[i * d + c] / sqrt(n2));
    }
    for (int64_t i = d; i < (I + 1) * d; i++)
        tab[i] = (float)rng_normal(&g) * 0.3f;
    for (int64_t i = 0; i < N; i++) {
        tgt[i] = i % 7 == 3 ? 0 : 1 + (int64_t)rng_below(&g, (uint64_t)I);
        nsup += tgt[i] >= 1;
    }
    const float scale = 1.0f / (float)nsup;
    /* this rank's positions and shard */
    const int64_t p0 = N * me / P, T = N * (me + 1) / P - p0;
    const int64_t m = loss_full_shard_ids(G, c->g[COMM_EMB].rank, I, NULL);
    int64_t *ids = xmalloc((size_t)(m ? m : 1) * 8), *idx = xmalloc((size_t)(m ? m : 1) * 8);
    loss_full_shard_ids(G, c->g[COMM_EMB].rank, I, ids);
    float *rows = xmalloc((size_t)(m ? m : 1) * d * 4), *drows = xcalloc((size_t)(m ? m : 1) * d, 4);
    for (int64_t j = 0; j < m; j++) {
        idx[j] = j;
        memcpy(rows + j * d, tab + ids[j] * d, (size_t)d * 4);
    }
    float *du = xmalloc((size_t)(T ? T : 1) * d * 4);
    const struct loss_full_shard sh = {.G = G, .shard = c->g[COMM_EMB].rank, .num_items = I,
                                       .m = m, .idx = idx};
    int64_t count = 0;
    double share = loss_full_softmax(be, c, T, d, k->tau, k->normalize, u + p0 * d, tgt + p0, m,
                                     rows, &sh, scale, du, drows, &count);
    double loss = comm_allreduce_sum_f64(c, COMM_DP, share);
    int64_t counted = comm_allreduce_sum_i64(c, count);
    /* du of every position on rank 0; the table's gradient summed over
     * replicas, then assembled over the group */
    int64_t *cnt = xmalloc((size_t)P * 8);
    for (int r = 0; r < P; r++)
        cnt[r] = (N * (r + 1) / P - N * r / P) * d;
    float *du_all = xmalloc((size_t)N * d * 4);
    comm_gatherv(c, COMM_DP, COMM_F32, du, T * d, du_all, cnt, 0);
    comm_allreduce_sum_f32(c, COMM_EMB_REPLICA, drows, m * d, COMM_PH_OTHER);
    float *dtab = xcalloc((size_t)(I + 1) * d, 4);
    for (int64_t j = 0; j < m; j++)
        memcpy(dtab + ids[j] * d, drows + j * d, (size_t)d * 4);
    comm_allreduce_sum_f32(c, COMM_EMB, dtab, (I + 1) * d, COMM_PH_OTHER);
    int bad = 0;
    if (me == 0) {
        double *rdu = xmalloc((size_t)N * d * 8), *rdt = xmalloc((size_t)(I + 1) * d * 8);
        double want = reference(k, u, tab, tgt, scale, rdu, rdt);
        double el = fabs(loss - want) / fabs(want), eu = max_rel(du_all, rdu, N * d);
        double et = max_rel(dtab, rdt, (I + 1) * d);
        double nu_ = norm_rel(du_all, rdu, N * d), nt = norm_rel(dtab, rdt, (I + 1) * d);
        bad = !(el <= 1e-5 && nu_ <= 1e-5 && nt <= 1e-5 && eu <= 1e-4 && et <= 1e-4) ||
              counted != nsup;
        printf("%s %s: P = %d, G = %d: loss %.9g (reference %.9g, rel %.1e), du rel %.1e "
               "(elementwise %.1e), drows rel %.1e (elementwise %.1e), %lld supervised\n",
               bad ? "FAIL" : "ok", k->name, P, G, loss, want, el, nu_, eu, nt, et,
               (long long)counted);
        int64_t meta[4] = {N, I, d, k->normalize};
        double fm[3] = {k->tau, scale, loss};
        oracle_put(out, k->name, "meta", 'q', 4, meta);
        oracle_put(out, k->name, "tau_scale_loss", 'd', 3, fm);
        oracle_put(out, k->name, "u", 'f', N * d, u);
        oracle_put(out, k->name, "rows", 'f', (I + 1) * d, tab);
        oracle_put(out, k->name, "targets", 'q', N, tgt);
        oracle_put(out, k->name, "du", 'f', N * d, du_all);
        oracle_put(out, k->name, "drows", 'f', (I + 1) * d, dtab);
        free(rdu);
        free(rdt);
    }
    comm_bcast_bytes(c, &bad, sizeof bad, 0);
    free(u); free(tab); free(tgt); free(ids); free(idx); free(rows); free(drows);
    free(du); free(cnt); free(du_all); free(dtab);
    return bad;
}

int main(int argc, char **argv)
{
    struct comm c;
    comm_init(&c, &argc, &argv);
    T_CHECK(argc >= 2, "usage: test_loss_full OUT.bin [G]");
    char err[256];
    int64_t G = argc > 2 ? atoll(argv[2]) : 0;
    T_CHECK(!comm_setup_groups(&c, G, err, sizeof err), "%s", err);
    FILE *out = c.rank == 0 ? fopen(argv[1], "wb") : NULL;
    T_CHECK(c.rank != 0 || out, "cannot write %s", argv[1]);
    const struct fcase cases[] = {
        {"hstu", 61, 37, 8, 1, 0.05f},
        {"sasrec", 45, 29, 6, 0, 1.0f},
        {"blocked", 300, 40000, 4, 1, 0.1f},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        bad += run_case(&c, &cases[i], out);
    if (out)
        fclose(out);
    comm_free(&c);
    return bad ? 1 : 0;
}
