/* emb_optim: row-wise sparse optimizers; see emb_optim.h. */
#include "embedding/emb_optim.h"

#include <math.h>
#include <string.h>

int emb_optim_parse(const char *name)
{
    if (!strcmp(name, "sgd")) return EMB_OPT_SGD;
    if (!strcmp(name, "adagrad")) return EMB_OPT_ADAGRAD;
    if (!strcmp(name, "adam")) return EMB_OPT_ADAM;
    return -1;
}

const char *emb_optim_name(enum emb_optimizer kind)
{
    return kind == EMB_OPT_SGD ? "sgd" : kind == EMB_OPT_ADAGRAD ? "adagrad" : "adam";
}

int64_t emb_optim_state_floats(enum emb_optimizer kind, int dim)
{
    return kind == EMB_OPT_SGD ? 0 : kind == EMB_OPT_ADAGRAD ? 1 : 2 * (int64_t)dim;
}

void emb_optim_row(const struct emb_optim_conf *o, int dim, float *w, float *state,
                   int64_t *step, const float *g)
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
