/* train_step: one training step on every rank (see train.c for the loop):
 * read this rank's sequences, draw the negatives of every position (keyed
 * by the token), look up the unique ids of inputs, targets and negatives in
 * one exchange, run the model and the loss, send the embedding gradients to
 * their owners (sparse update), all-reduce the dense gradients (already
 * normalised by the global number of supervised positions) and take the
 * AdamW step. Every phase is timed (steptime.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "cli.h"
#include "loss.h"
#include "train.h"

/* debug.slow_rank: this rank does its work `slow` times slower. */
static void slow_down(const struct trainer *tr, double worked)
{
    if (tr->slow <= 1.0 || worked <= 0)
        return;
    double extra = (tr->slow - 1.0) * worked;
    struct timespec ts = {.tv_sec = (time_t)extra,
                          .tv_nsec = (long)((extra - (double)(time_t)extra) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* All-reduce the dense gradients over dp, clip, and take an AdamW step. */
static void dense_update(struct trainer *tr)
{
    struct steptime *st = &tr->st;
    const struct backend_ops *be = tr->be;
    int64_t off = 0;
    for (int i = 0; i < tr->m.nparams; i++) {
        be->to_host(tr->gradbuf + off, tr->m.params[i].g, (size_t)tr->m.params[i].n * 4);
        off += tr->m.params[i].n;
    }
    comm_allreduce_sum_f32(tr->c, COMM_DP, tr->gradbuf, tr->ngrad, COMM_PH_DENSE);
    steptime_phase(st, PH_ALLREDUCE);
    double clip = params_f64(tr->p, P_train_clip_norm), scale = 1.0;
    if (clip > 0) {
        double norm = sqrt(be->sum_squares(tr->ngrad, tr->gradbuf));
        if (norm > clip)
            scale = clip / norm;
    }
    double lr = params_f64(tr->p, P_train_lr);
    int64_t warm = params_i64(tr->p, P_train_warmup_steps);
    if (warm > 0 && tr->step < warm)
        lr *= (double)(tr->step + 1) / (double)warm;
    float wd = (float)params_f64(tr->p, P_train_weight_decay);
    tr->adam_t++;
    off = 0;
    for (int i = 0; i < tr->m.nparams; i++) {
        struct dense_tensor *t = &tr->m.params[i];
        if (scale != 1.0)
            be->scale(t->n, (float)scale, tr->gradbuf + off);
        be->to_device(t->g, tr->gradbuf + off, (size_t)t->n * 4);
        be->adamw_step(t->n, t->w, tr->adam_m[i], tr->adam_v[i], t->g, (float)lr, 0.9f, 0.98f,
                       1e-8f, t->decay ? wd : 0.0f, tr->adam_t);
        off += t->n;
    }
    steptime_phase(st, PH_OPTIMIZER);
}

/* One training step over this rank's users; returns the global mean loss
 * and the global token count. */
double train_step(struct trainer *tr, const int64_t *users, int64_t B, int64_t *tokens)
{
    struct comm *c = tr->c;
    struct steptime *st = &tr->st;
    const int d = tr->d, R = tr->R;
    struct seq_batch sb;
    batch_train(&tr->ds, tr->split, tr->N, tr->with_ts, tr->seed, (uint64_t)tr->epoch, users, B,
                &sb);
    steptime_phase(st, PH_READ);
    const int64_t T = sb.T;
    int64_t n_global = comm_allreduce_sum_i64(c, T);
    *tokens = n_global;
    float scale = n_global > 0 ? 1.0f / (float)n_global : 0.0f;
    /* one lookup for inputs, targets and negatives */
    int64_t n_ids = T * (2 + R);
    int64_t *ids = xmalloc((size_t)(n_ids ? n_ids : 1) * sizeof *ids);
    memcpy(ids, sb.items, (size_t)T * sizeof *ids);
    memcpy(ids + T, sb.targets, (size_t)T * sizeof *ids);
    loss_sample_negatives(tr->seed, (uint64_t)tr->epoch, sb.keys, T, R, tr->ds.num_items,
                          ids + 2 * T);
    struct emb_exchange x;
    emb_input_dist(tr->items, c, ids, n_ids, &x, NULL);
    free(ids);
    steptime_phase(st, PH_INPUT_DIST);
    emb_output_dist(tr->items, c, &x, NULL, NULL);
    float *emb = xmalloc((size_t)(T ? T : 1) * (size_t)d * sizeof *emb);
    tr->be->gather_rows(T, d, x.rows, x.inverse, emb);
    steptime_phase(st, PH_LOOKUP);
    double t_work = cli_seconds();
    float *out = xmalloc((size_t)(T ? T : 1) * (size_t)d * sizeof *out);
    struct batch b = {.B = sb.B, .T = T, .offsets = sb.offsets, .ts = sb.ts,
                      .row_keys = sb.keys, .train = 1};
    tr->m.vt->forward(&tr->m, &b, emb, out);
    float *du = xcalloc((size_t)(T ? T : 1) * (size_t)d, sizeof *du);
    float *drows = xcalloc((size_t)(x.nuniq ? x.nuniq : 1) * (size_t)d, sizeof *drows);
    int64_t counted = 0;
    double loss_sum =
        tr->bce ? loss_bce(tr->be, T, d, out, x.nuniq, x.rows, x.inverse + T, x.inverse + 2 * T,
                           scale, du, drows, &counted)
                : loss_sampled_softmax(tr->be, T, d, R, (float)params_f64(tr->p, P_train_temperature),
                                       tr->normalize_items, out, x.nuniq, x.rows, x.inverse + T,
                                       x.inverse + 2 * T, scale, du, drows, &counted);
    slow_down(tr, cli_seconds() - t_work);
    steptime_phase(st, PH_FORWARD);
    t_work = cli_seconds();
    model_zero_grads(&tr->m);
    float *demb = xmalloc((size_t)(T ? T : 1) * (size_t)d * sizeof *demb);
    tr->m.vt->backward(&tr->m, &b, du, demb);
    tr->be->scatter_add_rows(T, d, demb, x.inverse, drows);
    free(demb);
    slow_down(tr, cli_seconds() - t_work);
    steptime_phase(st, PH_BACKWARD);
    emb_backward_unique(tr->items, c, &x, drows, NULL);
    steptime_phase(st, PH_GRAD_EXCHANGE);
    dense_update(tr);
    emb_exchange_free(&x);
    free(emb);
    free(out);
    free(du);
    free(drows);
    batch_free(&sb);
    double loss = comm_allreduce_sum_f64(c, COMM_DP, loss_sum);
    steptime_phase(st, PH_ALLREDUCE);
    return n_global > 0 ? loss / (double)n_global : 0.0;
}

