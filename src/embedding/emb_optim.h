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
 * this very function), so both backends update rows alike. */
#ifdef __CUDACC__
#define EMB_OPTIM_HD __host__ __device__
#else
#define EMB_OPTIM_HD
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

/* Update one row. w: [dim]; state: [emb_optim_state_floats]; step: the
 * row's step count (adam only, else NULL); g: [dim] summed gradient. */
static inline EMB_OPTIM_HD void emb_optim_row(const struct emb_optim_conf *o, int dim, float *w,
                                              float *state, int64_t *step, const float *g)
{
    const float lr = o->lr, wd = o->weight_decay;
    switch (o->kind) {
    case EMB_OPT_SGD:
        for (int j = 0; j < dim; j++)
            w[j] -= lr * (g[j] + wd * w[j]);
        break;
    case EMB_OPT_ADAGRAD: {
        float sq = 0;
        for (int j = 0; j < dim; j++) {
            float gj = g[j] + wd * w[j];
            sq += gj * gj;
        }
        state[0] += sq / (float)dim;
        float scale = lr / (sqrtf(state[0]) + o->eps);
        for (int j = 0; j < dim; j++)
            w[j] -= scale * (g[j] + wd * w[j]);
        break;
    }
    case EMB_OPT_ADAM: {
        float *m = state, *v = state + dim;
        int64_t t = ++*step;
        float c1 = 1.0f - (float)pow(o->beta1, (double)t);
        float c2 = 1.0f - (float)pow(o->beta2, (double)t);
        for (int j = 0; j < dim; j++) {
            m[j] = o->beta1 * m[j] + (1.0f - o->beta1) * g[j];
            v[j] = o->beta2 * v[j] + (1.0f - o->beta2) * g[j] * g[j];
            float mhat = m[j] / c1, vhat = v[j] / c2;
            w[j] -= lr * (mhat / (sqrtf(vhat) + o->eps) + wd * w[j]);
        }
        break;
    }
    }
}

#endif
