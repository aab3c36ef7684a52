/* train_step: one training step on every rank, in named phases (see
 * train_step() at the end; train.c runs the loop):
 *
 *   read            this rank's sequences, the negatives of every position
 *                   (keyed by the token), the lookup of inputs (chunk 0),
 *                   targets and negatives (chunk 1) posted (step_input.c,
 *                   which holds this step's input and the next step's)
 *   lookup          owners serve the rows; chunk 0's rows reach the backend
 *                   and are gathered in token order
 *   forward + loss  the model, then the loss against the rows of chunk 1
 *   backward        the model's backward; the input rows' gradients are
 *                   summed per unique row
 *   grad exchange   the sparse gradients to their owners, sparse update
 *   dense all-reduce  the dense gradients (already normalised by the
 *                   global number of supervised positions) summed over dp
 *   optimizer       AdamW of the dense parameters (dense_optim.c)
 *
 * With parallel.split_long a sequence may be cut into chunks on several
 * ranks: the batch's entries are then pieces, and the model exchanges the
 * chunks' keys and values at every layer through the step's ctx_split
 * (ctx_split.h), collectively with the ranks holding the other chunks.
 *
 * Every phase is timed (steptime.h). parallel.overlap (doc/overlap.md)
 * changes when the exchanges are posted and waited for, never what they
 * compute:
 *   none         every exchange blocks where it is needed.
 *   pipeline     after this step's rows are posted, the NEXT step's batch is
 *                read, de-duplicated and its counts exchange posted; its ids
 *                exchange is posted after this step's forward; both progress
 *                in the model's between-layers hook while this step
 *                computes, and complete when the next step needs them.
 *   prioritized  pipeline, and: the rows of chunk 0 are waited for before
 *                the forward, those of chunk 1 only before the loss, and
 *                leave only once chunk 0's are done (emb_output_hold); the
 *                gradients of the loss-only rows (chunk 1) leave right after
 *                the loss and travel during the backward; the dense
 *                all-reduce is bucketed per layer and each bucket is posted
 *                as soon as the backward has finished its gradients; the
 *                input rows' gradients are posted before the last bucket and
 *                the sparse update is completed before the dense buckets are
 *                waited for.
 *   prefetch     prioritized, and: the next step's ids are posted before
 *                this step's forward; after the forward the owners find
 *                which of its rows this step's update touches (collisions,
 *                emb_prefetch_plan), after the loss they gather the others;
 *                right after this step's sparse update (its gradients
 *                ahead of them on the link) they post those and the
 *                colliding rows, read now (emb_exchange.h). The next
 *                step's lookup only waits.
 * Rows are always read by their owners after the last sparse update that
 * changes them, and every reduction keeps its order, so all four modes
 * give the same losses. Every rank posts its collectives in the same program order
 * on each communicator; the hook only tests them.
 *
 * Where things live: the exchange's rows, inverse index and gradients are
 * in the table's memory (embedding.placement: device memory for device
 * tables, where they stay); where the model computes on another memory
 * (host tables, a device computing) they are mirrored (backend/mirror.h):
 * the phases below are the same on every backend. The step's loss, count
 * and the guard's sums of squares stay in the model's memory until the
 * step's end reads them back at once (one host wait). On a device the next
 * step is read after this step's forward is enqueued (the device computes
 * while the host reads); on the host before (while the rows travel).
 *
 * Features (features.*; step_feat.h) are part of every phase: read plans
 * the tokens and posts the lookup of every feature table, lookup completes
 * it and makes the item representations (row + item features) that the
 * inputs and the loss use, the model runs on the assembled tokens (event
 * features, contextual tokens), and the grad exchange updates the feature
 * tables. Without features the plan is the identity layout (no tables,
 * representations = rows, tokens = events) and these parts do nothing.
 * The loss is the task's
 * (model/task.h): retrieval against the rows of the targets and negatives,
 * or ranking (train.task = ranking: the events' labels by the head; the
 * lookup holds the inputs alone). */
#include <stdlib.h>
#include <string.h>

#include "backend/mirror.h"
#include "backend/stage.h"
#include "base/check.h"
#include "base/exact.h"
#include "base/clock.h"
#include "embedding/emb_exact.h"
#include "model/loss.h"
#include "model/loss_full.h"
#include "train/ctx_split.h"
#include "train/dense_sync.h"
#include "train/guard.h"
#include "train/step_feat.h"
#include "train/step_input.h"
#include "train/step_neg.h"
#include "train/step_task.h"
#include "train/train.h"
#include "train/train_dyn.h"

/* The step's scalars (model backend's memory), read back at the step's end. */
enum { SC_LOSS, SC_COUNT, SC_SPARSE, SC_DENSE, SC_N };

struct step_state {
    struct trainer *tr;
    enum overlap_mode overlap; /* parallel.overlap: the schedule (reads_ahead ... prefetches) */
    int read_late;             /* the next step is read after this step's forward is
                                  enqueued (devices), else before it (the host) */
    int in_step;               /* inside train_step: the hook acts only then */
    struct step_ring ring;     /* this step's and the next step's input (step_input.h) */
    struct dense_sync *dense;
    double slow;               /* debug.slow_rank factor on this rank (1 = normal) */
    /* backend buffers, kept across steps */
    struct mirror rows;        /* the exchange's unique rows [nuniq, d] */
    struct mirror inv;         /* its inverse index [T (2 + R)] */
    struct mirror grads;       /* its gradients per unique row [nuniq, d] */
    struct mirror emb, out, du, demb; /* [T, d] scratch ([Tx, d]: out, demb) */
    struct mirror fx, fout, fdu, fdemb; /* features: [Tx, d] x, du; [T, d] out, demb */
    struct loss_ws lws;        /* the loss's normalisation buffers */
    double *sc;                /* [SC_N] model backend memory */
    double hsc[SC_N];          /* read back */
    double sparse_host;        /* SC_SPARSE when the table's memory is the host's, the model's not */
    double *hride;             /* [SC_N] pinned: the scalars carried by the dense copy down */
    int rode;                  /* this step's scalars came with it (read_scalars reads none) */
    struct mirror lq_tok;      /* in-batch negatives: the tokens' logQ [T (1 + R)] */
    struct mirror lq_row;      /* and the unique rows' [nuniq] (step_logq) */
    struct task_step view;     /* the loss's view of the step, for the task's backward */
    int nlr;                   /* tables whose embedding lr is scheduled (train.lr_schedule) */
    float base_lr[EMB_MAX_TABLES]; /* their optimizers' lr as configured */
    struct loss_full_shard shard; /* the view's, train.loss = full */
    int64_t xloss[EXACT_LIMBS + 1]; /* train.exact_sums: the loss's sum (base/exact.h) */
};

/* parallel.overlap's schedule (the top of this file): each mode does what
 * the one before it does, and more. */
static int reads_ahead(const struct step_state *s) { return s->overlap != OVERLAP_NONE; }
static int prioritized(const struct step_state *s)
{
    return s->overlap == OVERLAP_PRIORITIZED || s->overlap == OVERLAP_PREFETCH;
}
static int prefetches(const struct step_state *s) { return s->overlap == OVERLAP_PREFETCH; }

/* --- helpers ---------------------------------------------------------------- */

/* debug.slow_rank: this rank does its work `slow` times slower: it computes
 * (spins) for (slow - 1) x worked seconds more, as a slower processor
 * would; a sleep would be a rank descheduled, which balance_adapt does not
 * take for a slow rank (doc/balance.md). */
static void slow_down(const struct step_state *s, double worked)
{
    if (s->slow <= 1.0 || worked <= 0)
        return;
    const double until = clock_seconds() + (s->slow - 1.0) * worked;
    while (clock_seconds() < until)
        ;
}

/* Copy chunk k of the unique rows between host and backend (a mirror of
 * [nuniq, d] floats laid out as the exchange's rows). */
static void chunk_up(const struct mirror *mr, const struct emb_exchange *x, int d, int k)
{
    const struct emb_span *sp;
    const size_t row = (size_t)d * sizeof(float);
    for (int i = 0, n = emb_exchange_spans(x, k, &sp); i < n; i++)
        mirror_up(mr, (size_t)sp[i].first * row, (size_t)sp[i].n * row);
}

static void chunk_down(const struct mirror *mr, const struct emb_exchange *x, int d, int k)
{
    const struct emb_span *sp;
    const size_t row = (size_t)d * sizeof(float);
    for (int i = 0, n = emb_exchange_spans(x, k, &sp); i < n; i++)
        mirror_down(mr, (size_t)sp[i].first * row, (size_t)sp[i].n * row);
}

/* Bytes of [n, d] floats (at least one row: backends allocate > 0). */
static size_t rows_bytes(int64_t n, int d) { return (size_t)(n ? n : 1) * (size_t)d * sizeof(float); }

/* The model's between-layers hook (model.h): move what is in flight: the
 * next step's ids, this step's rows and gradients, the dense buckets; in
 * the backward, post the bucket of the tensors just finished. */
static void between_layers(void *ctx, int first_final)
{
    struct step_state *s = ctx;
    if (!s->in_step) /* the model runs outside a step (evaluation): nothing in flight */
        return;
    comm_compute_end();
    step_ring_progress(&s->ring);
    dense_sync_post_final(s->dense, first_final);
    dense_sync_progress(s->dense);
    comm_compute_begin();
}

/* The step's scalars, read back (a host wait on a device), or taken from
 * the dense gradients' copy down that carried them (readback_start). */
static void read_scalars(struct step_state *s)
{
    if (s->rode) {
        memcpy(s->hsc, s->hride, SC_DENSE * sizeof *s->hsc);
        s->hsc[SC_DENSE] = dense_sync_sumsq(s->dense);
        return;
    }
    s->tr->be->to_host(s->hsc, s->sc, sizeof s->hsc);
}

/* issue 51 G: with the staged dense all-reduce (a device, dp > 1) the
 * dense gradients' copy down starts after the backward and carries the
 * scalars final by then (the loss, the count, the sparse sum of squares);
 * the dense sum of squares is made on the host from the summed arena, so
 * the step's end waits for nothing (the guard's skip mode reads them
 * before the updates, as before). */
static void readback_start(struct step_state *s)
{
    const struct backend_ops *be = s->tr->be;
    s->rode = 0;
    if (s->tr->conf.nonfinite_skip || backend_is_host(be))
        return;
    if (!s->hride)
        s->hride = be->host_alloc(sizeof s->hsc);
    s->rode = dense_sync_start(s->dense, s->sc, s->hride, SC_DENSE * sizeof *s->hsc);
}

/* --- the phases --------------------------------------------------------------- */

/* lookup: owners serve this step's rows (read after the previous step's
 * sparse update); on the host the next step is read meanwhile; chunk 0's
 * rows (all of them unless prioritized) reach the model's memory, and the
 * inputs' rows are gathered in token order into emb [T, d]. With features:
 * the feature rows too, the item rows become representations (row + item
 * features), and emb the model's tokens [Tx, d]. Returns emb. */
static float *phase_lookup(struct step_state *s, struct step_input *in,
                           const struct step_plan *next)
{
    struct trainer *tr = s->tr;
    const struct backend_ops *be = tr->be, *tb = tr->items->be;
    struct emb_exchange *x = in->x;
    const int d = tr->conf.d;
    const int64_t T = in->sb.T, n_ids = step_input_ids(&s->ring, T);
    gputime_begin(&tr->gt, GPU_EXCHANGE);
    if (!in->prefetched) { /* else posted during the previous step */
        if (prioritized(s)) /* chunk 1 leaves once chunk 0 is done */
            emb_output_hold(x);
        emb_output_post(tr->items, tr->c, x, NULL);
    }
    steptime_phase(&tr->st, PH_LOOKUP);
    if (reads_ahead(s) && next && !s->read_late) {
        struct step_input *nx = step_ring_next(&s->ring);
        step_input_read(&s->ring, nx, next);
        if (prefetches(s)) /* its ids reach the owners during the forward */
            emb_input_post_ids(tr->c, nx->x);
    }
    step_feat_lookup(in->feat); /* representations: the table's memory (features: host) */
    const float *rows = mirror_bind(&s->rows, be, tb, step_feat_rep(in->feat),
                                    rows_bytes(emb_exchange_nuniq(x), d));
    for (int k = 0; k < (prioritized(s) ? 1 : 2); k++) {
        emb_output_wait(x, k, NULL);
        step_feat_items(in->feat, x, k);
        chunk_up(&s->rows, x, d, k);
    }
    const size_t ib = (size_t)(n_ids ? n_ids : 1) * sizeof(int64_t);
    const int64_t *inv = mirror_bind(&s->inv, be, tb, emb_exchange_inverse(x), ib);
    mirror_up(&s->inv, 0, ib);
    float *emb = mirror_bind(&s->emb, be, be, NULL, rows_bytes(T, d));
    be->gather_rows(T, d, rows, inv, emb); /* inputs: chunk 0 */
    gputime_end(&tr->gt, GPU_EXCHANGE);
    const int64_t Tx = step_feat_Tx(in->feat, T); /* event features, contextual tokens */
    float *xt = Tx != T ? mirror_bind(&s->fx, be, be, NULL, rows_bytes(Tx, d)) : emb;
    step_feat_assemble(in->feat, emb, xt);
    emb = xt;
    steptime_phase(&tr->st, PH_LOOKUP);
    return emb;
}

/* The logQ correction per unique row [nuniq] (the computing backend's
 * memory) from the tokens' (in->logq [T (1 + R)], host memory): one
 * upload, then row inv[T + k] = token k's (index_rows; tokens of one row
 * carry the same value), kept in s's buffers across steps. */
static const float *step_logq(struct step_state *s, const struct step_input *in,
                              const int64_t *inv)
{
    const struct backend_ops *be = s->tr->be;
    const int64_t n = in->sb.T * (1 + s->tr->conf.R), nu = emb_exchange_nuniq(in->x);
    const size_t bytes = (size_t)(n ? n : 1) * sizeof(float);
    const float *tok = mirror_bind(&s->lq_tok, be, &backend_cpu, in->logq, bytes);
    mirror_up(&s->lq_tok, 0, bytes);
    float *row = mirror_bind(&s->lq_row, be, be, NULL, (size_t)(nu ? nu : 1) * sizeof(float));
    be->index_rows(n, 1, tok, NULL, row, inv + in->sb.T, 0);
    return row;
}

/* The loss of the step's positions (outputs out [T, d]) by the task
 * (model/task.h): retrieval against the unique rows (du [T, d] written,
 * drows [nuniq, d] accumulated; loss.h, loss_full.h), ranking by the head
 * and the labels (du written by its backward); the loss sum and count
 * added to the step's scalars. */
static void step_loss(struct step_state *s, struct step_input *in, const float *out,
                      const float *rows, const int64_t *inv, float scale, float *du,
                      float *drows)
{
    struct trainer *tr = s->tr;
    const struct train_conf *cf = &tr->conf;
    const int64_t T = in->sb.T;
    const float *logq = in->logq ? step_logq(s, in, inv) : NULL; /* uniform negatives: none */
    int64_t *xbad = NULL, *xrows = emb_exchange_exact(in->x, &xbad); /* exact sums, or NULL */
    s->shard = (struct loss_full_shard){.G = tr->items->G, .shard = tr->items->shard,
                                        .num_items = tr->ds.num_items, .m = s->ring.n_shard,
                                        .idx = s->ring.targets ? inv + T * (2 + cf->R) : NULL,
                                        .direct = tr->dev.direct, .logits = cf->full_logits};
    s->view = (struct task_step){.be = tr->be, .c = tr->c, .T = T, .d = cf->d, .out = out,
                                 .du = du, .acc = s->sc + SC_LOSS, .scale = scale,
                                 .ws = &s->lws, .nuniq = emb_exchange_nuniq(in->x), .rows = rows,
                                 .inv = inv, .drows = drows, .logq = logq,
                                 .shard = &s->shard,
                                 .targets = in->target_nums ? in->target_nums : in->sb.targets,
                                 .no_target = in->sb.no_target,
                                 .labels = in->sb.target_labels ? in->sb.target_labels
                                                                : in->sb.labels,
                                 .all_labels = in->sb.labels,
                                 .items = in->item_nums ? in->item_nums : in->sb.items,
                                 .B = in->sb.B, .users = in->sb.users,
                                 .offsets = in->sb.offsets, .rterms = in->rterms,
                                 .xrows = xrows, .xbad = xbad,
                                 .xloss = xrows ? s->xloss : NULL};
    tr->task.ops->loss(&tr->task, &s->view);
}

/* forward + loss: the model over the batch (emb -> out; mb: the model's
 * batch, b with contextual tokens); on a device the next step is read now,
 * the forward enqueued; the next step's ids posted; then the loss against
 * the rows of targets and negatives: du [T, d] and the per-row gradients
 * (zeroed, then accumulated by the loss). Prioritized: the loss-only rows'
 * gradients (chunk 1: the backward's scatter touches chunk-0 rows alone)
 * are final and leave now. */
static void phase_forward_loss(struct step_state *s, struct step_input *in,
                               const struct batch *b, const struct batch *mb, const float *emb,
                               float scale, const struct step_plan *next)
{
    struct trainer *tr = s->tr;
    const struct backend_ops *be = tr->be, *tb = tr->items->be;
    struct emb_exchange *x = in->x;
    const int d = tr->conf.d;
    const int64_t T = b->T, nuniq = emb_exchange_nuniq(x);
    double t_work = clock_seconds();
    float *out = mirror_bind(&s->out, be, be, NULL, rows_bytes(mb->T, d));
    gputime_begin(&tr->gt, GPU_FORWARD);
    comm_compute_begin();
    tr->m.vt->forward(&tr->m, mb, emb, out);
    comm_compute_end();
    gputime_end(&tr->gt, GPU_FORWARD);
    if (mb->T != T) { /* the event tokens' outputs: the loss's */
        float *ev = mirror_bind(&s->fout, be, be, NULL, rows_bytes(T, d));
        step_feat_outputs(in->feat, out, ev);
        out = ev;
    }
    struct step_input *nx = step_ring_next(&s->ring);
    if (reads_ahead(s) && next && s->read_late) {
        double t_read = clock_seconds();
        steptime_phase(&tr->st, PH_FORWARD);
        step_input_read(&s->ring, nx, next);
        t_work += clock_seconds() - t_read; /* not this step's work */
    }
    if (nx->ready)
        emb_input_post_ids(tr->c, nx->x);
    if (prefetches(s) && nx->ready) { /* which of its rows this step's update touches */
        steptime_phase(&tr->st, PH_FORWARD);
        emb_prefetch_plan(tr->items, tr->c, nx->x, x);
        steptime_phase(&tr->st, PH_PREFETCH);
    }
    if (prioritized(s)) { /* targets and negatives: chunk 1 */
        gputime_begin(&tr->gt, GPU_EXCHANGE);
        emb_output_wait(x, 1, NULL);
        step_feat_items(in->feat, x, 1);
        chunk_up(&s->rows, x, d, 1);
        gputime_end(&tr->gt, GPU_EXCHANGE);
    }
    const float *rows = mirror_at(&s->rows);
    const int64_t *inv = mirror_at(&s->inv);
    const size_t ud = rows_bytes(nuniq, d);
    float *du = mirror_bind(&s->du, be, be, NULL, rows_bytes(T, d));
    float *drows = mirror_bind(&s->grads, be, tb, emb_exchange_grads(x), ud);
    gputime_begin(&tr->gt, GPU_FORWARD);
    be->zero(drows, ud);
    step_loss(s, in, out, rows, inv, scale, du, drows);
    gputime_end(&tr->gt, GPU_FORWARD);
    if (prioritized(s)) {
        chunk_down(&s->grads, x, d, 1);
        emb_grad_post_chunk(tr->items, tr->c, x, 1, NULL);
    }
    slow_down(s, clock_seconds() - t_work);
    steptime_phase(&tr->st, PH_FORWARD);
    if (prefetches(s) && nx->ready) { /* its other rows gathered; they leave behind the
                                         gradients (emb_prefetch_post's hold) */
        emb_prefetch_post(tr->items, tr->c, nx->x, 1);
        steptime_phase(&tr->st, PH_PREFETCH);
    }
}

/* backward: the task's (ranking: the head's, and du), the model's backward
 * from du, the input rows' gradients scattered onto the per-row gradients,
 * which reach the table's memory; the guard's sum of squares of them. */
static void phase_backward(struct step_state *s, struct step_input *in, const struct batch *b,
                           const struct batch *mb)
{
    struct trainer *tr = s->tr;
    const struct backend_ops *be = tr->be, *tb = tr->items->be;
    const int d = tr->conf.d;
    double t_work = clock_seconds();
    model_zero_grads(&tr->m);
    dense_sync_begin(s->dense);
    if (tr->task.ops->backward) /* the head's gradients, and du (ranking) */
        tr->task.ops->backward(&tr->task, &s->view);
    const float *du = mirror_at(&s->du);
    if (mb->T != b->T) { /* no gradient at the contextual tokens */
        float *dux = mirror_bind(&s->fdu, be, be, NULL, rows_bytes(mb->T, d));
        step_feat_dout(in->feat, du, dux);
        du = dux;
    }
    float *demb = mirror_bind(&s->demb, be, be, NULL, rows_bytes(mb->T, d));
    gputime_begin(&tr->gt, GPU_BACKWARD);
    comm_compute_begin();
    tr->m.vt->backward(&tr->m, mb, du, demb);
    comm_compute_end();
    /* the event and user features' part; demb: the event tokens' */
    float *dev = mb->T != b->T ? mirror_bind(&s->fdemb, be, be, NULL, rows_bytes(b->T, d)) : demb;
    step_feat_backward_inputs(in->feat, demb, dev);
    demb = dev;
    int64_t *xbad, *xrows = emb_exchange_exact(in->x, &xbad);
    if (xrows) { /* exact sums: each token's row, then the local sums for the guard */
        emb_exact_add_rows(xrows, d, b->T, demb, mirror_at(&s->inv), xbad);
        emb_exact_local(in->x);
    } else
        be->scatter_add_rows(b->T, d, demb, mirror_at(&s->inv), mirror_at(&s->grads));
    gputime_end(&tr->gt, GPU_BACKWARD);
    chunk_down(&s->grads, in->x, d, 0);
    if (!prioritized(s)) /* chunk 1 still here too */
        chunk_down(&s->grads, in->x, d, 1);
    const int64_t n = emb_exchange_nuniq(in->x) * d;
    float *gu = emb_exchange_grads(in->x);
    guard_inject_sparse(tr, tb, gu, n);
    tb->sumsq_acc(n, gu, backend_same_memory(tb, be) ? s->sc + SC_SPARSE : &s->sparse_host);
    slow_down(s, clock_seconds() - t_work);
    steptime_phase(&tr->st, PH_BACKWARD);
}

/* grad exchange: the gradients not yet sent go to their owners (sparse
 * first: the next step's lookup waits for the update); with buckets, the
 * first tensors' bucket follows them; owners apply the sparse update; with
 * features the feature tables' update follows. */
static void phase_grad_exchange(struct step_state *s, struct step_input *in, int apply)
{
    struct trainer *tr = s->tr;
    gputime_begin(&tr->gt, GPU_EXCHANGE);
    if (apply) /* else dropped (guard.h): step_input_release drains chunk 1's */
        emb_grad_post(tr->items, tr->c, in->x, NULL);
    dense_sync_post_last(s->dense);
    if (apply)
        emb_grad_finish(tr->items, tr->c, in->x, NULL);
    gputime_end(&tr->gt, GPU_EXCHANGE);
    if (apply) /* d rep = the item rows' gradients: the feature tables' update */
        step_feat_update(in->feat, emb_exchange_grads(in->x));
    steptime_phase(&tr->st, PH_GRAD_EXCHANGE);
    struct step_input *nx = step_ring_next(&s->ring);
    if (prefetches(s) && nx->ready) { /* the next step's rows this update touched, read now */
        emb_prefetch_late(tr->items, tr->c, nx->x);
        nx->prefetched = 1;
        steptime_phase(&tr->st, PH_LATE);
    }
}

/* dense all-reduce: the arena holds the sum over dp; its sum of squares
 * (the guard's) is enqueued. */
static void phase_dense_allreduce(struct step_state *s)
{
    struct trainer *tr = s->tr;
    dense_sync_finish(s->dense);
    if (!s->rode) /* else made on the host (dense_sync_sumsq) */
        tr->be->sumsq_acc(tr->m.ngrad, tr->m.grad, s->sc + SC_DENSE);
    steptime_phase(&tr->st, PH_ALLREDUCE);
}

/* train.lr_schedule: every table's sparse learning rate at this step, its
 * configured one times the schedule's factor (lr_schedule.h; the warmup
 * stays the dense parameters'). */
static void sparse_lr(struct step_state *s)
{
    struct trainer *tr = s->tr;
    const struct dense_optim_conf *c = &tr->optim.conf;
    if (c->schedule == LR_CONSTANT)
        return;
    for (; s->nlr < tr->reg.n; s->nlr++)
        s->base_lr[s->nlr] = tr->reg.tables[s->nlr].conf.optim.lr;
    const double f = lr_schedule_factor(c->schedule, tr->step, c->warmup_steps, c->total_steps);
    for (int k = 0; k < tr->reg.n; k++)
        tr->reg.tables[k].conf.optim.lr = (float)(s->base_lr[k] * f);
}

double train_step(struct trainer *tr, const struct step_plan *now, const struct step_plan *next,
                  int64_t *tokens)
{
    struct step_state *s = tr->state;
    struct step_input *in = step_ring_now(&s->ring);
    const int skip_mode = tr->conf.nonfinite_skip;
    const double t_start = clock_seconds();
    s->in_step = 1;
    sparse_lr(s);
    tr->be->zero(s->sc, sizeof s->hsc);
    memset(s->xloss, 0, sizeof s->xloss);
    s->sparse_host = 0;
    if (!in->ready) /* else read during the previous step */
        step_input_read(&s->ring, in, now);
    const int64_t n_global = /* the supervised positions (the stream's history: none) */
        comm_allreduce_sum_i64(tr->c, in->sb.no_target ? in->sb.n_target : in->sb.T);
    const float scale = n_global > 0 ? 1.0f / (float)n_global : 0.0f;
    const struct batch b = {.B = in->sb.B, .T = in->sb.T, .offsets = in->sb.offsets,
                            .ts = in->sb.ts, .row_keys = in->sb.keys, .train = 1,
                            .split = in->split ? ctx_split_model(in->split) : NULL};
    struct batch mb; /* the model's: with contextual tokens, more */
    step_feat_model_batch(in->feat, &b, &mb);
    ctx_split_rows(in->split, mb.offsets); /* the pieces' rows: the model's tokens */

    const float *emb = phase_lookup(s, in, next);
    phase_forward_loss(s, in, &b, &mb, emb, scale, next);
    phase_backward(s, in, &b, &mb);
    readback_start(s);
    if (skip_mode) /* the guard decides before the updates: the sums now */
        read_scalars(s);
    const int same = backend_same_memory(tr->items->be, tr->be);
    phase_grad_exchange(s, in, guard_before_update(tr, s->hsc[SC_LOSS],
                                                   same ? s->hsc[SC_SPARSE] : s->sparse_host));
    phase_dense_allreduce(s);
    if (skip_mode)
        read_scalars(s);
    gputime_begin(&tr->gt, GPU_OPTIMIZER);
    const int dense_ok = guard_dense_ok(tr, s->hsc[SC_DENSE]);
    if (guard_bias_ok(tr) && dense_ok)
        dense_optim_step(&tr->optim, &tr->m, tr->step);
    gputime_end(&tr->gt, GPU_OPTIMIZER);
    steptime_phase(&tr->st, PH_OPTIMIZER);

    step_input_release(in);
    step_ring_advance(&s->ring); /* the next step's input, if read ahead, is now this one */
    read_scalars(s); /* the step's one host wait for its results */
    gputime_step(&tr->gt, clock_seconds() - t_start);
    tr->sparse_sq = same ? s->hsc[SC_SPARSE] : s->sparse_host;
    tr->dense_sq = s->hsc[SC_DENSE];
    double loss;
    if (tr->conf.exact_sums) { /* integer sums: the same bits on any number of ranks */
        comm_allreduce_sum_i64v(tr->c, COMM_DP, s->xloss, EXACT_LIMBS + 1);
        loss = exact_to_double(s->xloss, s->xloss[EXACT_LIMBS]);
    } else
        loss = comm_allreduce_sum_f64(tr->c, COMM_DP, s->hsc[SC_LOSS]);
    steptime_phase(&tr->st, PH_ALLREDUCE);
    *tokens = n_global;
    s->in_step = 0;
    if (tr->task.ops->normalised) /* per task already (ranking) */
        return loss;
    return n_global > 0 ? loss / (double)n_global : 0.0;
}

/* --- set-up ---------------------------------------------------------------------- */

void train_step_init(struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    struct step_state *s = xcalloc(1, sizeof *s);
    s->tr = tr;
    s->ring.tr = tr;
    s->ring.targets = tr->task.ops->target_rows;
    s->overlap = cf->overlap;
    s->read_late = !backend_is_host(tr->be);
    gputime_init(&tr->gt, tr->be);
    emb_set_wait_hook(gputime_wait_hook, &tr->gt); /* the exchanges' waits: not device time */
    s->ring.kv_stage = ctx_stage_new(tr->be, cf->model.layers); /* NULL on the host */
    s->sc = tr->be->alloc(sizeof s->hsc);
    s->slow = cf->slow_rank == tr->c->rank ? cf->slow_factor : 1.0;
    /* prefetch keeps the dense all-reduce in one piece, as none does: MPI's
     * non-blocking all-reduces of buckets may sum in another order at P >= 3 */
    s->dense = dense_sync_init(tr->c, &tr->dev, &tr->m, cf->transport,
                               cf->overlap == OVERLAP_PRIORITIZED);
    if (cf->loss == LOSS_FULL && s->ring.targets) {
        struct step_ring *r = &s->ring;
        r->n_shard = loss_full_shard_ids(tr->items->G, tr->items->shard, tr->ds.num_items, NULL);
        r->shard_ids = xmalloc((size_t)(r->n_shard ? r->n_shard : 1) * sizeof(int64_t));
        loss_full_shard_ids(tr->items->G, tr->items->shard, tr->ds.num_items, r->shard_ids);
        train_dyn_full_ids(tr, r->shard_ids, r->n_shard); /* a raw dataset: the items' ids */
    }
    if (reads_ahead(s))
        model_set_hook(&tr->m, (struct model_hook){.between_layers = between_layers, .ctx = s});
    char err[256];
    if (cf->progress_thread && comm_progress_start(tr->c, err, sizeof err))
        fatal("parallel.progress = thread: %s", err);
    tr->state = s;
}

void train_step_drain(struct trainer *tr)
{
    struct step_state *s = tr->state;
    step_ring_drain(&s->ring);
}

void train_step_free(struct trainer *tr)
{
    struct step_state *s = tr->state;
    if (!s)
        return;
    train_step_drain(tr);
    dense_sync_free(s->dense);
    struct mirror *m[] = {&s->rows, &s->inv, &s->grads, &s->emb, &s->out, &s->du, &s->demb,
                          &s->fx, &s->fout, &s->fdu, &s->fdemb, &s->lq_tok, &s->lq_row};
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        mirror_free(m[i]);
    loss_ws_free(&s->lws);
    tr->be->free(s->sc);
    if (s->hride)
        tr->be->host_free(s->hride);
    emb_set_wait_hook(NULL, NULL);
    gputime_free(&tr->gt);
    ctx_stage_free(s->ring.kv_stage);
    free(s->ring.shard_ids);
    free(s);
    tr->state = NULL;
}
