/* train_step: one training step on every rank (see train.c for the loop):
 * read this rank's sequences, draw the negatives of every position (keyed
 * by the token), look up the unique ids of inputs, targets and negatives in
 * one exchange, run the model and the loss, send the embedding gradients to
 * their owners (sparse update), all-reduce the dense gradients (already
 * normalised by the global number of supervised positions) and take the
 * AdamW step. Every phase is timed (steptime.h).
 *
 * parallel.overlap (DESIGN.md §1, technique 2; README "Overlap"):
 *   none         every exchange blocks where it is needed.
 *   pipeline     after this step's rows are posted, the NEXT step's batch is
 *                read, de-duplicated and its counts exchange posted; its ids
 *                exchange is posted after this step's forward; both progress
 *                (MPI_Test in the model's between-layer hook) while this step
 *                computes, and complete when the next step needs them.
 *   prioritized  pipeline, and: the rows come back in two chunks, the rows of
 *                the model's inputs first, so the forward starts before the
 *                loss's rows (targets, negatives) have arrived; the
 *                gradients of the loss-only rows leave right after the loss
 *                and travel during the backward; the dense all-reduce is
 *                bucketed per layer and each bucket is posted as soon as the
 *                backward has finished its gradients; the input rows'
 *                gradients are posted before the last bucket and the sparse
 *                update is completed before the dense buckets are waited
 *                for.
 * Rows are always read by their owners after the previous step's sparse
 * update, and every reduction keeps its order, so all three modes give the
 * same losses. Every rank posts its collectives in the same program order
 * on each communicator; tests only progress them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/check.h"
#include "base/clock.h"
#include "model/loss.h"
#include "train/train.h"

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

/* Read this rank's sequences of `epoch`, draw the negatives and post the
 * lookup of inputs (chunk 0), targets and negatives (chunk 1). */
static void prepare(struct trainer *tr, struct step_input *in, const int64_t *users, int64_t B,
                    int64_t epoch)
{
    struct steptime *st = &tr->st;
    const int R = tr->R;
    batch_train(&tr->ds, tr->split, tr->N, tr->with_ts, tr->seed, (uint64_t)epoch, users, B,
                &in->sb);
    const int64_t T = in->sb.T, n_ids = T * (2 + R);
    int64_t *ids = xmalloc((size_t)(n_ids ? n_ids : 1) * sizeof *ids);
    memcpy(ids, in->sb.items, (size_t)T * sizeof *ids);
    memcpy(ids + T, in->sb.targets, (size_t)T * sizeof *ids);
    loss_sample_negatives(tr->seed, (uint64_t)epoch, in->sb.keys, T, R, tr->ds.num_items,
                          ids + 2 * T);
    steptime_phase(st, PH_READ);
    emb_input_dist(tr->items, tr->c, ids, n_ids, T, &in->x, NULL);
    free(ids);
    in->ready = 1;
    steptime_phase(st, PH_INPUT_DIST);
}

static void input_release(struct step_input *in)
{
    emb_exchange_free(&in->x);
    batch_free(&in->sb);
    in->ready = 0;
}

void train_step_drain(struct trainer *tr)
{
    for (int k = 0; k < 2; k++)
        if (tr->in[k].ready)
            input_release(&tr->in[k]);
    tr->in_cur = 0;
}

/* Post the dense gradients [offset of params[first], bucket_end) of the
 * arena for summing over dp. */
static void bucket_post(struct trainer *tr, int first)
{
    int64_t lo = tr->m.params[first].g - tr->m.grad;
    if (lo >= tr->bucket_end)
        return;
    if (tr->nbuckets == TRAIN_MAX_BUCKETS)
        fatal("train: more than %d gradient buckets", TRAIN_MAX_BUCKETS);
    tr->be->synchronize(); /* the gradients are final on the device too */
    comm_iallreduce_sum_f32(tr->c, COMM_DP, tr->m.grad + lo, tr->bucket_end - lo,
                            COMM_PH_DENSE, &tr->buckets[tr->nbuckets++]);
    tr->bucket_end = lo;
}

/* The model's between-layer hook: progress what is in flight; in the
 * backward, post the bucket of the gradients just finished (not the last
 * one, params[0..): it follows the embedding gradients). */
static void step_progress(void *ctx, int first_final)
{
    struct trainer *tr = ctx;
    comm_compute_end();
    struct step_input *nx = &tr->in[1 - tr->in_cur];
    if (nx->ready)
        emb_input_progress(&nx->x);
    struct emb_exchange *x = &tr->in[tr->in_cur].x;
    if (x->rpending[1])
        emb_output_test(x, 1);
    if (x->gpending[0] || x->gpending[1])
        emb_grad_test(x);
    if (tr->bucketed && first_final > 0)
        bucket_post(tr, first_final);
    for (int i = 0; i < tr->nbuckets; i++)
        if (tr->buckets[i].mpi)
            comm_test(&tr->buckets[i]);
    comm_compute_begin();
}

/* parallel.transport of the dense all-reduce (README "Overlap"): mpi, or
 * on the CUDA backend copy-engine | kernel within a node (dense_ipc.c; MPI
 * across nodes). auto = copy-engine when the backend is CUDA and some node
 * runs several ranks, else mpi; it falls back to mpi when the CUDA IPC
 * mappings cannot be made, where an explicit choice ends the job. Every
 * rank takes the same branch (same backend, global rank counts). The
 * embedding exchanges (host memory) always go through MPI. */
static void transport_setup(struct trainer *tr)
{
    const char *tp = params_str(tr->p, P_parallel_transport);
    const int is_auto = !strcmp(tp, "auto"), host = backend_is_host(tr->be);
    const char *mpi_how = host ? "MPI"
                          : tr->dev.direct ? "CUDA-aware MPI"
                                           : "MPI, staged through pinned host memory";
    tr->ipc = 0;
    if (host && !is_auto && strcmp(tp, "mpi") != 0)
        fatal("parallel.transport = %s: not available on the CPU backend: it needs the CUDA "
              "backend (device.type=cuda); on the CPU only mpi exists: use "
              "parallel.transport=mpi or auto",
              tp);
    int64_t most_on_node = comm_allreduce_max_i64(tr->c, tr->c->g[COMM_NODE].size);
    if (!strcmp(tp, "mpi") || host || (is_auto && most_on_node < 2)) {
        log_info("parallel.transport: mpi (%s)%s", mpi_how,
                 !is_auto ? ""
                 : host   ? ", chosen by auto: the CPU backend"
                          : ", chosen by auto: one rank per node");
        return;
    }
    const int use_kernel = !strcmp(tp, "kernel");
    char err[512];
    if (dense_ipc_init(&tr->dipc, tr->c, tr->be, tr->m.grad, tr->m.ngrad, use_kernel,
                       tr->dev.direct, err, sizeof err)) {
        if (!is_auto)
            fatal("parallel.transport = %s: %s", tp, err);
        log_info("notice: parallel.transport=auto: mpi (%s), CUDA IPC is not available: %s",
                 mpi_how, err);
        return;
    }
    tr->ipc = 1;
    log_info("parallel.transport: %s%s: dense all-reduce by %s through CUDA IPC within a "
             "node (%d ranks), %s across the %d nodes; embedding exchanges by MPI",
             use_kernel ? "kernel" : "copy-engine", is_auto ? " (chosen by auto)" : "",
             use_kernel ? "a copy kernel" : "the copy engines", tr->dipc.L,
             tr->dipc.nodes < 2 ? "nothing" : tr->dipc.stage ? "staged MPI" : "CUDA-aware MPI",
             tr->dipc.nodes);
}

void train_step_setup(struct trainer *tr)
{
    const char *ov = params_str(tr->p, P_parallel_overlap);
    tr->overlap = !strcmp(ov, "none")       ? OVERLAP_NONE
                  : !strcmp(ov, "pipeline") ? OVERLAP_PIPELINE
                                            : OVERLAP_PRIORITIZED;
    transport_setup(tr);
    /* buckets need gradients MPI can read where they are; the IPC
     * transports reduce the whole arena at once */
    tr->bucketed = tr->overlap == OVERLAP_PRIORITIZED && !tr->ipc &&
                   (backend_is_host(tr->be) || tr->dev.direct);
    if (tr->overlap != OVERLAP_NONE) {
        tr->m.progress = step_progress;
        tr->m.progress_ctx = tr;
    }
    char err[256];
    if (!strcmp(params_str(tr->p, P_parallel_progress), "thread") &&
        comm_progress_start(tr->c, err, sizeof err))
        fatal("parallel.progress = thread: %s", err);
}

/* Sum the dense gradient arena over dp: through CUDA IPC within a node
 * (parallel.transport copy-engine | kernel), else in place on a host
 * backend or with CUDA-aware MPI, else through the pinned host buffer
 * tr->stage. */
static void dense_allreduce(struct trainer *tr)
{
    if (tr->ipc)
        dense_ipc_allreduce(&tr->dipc);
    else
        device_allreduce_sum_f32(tr->be, tr->c, COMM_DP, tr->m.grad, tr->m.ngrad, tr->stage);
}

/* Clip the summed dense gradients and take an AdamW step. */
static void dense_step(struct trainer *tr)
{
    const struct backend_ops *be = tr->be;
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
    steptime_phase(&tr->st, PH_OPTIMIZER);
}

/* Backend buffer `which` of at least `bytes` (contents undefined). */
static void *step_buffer(struct trainer *tr, int which, size_t bytes)
{
    struct step_buf *b = &tr->buf[which];
    if (bytes > b->cap) {
        tr->be->free(b->p);
        b->cap = bytes + bytes / 4;
        b->p = tr->be->alloc(b->cap);
    }
    return b->p;
}

/* Copy chunk k of the exchange's unique rows between host (x->rows-like,
 * [nuniq, dim]) and dev, which has the same layout: owner p's block holds
 * its chunk-0 rows, then its chunk-1 rows. */
static void rows_copy(const struct backend_ops *be, const struct emb_exchange *x, int dim, int k,
                      float *dev, float *host, int up)
{
    for (int p = 0; p < x->G; p++) {
        int64_t off = x->sdispls[p] + (k == 0 ? 0 : x->scounts0[p]);
        int64_t n = k == 0 ? x->scounts0[p] : x->scounts[p] - x->scounts0[p];
        size_t bytes = (size_t)n * (size_t)dim * sizeof(float);
        if (n > 0 && up)
            be->to_device(dev + off * dim, host + off * dim, bytes);
        else if (n > 0)
            be->to_host(host + off * dim, dev + off * dim, bytes);
    }
}

double train_step(struct trainer *tr, const int64_t *users, int64_t B,
                  const int64_t *next_users, int64_t next_B, int64_t next_epoch,
                  int64_t *tokens)
{
    struct comm *c = tr->c;
    struct steptime *st = &tr->st;
    const struct backend_ops *be = tr->be;
    const int d = tr->d, R = tr->R, host = backend_is_host(be);
    const int prio = tr->overlap == OVERLAP_PRIORITIZED;
    struct step_input *in = &tr->in[tr->in_cur], *nx = &tr->in[1 - tr->in_cur];
    if (!in->ready)
        prepare(tr, in, users, B, tr->epoch);
    struct emb_exchange *x = &in->x;
    const int64_t T = in->sb.T, n_ids = T * (2 + R);
    int64_t n_global = comm_allreduce_sum_i64(c, T);
    *tokens = n_global;
    float scale = n_global > 0 ? 1.0f / (float)n_global : 0.0f;

    /* rows of this step, read after the previous step's sparse update */
    emb_output_post(tr->items, c, x, NULL);
    steptime_phase(st, PH_LOOKUP);
    if (tr->overlap != OVERLAP_NONE && next_users)
        prepare(tr, nx, next_users, next_B, next_epoch);
    emb_output_wait(x, 0, NULL);
    if (!prio)
        emb_output_wait(x, 1, NULL);
    const size_t td = (size_t)(T ? T : 1) * (size_t)d * sizeof(float);
    const size_t ud = (size_t)(x->nuniq ? x->nuniq : 1) * (size_t)d * sizeof(float);
    float *rows = host ? x->rows : step_buffer(tr, BUF_ROWS, ud);
    if (!host) {
        rows_copy(be, x, d, 0, rows, x->rows, 1);
        if (!prio)
            rows_copy(be, x, d, 1, rows, x->rows, 1);
    }
    const size_t ib = (size_t)(n_ids ? n_ids : 1) * sizeof(int64_t);
    const int64_t *inv = x->inverse;
    if (!host) {
        int64_t *dinv = step_buffer(tr, BUF_INV, ib);
        be->to_device(dinv, x->inverse, ib);
        inv = dinv;
    }
    float *emb = step_buffer(tr, BUF_EMB, td);
    be->gather_rows(T, d, rows, inv, emb); /* inputs: chunk 0 */
    steptime_phase(st, PH_LOOKUP);

    double t_work = clock_seconds();
    float *out = step_buffer(tr, BUF_OUT, td);
    struct batch b = {.B = in->sb.B, .T = T, .offsets = in->sb.offsets, .ts = in->sb.ts,
                      .row_keys = in->sb.keys, .train = 1};
    comm_compute_begin();
    tr->m.vt->forward(&tr->m, &b, emb, out);
    comm_compute_end();
    if (nx->ready)
        emb_input_post_ids(c, &nx->x);
    if (prio) { /* targets and negatives: chunk 1 */
        emb_output_wait(x, 1, NULL);
        if (!host)
            rows_copy(be, x, d, 1, rows, x->rows, 1);
    }
    float *du = step_buffer(tr, BUF_DU, td);
    float *drows = step_buffer(tr, BUF_DROWS, ud);
    be->zero(drows, ud); /* accumulated by the loss and the scatter */
    int64_t counted = 0;
    comm_compute_begin();
    double loss_sum =
        tr->bce ? loss_bce(be, T, d, out, x->nuniq, rows, inv + T, inv + 2 * T, scale, du, drows,
                           &counted)
                : loss_sampled_softmax(be, T, d, R, (float)params_f64(tr->p, P_train_temperature),
                                       tr->normalize_items, out, x->nuniq, rows, inv + T,
                                       inv + 2 * T, scale, du, drows, &counted);
    comm_compute_end();
    /* the gradients of chunk 1 (ids only the loss uses: the backward's
     * scatter touches chunk-0 rows alone) are final: with prioritized they
     * travel to their owners during the backward */
    float *gu = host ? drows : xmalloc(ud);
    if (prio) {
        if (!host)
            rows_copy(be, x, d, 1, drows, gu, 0);
        emb_grad_post_chunk(tr->items, c, x, gu, 1, NULL);
    }
    slow_down(tr, clock_seconds() - t_work);
    steptime_phase(st, PH_FORWARD);

    t_work = clock_seconds();
    model_zero_grads(&tr->m);
    tr->nbuckets = 0;
    tr->bucket_end = tr->m.ngrad;
    float *demb = step_buffer(tr, BUF_DEMB, td);
    comm_compute_begin();
    tr->m.vt->backward(&tr->m, &b, du, demb);
    comm_compute_end();
    be->scatter_add_rows(T, d, demb, inv, drows);
    if (!host && prio)
        rows_copy(be, x, d, 0, drows, gu, 0);
    else if (!host)
        be->to_host(gu, drows, ud);
    slow_down(tr, clock_seconds() - t_work);
    steptime_phase(st, PH_BACKWARD);

    if (prio) { /* sparse first: the next step's lookup waits for it */
        emb_grad_post_chunk(tr->items, c, x, gu, 0, NULL);
        if (tr->bucketed)
            bucket_post(tr, 0);
        emb_grad_finish(tr->items, c, x, NULL);
        steptime_phase(st, PH_GRAD_EXCHANGE);
        if (tr->bucketed) {
            for (int i = 0; i < tr->nbuckets; i++)
                if (tr->buckets[i].mpi)
                    comm_wait(&tr->buckets[i]);
        } else {
            dense_allreduce(tr);
        }
        steptime_phase(st, PH_ALLREDUCE);
    } else {
        emb_backward_unique(tr->items, c, x, gu, NULL);
        steptime_phase(st, PH_GRAD_EXCHANGE);
        dense_allreduce(tr);
        steptime_phase(st, PH_ALLREDUCE);
    }
    dense_step(tr);

    if (!host)
        free(gu);
    input_release(in);
    if (nx->ready)
        tr->in_cur = 1 - tr->in_cur;
    double loss = comm_allreduce_sum_f64(c, COMM_DP, loss_sum);
    steptime_phase(st, PH_ALLREDUCE);
    return n_global > 0 ? loss / (double)n_global : 0.0;
}
