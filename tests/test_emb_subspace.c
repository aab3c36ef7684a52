/* test_emb_subspace: subspace-factorised tables (emb_subspace.h) on P ranks.
 *   - U has orthonormal columns (to 1e-6), the same on every rank; the
 *     identity basis is I[:, :k] with F = 0;
 *   - a lookup returns F(i) + U c[i] (to 1e-6 of the double-precision
 *     value), c[i] starting as the first k values of the plain row;
 *   - the gradient of c: with L = sum over every rank's tokens t of
 *     sum_j a_tj sin(E[id_t]_j), the backward (SGD, lr 1) moves c[i] by
 *     exactly -dL/dc[i], which is compared with central finite differences
 *     of L in double (to 1e-4 relative, floored at 1% of the largest);
 *   - with argv[1] (one rank), the case is written for the PyTorch oracle
 *     (tests/torch_subspace.py): records of name[16], type 'f' or 'q',
 *     ndim, dims (int64) and the data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "comm/comm.h"
#include "embedding/emb_exchange.h"
#include "embedding/emb_subspace.h"
#include "mpitest.h"

#define ROWS 41
#define DIM 12
#define K 5
#define NTOK 24

static int64_t id_of(int r, int i) { return 1 + (r * 11 + i * i * 3 + i) % ROWS; }
static double a_of(int r, int i, int j) { return sin(0.3 * r + 0.7 * i + 1.1 * j) + 0.2; }

/* L's terms of id over every rank's tokens, as a function of c (double). */
static double loss_of_id(const struct emb_subspace *s, const double *f, const double *c,
                         int64_t id, int P)
{
    double e[DIM], L = 0;
    for (int j = 0; j < DIM; j++) {
        e[j] = f[j];
        for (int m = 0; m < K; m++)
            e[j] += (double)s->U[j * K + m] * c[m];
    }
    for (int r = 0; r < P; r++)
        for (int i = 0; i < NTOK; i++)
            if (id_of(r, i) == id)
                for (int j = 0; j < DIM; j++)
                    L += a_of(r, i, j) * sin(e[j]);
    return L;
}

static void put(FILE *fp, const char *name, char type, int nd, const int64_t *dims,
                const void *data)
{
    char nm[16] = {0};
    snprintf(nm, sizeof nm, "%s", name);
    int64_t n = 1, nd64 = nd;
    for (int i = 0; i < nd; i++)
        n *= dims[i];
    T_CHECK(fwrite(nm, 16, 1, fp) == 1 && fwrite(&type, 1, 1, fp) == 1 &&
                fwrite(&nd64, 8, 1, fp) == 1 && fwrite(dims, 8, (size_t)nd, fp) == (size_t)nd &&
                fwrite(data, type == 'q' ? 8 : 4, (size_t)n, fp) == (size_t)n,
            "write %s", name);
}

static void check_basis(struct comm *c, const struct emb_table_conf *conf)
{
    struct emb_subspace s;
    emb_subspace_init(&s, conf);
    for (int p = 0; p < K; p++)
        for (int q = 0; q < K; q++) {
            double dot = 0;
            for (int j = 0; j < DIM; j++)
                dot += (double)s.U[j * K + p] * s.U[j * K + q];
            T_CHECK(fabs(dot - (p == q)) < 1e-6, "U^T U [%d, %d] = %g", p, q, dot);
        }
    float u0[DIM * K];
    memcpy(u0, s.U, sizeof u0);
    comm_bcast_bytes(c, u0, sizeof u0, 0);
    T_CHECK(!memcmp(u0, s.U, sizeof u0), "U differs between ranks");
    emb_subspace_free(&s);
    struct emb_table_conf ic = *conf;
    ic.subspace_identity = 1;
    emb_subspace_init(&s, &ic);
    float f[DIM];
    emb_subspace_f(&s, &ic, 7, f);
    for (int j = 0; j < DIM; j++) {
        T_CHECK(f[j] == 0, "identity: F != 0");
        for (int m = 0; m < K; m++)
            T_CHECK(s.U[j * K + m] == (j == m), "identity: U[%d, %d]", j, m);
    }
    emb_subspace_free(&s);
}

int main(int argc, char **argv)
{
    struct comm c;
    comm_init(&c, &argc, &argv);
    const int P = c.size;
    struct emb_table_conf conf = {.rows = ROWS, .dim = DIM, .init = EMB_INIT_NORMAL,
                                  .init_scale = 0.5f, .seed = 3, .subspace_k = K};
    snprintf(conf.name, sizeof conf.name, "items");
    conf.optim = (struct emb_optim_conf){.kind = EMB_OPT_SGD, .lr = 1.0f};
    check_basis(&c, &conf);
    struct emb_registry reg = {0};
    struct emb_table *t = emb_registry_add(&reg, &c, &conf);
    T_CHECK(t->width == K && t->state_floats == 0, "a subspace table stores k values");
    int64_t ids[NTOK];
    for (int i = 0; i < NTOK; i++)
        ids[i] = id_of(c.rank, i);
    float e[NTOK * DIM], g[NTOK * DIM], f[DIM], c0[K];
    struct emb_exchange *x = emb_lookup(t, &c, ids, NTOK, e, NULL);
    for (int i = 0; i < NTOK; i++) { /* E = F + U c, c the plain row's first k values */
        emb_init_row_n(&conf, ids[i], c0, K);
        emb_subspace_f(t->sub, &conf, ids[i], f);
        for (int j = 0; j < DIM; j++) {
            double want = f[j];
            for (int m = 0; m < K; m++)
                want += (double)t->sub->U[j * K + m] * c0[m];
            T_CHECK(fabs(e[i * DIM + j] - want) <= 1e-6 * (1 + fabs(want)),
                    "lookup of id %lld [%d]: %g, expected %g", (long long)ids[i], j,
                    e[i * DIM + j], want);
        }
    }
    for (int i = 0; i < NTOK; i++) /* dL/dE of each token */
        for (int j = 0; j < DIM; j++)
            g[i * DIM + j] = (float)(a_of(c.rank, i, j) * cos(e[i * DIM + j]));
    emb_backward(t, &c, x, g, NULL);
    emb_exchange_free(x);
    /* this shard's ids: -(c_new - c_old) against finite differences */
    double worst = 0, gmax = 0;
    float gc[ROWS + 1][K];
    memset(gc, 0, sizeof gc);
    for (int64_t id = 1; id <= ROWS; id++) {
        if (id % t->G != t->shard)
            continue;
        const float *cn = emb_shard_slot(t, id);
        emb_init_row_n(&conf, id, c0, K);
        for (int m = 0; m < K; m++) {
            gc[id][m] = c0[m] - cn[m];
            gmax = fmax(gmax, fabs(gc[id][m]));
        }
    }
    gmax = comm_allreduce_max_f64(&c, COMM_WORLD, gmax);
    T_CHECK(gmax > 0, "no gradient reached c");
    for (int64_t id = 1; id <= ROWS; id++) {
        if (id % t->G != t->shard)
            continue;
        double cd[K], fd[DIM];
        emb_init_row_n(&conf, id, c0, K);
        emb_subspace_f(t->sub, &conf, id, f);
        for (int j = 0; j < DIM; j++)
            fd[j] = f[j];
        for (int m = 0; m < K; m++) {
            for (int q = 0; q < K; q++)
                cd[q] = c0[q];
            const double h = 1e-5;
            cd[m] = c0[m] + h;
            double lp = loss_of_id(t->sub, fd, cd, id, P);
            cd[m] = c0[m] - h;
            double lm = loss_of_id(t->sub, fd, cd, id, P);
            double num = (lp - lm) / (2 * h), err = fabs(num - gc[id][m]);
            T_CHECK(err <= 1e-4 * fmax(fabs(num), 0.01 * gmax), "id %lld: dL/dc[%d] = %.9g, "
                    "finite differences %.9g", (long long)id, m, gc[id][m], num);
            worst = fmax(worst, err / fmax(fabs(num), 0.01 * gmax));
        }
    }
    worst = comm_allreduce_max_f64(&c, COMM_WORLD, worst);
    if (c.rank == 0)
        printf("ok: P = %d: dL/dc against finite differences, worst %.3g relative\n", P, worst);
    if (argc > 1 && P == 1) { /* the case for torch_subspace.py */
        FILE *fp = fopen(argv[1], "wb");
        T_CHECK(fp, "cannot open %s", argv[1]);
        float F[(ROWS + 1) * DIM] = {0}, C[(ROWS + 1) * K] = {0}, A[NTOK * DIM];
        for (int64_t id = 1; id <= ROWS; id++) {
            emb_subspace_f(t->sub, &conf, id, F + id * DIM);
            emb_init_row_n(&conf, id, C + id * K, K);
        }
        for (int i = 0; i < NTOK; i++)
            for (int j = 0; j < DIM; j++)
                A[i * DIM + j] = (float)a_of(0, i, j);
        int64_t du[2] = {DIM, K}, df[2] = {ROWS + 1, DIM}, dc[2] = {ROWS + 1, K},
                dt[1] = {NTOK}, da[2] = {NTOK, DIM};
        put(fp, "U", 'f', 2, du, t->sub->U);
        put(fp, "F", 'f', 2, df, F);
        put(fp, "c", 'f', 2, dc, C);
        put(fp, "ids", 'q', 1, dt, ids);
        put(fp, "a", 'f', 2, da, A);
        put(fp, "grad_c", 'f', 2, dc, gc);
        T_CHECK(fclose(fp) == 0, "close %s", argv[1]);
    }
    emb_registry_free(&reg);
    comm_free(&c);
    return 0;
}
