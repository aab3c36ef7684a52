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

#include <stdint.h>

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
void emb_optim_row(const struct emb_optim_conf *o, int dim, float *w, float *state,
                   int64_t *step, const float *g);

#endif
