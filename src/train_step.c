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

/* Sum the dense gradient arena over dp: in place on a host backend or with
 * CUDA-aware MPI, else through the pinned host buffer tr->stage. */
static void dense_allreduce(struct trainer *tr)
{
    const struct backend_ops *be = tr->be;
    float *g = tr->m.grad;
    const int64_t n = tr->m.ngrad;
    if (backend_is_host(be) || tr->dev.direct) {
        be->synchronize();
        comm_allreduce_sum_f32(tr->c, COMM_DP, g, n, COMM_PH_DENSE);
        return;
    }
    be->to_host_async(tr->stage, g, (size_t)n * sizeof(float));
    be->comm_sync();
    comm_allreduce_sum_f32(tr->c, COMM_DP, tr->stage, n, COMM_PH_DENSE);
    be->to_device_async(g, tr->stage, (size_t)n * sizeof(float));
    be->comm_sync();
}

/* All-reduce the dense gradients over dp, clip, and take an AdamW step. */
static void dense_update(struct trainer *tr)
{
    struct steptime *st = &tr->st;
    const struct backend_ops *be = tr->be;
    dense_allreduce(tr);
    steptime_phase(st, PH_ALLREDUCE);
    double clip = params_f64(tr->p, P_train_clip_norm);
    if (clip > 0) {
        double norm = sqrt(be->sum_squares(tr->m.ngrad, tr->m.grad));
        if (norm > clip)
            be->scale(tr->m.ngrad, (float)(clip / norm), tr->m.grad);
    }
    double lr = params_f64(tr->p, P_train_lr);
    int64_t warm = params_i64(tr->p, P_train_warmup_steps);
    if (warm > 0 && tr->step < warm)
        lr *= (double)(tr->step + 1) / (double)warm;
    float wd = (float)params_f64(tr->p, P_train_weight_decay);
    tr->adam_t++;
    for (int i = 0; i < tr->m.nparams; i++) {
        struct dense_tensor *t = &tr->m.params[i];
        be->adamw_step(t->n, t->w, tr->adam_m[i], tr->adam_v[i], t->g, (float)lr, 0.9f, 0.98f,
                       1e-8f, t->decay ? wd : 0.0f, tr->adam_t);
    }
    be->synchronize();
    steptime_phase(st, PH_OPTIMIZER);
}

/* One training step over this rank's users; returns the global mean loss
 * and the global token count. Tensors of the model and the loss are in the
 * backend's memory; the unique rows come up from the host exchange and
 * their gradients go back down to it. */
double train_step(struct trainer *tr, const int64_t *users, int64_t B, int64_t *tokens)
{
    struct comm *c = tr->c;
    struct steptime *st = &tr->st;
    const struct backend_ops *be = tr->be;
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
    const size_t td = (size_t)(T ? T : 1) * (size_t)d * sizeof(float);
    const size_t ud = (size_t)(x.nuniq ? x.nuniq : 1) * (size_t)d * sizeof(float);
    void *own_rows, *own_inv, *own_gu;
    const float *rows = backend_upload(be, x.rows, ud, &own_rows);
    const int64_t *inv =
        backend_upload(be, x.inverse, (size_t)(n_ids ? n_ids : 1) * sizeof(int64_t), &own_inv);
    float *emb = be->alloc(td);
    be->gather_rows(T, d, rows, inv, emb);
    steptime_phase(st, PH_LOOKUP);
    double t_work = cli_seconds();
    float *out = be->alloc(td);
    struct batch b = {.B = sb.B, .T = T, .offsets = sb.offsets, .ts = sb.ts,
                      .row_keys = sb.keys, .train = 1};
    tr->m.vt->forward(&tr->m, &b, emb, out);
    float *du = be->alloc(td);
    float *drows = be->alloc(ud);
    int64_t counted = 0;
    double loss_sum =
        tr->bce ? loss_bce(be, T, d, out, x.nuniq, rows, inv + T, inv + 2 * T, scale, du, drows,
                           &counted)
                : loss_sampled_softmax(be, T, d, R, (float)params_f64(tr->p, P_train_temperature),
                                       tr->normalize_items, out, x.nuniq, rows, inv + T,
                                       inv + 2 * T, scale, du, drows, &counted);
    slow_down(tr, cli_seconds() - t_work);
    steptime_phase(st, PH_FORWARD);
    t_work = cli_seconds();
    model_zero_grads(&tr->m);
    float *demb = be->alloc(td);
    tr->m.vt->backward(&tr->m, &b, du, demb);
    be->scatter_add_rows(T, d, demb, inv, drows);
    const float *gu = backend_download(be, drows, ud, &own_gu);
    slow_down(tr, cli_seconds() - t_work);
    steptime_phase(st, PH_BACKWARD);
    emb_backward_unique(tr->items, c, &x, gu, NULL);
    steptime_phase(st, PH_GRAD_EXCHANGE);
    dense_update(tr);
    emb_exchange_free(&x);
    free(own_gu);
    be->free(own_rows);
    be->free(own_inv);
    be->free(emb);
    be->free(demb);
    be->free(out);
    be->free(du);
    be->free(drows);
    batch_free(&sb);
    double loss = comm_allreduce_sum_f64(c, COMM_DP, loss_sum);
    steptime_phase(st, PH_ALLREDUCE);
    return n_global > 0 ? loss / (double)n_global : 0.0;
}
