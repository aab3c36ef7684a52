/* emb_optim: sparse (row-wise) optimizers for embedding tables. Only rows
 * that received a gradient are updated; the same function serves the
 * sharded tables and the unsharded reference.
 *
 *   sgd      w -= lr (g + wd w)
 *   adagrad  row-wise Adagrad as in FBGEMM: one float of state per row,
 *            s += mean_j (g_j + wd w_j)^2;  w -= lr (g + wd w) / (sqrt(s) + eps)
 *   adam     lazy Adam with a step count per row (a row's moments and bias
 *            correction advance only when the row is touched), decoupled
 *            weight decay (AdamW): w -= lr (mhat / (sqrt(vhat) + eps) + wd w)
 */
#ifndef FS_EMB_OPTIM_H
#define FS_EMB_OPTIM_H

#include <math.h>
#include <stdint.h>

/* The row update also compiles as CUDA device code (cuda/emb.cu applies
 * this very function), so both backends update rows alike, bit for bit:
 * every product and sum is rounded on its own (the device's intrinsics;
 * on the host no fused multiply-add: GCC is told not to contract this
 * function), and beta^t comes from one power helper (products in double)
 * instead of the library pow, whose last bits differ between host and
 * device. */
#ifdef __CUDACC__
#define EMB_OPTIM_HD __host__ __device__
#else
#define EMB_OPTIM_HD
#endif
#if defined(__CUDA_ARCH__)
#define EMB_MUL(a, b) __fmul_rn((a), (b))
#define EMB_ADD(a, b) __fadd_rn((a), (b))
#define EMB_SUB(a, b) __fsub_rn((a), (b))
#define EMB_DMUL(a, b) __dmul_rn((a), (b))
#define EMB_NOCONTRACT
#else
#define EMB_MUL(a, b) ((a) * (b))
#define EMB_ADD(a, b) ((a) + (b))
#define EMB_SUB(a, b) ((a) - (b))
#define EMB_DMUL(a, b) ((a) * (b))
#if defined(__GNUC__) && !defined(__clang__)
#define EMB_NOCONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define EMB_NOCONTRACT
#endif
#endif

enum emb_optimizer { EMB_OPT_SGD, EMB_OPT_ADAGRAD, EMB_OPT_ADAM };

struct emb_optim_conf {
    enum emb_optimizer kind;
    float lr, weight_decay, eps, beta1, beta2;
};

/* Parse "sgd", "adagrad" or "adam"; -1 if unknown. */
int emb_optim_parse(const char *name);
const char *emb_optim_name(enum emb_optimizer kind);
/* Floats of optimizer state per row: 0 (sgd), 1 (adagrad), 2 dim (adam:
 * m then v). Adam also keeps an int64 step count per row. */
int64_t emb_optim_state_floats(enum emb_optimizer kind, int dim);

/* b^t for t >= 0 by squaring, in double: the same products, hence the same
 * bits, on every backend. */
static inline EMB_OPTIM_HD double emb_optim_pow(double b, int64_t t)
{
    double r = 1.0;
    while (t > 0) {
        if (t & 1)
            r = EMB_DMUL(r, b);
        b = EMB_DMUL(b, b);
        t >>= 1;
    }
    return r;
}

/* Update one row. w: [dim]; state: [emb_optim_state_floats]; step: the
 * row's step count (adam only, else NULL); g: [dim] summed gradient. */
static inline EMB_OPTIM_HD EMB_NOCONTRACT void emb_optim_row(const struct emb_optim_conf *o,
                                                             int dim, float *w, float *state,
                                                             int64_t *step, const float *g)
{
    const float lr = o->lr, wd = o->weight_decay;
    switch (o->kind) {
    case EMB_OPT_SGD:
        for (int j = 0; j < dim; j++)
            w[j] = EMB_SUB(w[j], EMB_MUL(lr, EMB_ADD(g[j], EMB_MUL(wd, w[j]))));
        break;
    case EMB_OPT_ADAGRAD: {
        float sq = 0;
        for (int j = 0; j < dim; j++) {
            float gj = EMB_ADD(g[j], EMB_MUL(wd, w[j]));
            sq = EMB_ADD(sq, EMB_MUL(gj, gj));
        }
        state[0] = EMB_ADD(state[0], sq / (float)dim);
        float scale = lr / EMB_ADD(sqrtf(state[0]), o->eps);
        for (int j = 0; j < dim; j++)
            w[j] = EMB_SUB(w[j], EMB_MUL(scale, EMB_ADD(g[j], EMB_MUL(wd, w[j]))));
        break;
    }
    case EMB_OPT_ADAM: {
        float *m = state, *v = state + dim;
        int64_t t = ++*step;
        float c1 = 1.0f - (float)emb_optim_pow(o->beta1, t);
        float c2 = 1.0f - (float)emb_optim_pow(o->beta2, t);
        for (int j = 0; j < dim; j++) {
            m[j] = EMB_ADD(EMB_MUL(o->beta1, m[j]), EMB_MUL(1.0f - o->beta1, g[j]));
            v[j] = EMB_ADD(EMB_MUL(o->beta2, v[j]), EMB_MUL(EMB_MUL(1.0f - o->beta2, g[j]), g[j]));
            float mhat = m[j] / c1, vhat = v[j] / c2;
            w[j] = EMB_SUB(w[j], EMB_MUL(lr, EMB_ADD(mhat / EMB_ADD(sqrtf(vhat), o->eps),
                                                     EMB_MUL(wd, w[j]))));
        }
        break;
    }
    }
}

#endif
