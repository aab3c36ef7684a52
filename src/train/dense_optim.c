/* dense_optim: AdamW of the dense parameters; see dense_optim.h. */
#include "train/dense_optim.h"

#include <math.h>
#include <string.h>

#include "train/bias_rows.h"

void dense_optim_init(struct dense_optim *o, const struct dense_optim_conf *conf,
                      const struct model *m)
{
    memset(o, 0, sizeof *o);
    o->conf = *conf;
    o->be = m->be;
    o->n = m->nparams;
    for (int i = 0; i < o->n; i++) {
        size_t bytes = (size_t)m->params[i].n * sizeof(float);
        o->m[i] = o->be->alloc(bytes);
        o->v[i] = o->be->alloc(bytes);
    }
}

void dense_optim_free(struct dense_optim *o)
{
    for (int i = 0; i < o->n; i++) {
        o->be->free(o->m[i]);
        o->be->free(o->v[i]);
    }
    memset(o, 0, sizeof *o);
}

void dense_optim_step(struct dense_optim *o, struct model *m, int64_t step)
{
    const struct backend_ops *be = o->be;
    const struct dense_optim_conf *c = &o->conf;
    int clipped = 0;
    float f = 1.0f;
    if (c->clip_norm > 0) {
        double sq = be->sum_squares(m->ngrad, m->grad);
        if (o->bias) /* the bias rows' gradients, summed over their owners */
            sq += bias_rows_sumsq(o->bias);
        double norm = sqrt(sq);
        if (norm > c->clip_norm) {
            f = (float)(c->clip_norm / norm);
            be->scale(m->ngrad, f, m->grad);
            clipped = 1;
        }
    }
    const double lr = dense_optim_lr(o, step);
    o->t++;
    for (int i = 0; i < o->n; i++) {
        struct dense_tensor *t = &m->params[i];
        be->adamw_step(t->n, t->w, o->m[i], o->v[i], t->g, (float)(lr * t->lr_scale), c->beta1,
                       c->beta2, c->eps, t->decay ? c->weight_decay : 0.0f, o->t);
    }
    if (o->bias)
        bias_rows_apply(o->bias, clipped, f, (float)lr, o->t);
}

double dense_optim_lr(const struct dense_optim *o, int64_t step)
{
    const struct dense_optim_conf *c = &o->conf;
    double lr = c->lr;
    if (c->warmup_steps > 0 && step < c->warmup_steps)
        lr *= (double)(step + 1) / (double)c->warmup_steps;
    return lr * lr_schedule_factor(c->schedule, step, c->warmup_steps, c->total_steps);
}

float *const *dense_optim_moments(const struct dense_optim *o, int k) { return k ? o->v : o->m; }
int64_t dense_optim_steps(const struct dense_optim *o) { return o->t; }
void dense_optim_set_steps(struct dense_optim *o, int64_t t) { o->t = t; }
