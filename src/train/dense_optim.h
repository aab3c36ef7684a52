/* dense_optim: AdamW of the dense (data-parallel) parameters, with global
 * gradient-norm clipping and a linear learning-rate warmup. Its moments
 * live where the model computes (backend memory); every rank holds the
 * same state. */
#ifndef FS_DENSE_OPTIM_H
#define FS_DENSE_OPTIM_H

#include <stdint.h>

#include "model/model.h"
#include "train/lr_schedule.h"

struct bias_rows;

struct dense_optim_conf {
    double lr;              /* train.lr */
    int64_t warmup_steps;   /* linear warmup over the first steps (0: none) */
    enum lr_schedule schedule; /* the decay after the warmup (train.lr_schedule) */
    int64_t total_steps;    /* the run's steps (the schedule's end; set by train.c) */
    float weight_decay;     /* decoupled, on tensors marked decay */
    double clip_norm;       /* clip the global gradient norm (0: off) */
    float beta1, beta2, eps;
};

struct dense_optim {
    struct dense_optim_conf conf;
    const struct backend_ops *be;
    int n;                  /* tensors */
    float *m[MODEL_MAX_PARAMS], *v[MODEL_MAX_PARAMS]; /* first and second moments */
    int64_t t;              /* steps taken */
    struct bias_rows *bias; /* model.bias's rows (train/bias_rows.h): in the clip's norm
                             * and stepped with the tensors; NULL: none */
};

/* Zero moments for every tensor of m. */
void dense_optim_init(struct dense_optim *o, const struct dense_optim_conf *conf,
                      const struct model *m);
void dense_optim_free(struct dense_optim *o);
/* Clip m's summed gradients, then one AdamW step at learning rate
 * dense_optim_lr(o, step) (step: the global step, 0-based). Synchronises
 * the backend. With o->bias, its rows' gradients count in the clip's norm
 * (a sum over the ranks: collective) and its rows take the step too. */
void dense_optim_step(struct dense_optim *o, struct model *m, int64_t step);
/* lr * min(1, (step + 1) / warmup_steps) * the schedule's factor. */
double dense_optim_lr(const struct dense_optim *o, int64_t step);
/* The moments for checkpoints: k = 0 first, 1 second; [n] tensors. */
float *const *dense_optim_moments(const struct dense_optim *o, int k);
/* Steps taken (Adam's bias correction), and its restore from a checkpoint. */
int64_t dense_optim_steps(const struct dense_optim *o);
void dense_optim_set_steps(struct dense_optim *o, int64_t t);

#endif
