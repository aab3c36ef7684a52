/* model_exact: the dense gradients as exact sums (train.exact_sums; see
 * model.h and base/exact.h). Without them each helper is the one backend
 * call it replaces. */
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/exact.h"
#include "model/model.h"

void model_exact_enable(struct model *m)
{
    if (!backend_is_host(m->be))
        fatal("model: exact sums need a host backend (backend %s)", m->be->name);
    free(m->xgrad);
    m->xgrad = xcalloc((size_t)m->ngrad * EXACT_LIMBS + 1, sizeof *m->xgrad);
}

int64_t *model_exact_arena(struct model *m, int64_t *n)
{
    *n = m->ngrad * EXACT_LIMBS + 1;
    return m->xgrad;
}

void model_exact_finish(struct model *m)
{
    exact_to_float(m->xgrad, m->ngrad, m->xgrad[m->ngrad * EXACT_LIMBS], m->grad);
}

float *model_grad_tmp(struct model *m, int64_t n)
{
    if (n > m->xtmp_n) {
        free(m->xtmp);
        m->xtmp = xmalloc((size_t)n * sizeof *m->xtmp);
        m->xtmp_n = n;
    }
    return m->xtmp;
}

/* the accumulators of the arena's float g */
static int64_t *acc_of(struct model *m, const float *g)
{
    const int64_t at = g - m->grad;
    if (at < 0 || at >= m->ngrad)
        fatal("model_exact: a gradient outside the arena (offset %lld)", (long long)at);
    return m->xgrad + at * EXACT_LIMBS;
}

void model_grad_add(struct model *m, float *g, const float *v, int64_t n)
{
    exact_add_vec(acc_of(m, g), v, n, &m->xgrad[m->ngrad * EXACT_LIMBS]);
}

void model_gemm_rows(struct model *m, const struct batch *b, int dense, int trans_b, int64_t N,
                     int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                     float beta, float *C, int64_t ldc)
{
    const struct backend_ops *be = m->be;
    const int64_t B_ = m->xgrad ? b->B : 1;
    for (int64_t s = 0; s < B_; s++) {
        const int64_t t0 = m->xgrad ? b->offsets[s] : 0,
                      L = m->xgrad ? b->offsets[s + 1] - t0 : b->T;
        if (L == 0)
            continue;
        if (dense)
            backend_gemm_dense(be, 0, trans_b, L, N, K, 1.0f, A + t0 * lda, lda, B, ldb, beta,
                               C + t0 * ldc, ldc);
        else
            be->gemm(0, trans_b, L, N, K, 1.0f, A + t0 * lda, lda, B, ldb, beta, C + t0 * ldc,
                     ldc);
    }
}

void model_grad_tokens(struct model *m, const struct batch *b, int dense, int64_t M, int64_t N,
                       const float *A, int64_t lda, const float *Bm, int64_t ldb, float *g,
                       int64_t ldg)
{
    const struct backend_ops *be = m->be;
    if (!m->xgrad) {
        if (dense)
            backend_gemm_dense(be, 1, 0, M, N, b->T, 1.0f, A, lda, Bm, ldb, 1.0f, g, ldg);
        else
            be->gemm(1, 0, M, N, b->T, 1.0f, A, lda, Bm, ldb, 1.0f, g, ldg);
        return;
    }
    float *tmp = model_grad_tmp(m, M * N);
    int64_t *bad = &m->xgrad[m->ngrad * EXACT_LIMBS];
    for (int64_t s = 0; s < b->B; s++) { /* one sequence's part, then exactly */
        const int64_t t0 = b->offsets[s], L = b->offsets[s + 1] - t0;
        if (L == 0)
            continue;
        if (dense)
            backend_gemm_dense(be, 1, 0, M, N, L, 1.0f, A + t0 * lda, lda, Bm + t0 * ldb, ldb,
                               0.0f, tmp, N);
        else
            be->gemm(1, 0, M, N, L, 1.0f, A + t0 * lda, lda, Bm + t0 * ldb, ldb, 0.0f, tmp, N);
        for (int64_t i = 0; i < M; i++)
            exact_add_vec(acc_of(m, g + i * ldg), tmp + i * N, N, bad);
    }
}

void model_layernorm_bwd(struct model *m, const struct batch *b, int d, const float *x,
                         const float *mean, const float *rstd, const float *gamma,
                         const float *dy, float *dx, float *dgamma, float *dbeta)
{
    const struct backend_ops *be = m->be;
    if (!m->xgrad) {
        be->layernorm_bwd(b->T, d, x, mean, rstd, gamma, dy, dx, dgamma, dbeta);
        return;
    }
    float *tmp = model_grad_tmp(m, 2 * (int64_t)d);
    for (int64_t s = 0; s < b->B; s++) { /* rows are independent: one sequence at a time */
        const int64_t t0 = b->offsets[s], L = b->offsets[s + 1] - t0;
        memset(tmp, 0, 2 * (size_t)d * sizeof *tmp);
        be->layernorm_bwd(L, d, x + t0 * d, mean + t0, rstd + t0, gamma, dy + t0 * d,
                          dx + t0 * d, tmp, tmp + d);
        model_grad_add(m, dgamma, tmp, d);
        model_grad_add(m, dbeta, tmp + d, d);
    }
}

void model_grad_colsums(struct model *m, const struct batch *b, int o, const float *dy, float *g)
{
    if (!m->xgrad) {
        m->be->col_sums(b->T, o, dy, g);
        return;
    }
    float *tmp = model_grad_tmp(m, o);
    for (int64_t s = 0; s < b->B; s++) { /* one sequence's sums, then exactly */
        const int64_t t0 = b->offsets[s], L = b->offsets[s + 1] - t0;
        memset(tmp, 0, (size_t)o * sizeof *tmp);
        m->be->col_sums(L, o, dy + t0 * o, tmp);
        model_grad_add(m, g, tmp, o);
    }
}

void model_grad_rows(struct model *m, int64_t T, int d, const float *dx, const int64_t *idx,
                     float *g)
{
    if (!m->xgrad) {
        m->be->scatter_add_rows(T, d, dx, idx, g);
        return;
    }
    int64_t *bad = &m->xgrad[m->ngrad * EXACT_LIMBS];
    for (int64_t t = 0; t < T; t++) /* each token's row, exactly */
        exact_add_vec(acc_of(m, g + idx[t] * d), dx + t * d, d, bad);
}
