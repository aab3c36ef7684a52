/* placement: embedding.placement's choice of the item table's memory; see
 * placement.h. */
#include "train/placement.h"

#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/emb_optim.h"
#include "base/log.h"
#include "comm/comm.h"
#include "comm/comm_fail.h"
#include "embedding/emb_table.h"
#include "model/model.h"
#include "train/infer.h"
#include "train/step_feat.h"
#include "train/train.h"
#include "train/train_conf.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * 1024.0 * 1024.0)

/* Bytes of a dense item table's shard and its optimizer state on one rank
 * (num_items / G + 1 slots). */
static double item_shard_bytes(const struct trainer *tr)
{
    const int64_t slots = tr->ds.num_items / tr->c->g[COMM_EMB].size + 1;
    return emb_shard_bytes((double)slots, tr->conf.d, tr->conf.emb_optim.kind, 0);
}

/* Bytes of the item table's shard and its optimizer state (with the feature
 * tables' beside it: step_feat_table_bytes) on one rank of
 * G shards: a dense table of num_items rows; a dynamic one grown to its
 * share of embedding.capacity (the pool's slots with their statistics, the
 * index at most half full: train_dyn_describe's count). -1: a dynamic
 * table without a capacity (no bound). */
static double table_bytes(const struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    const int64_t G = tr->c->g[COMM_EMB].size;
    const double feat = step_feat_table_bytes(tr, (int)G); /* beside the item table */
    if (feat < 0) /* a dynamic feature table without a bound */
        return -1;
    if (!cf->dyn.on)
        return item_shard_bytes(tr) + feat;
    if (cf->dyn.capacity <= 0)
        return -1;
    const int64_t slots = (cf->dyn.capacity + G - 1) / G + 1;
    return emb_shard_bytes((double)slots, cf->d, cf->emb_optim.kind, 1) + feat;
}

/* The device's free bytes, read on this rank (a failed read: 0, its
 * message in err[256], first come). */
static size_t read_free(const struct trainer *tr, char *err)
{
    size_t free_b = 0, total_b = 0;
    char e[256] = "";
    if (tr->be->device_memory(&free_b, &total_b, e, sizeof e) == 0)
        return free_b;
    if (!err[0])
        snprintf(err, 256, "%s", e[0] ? e : "the device's free memory cannot be read");
    return 0;
}

/* Fail the job when a rank's read failed (collective). */
static void agree_read(struct trainer *tr, const char *err)
{
    char msg[400];
    snprintf(msg, sizeof msg, "embedding.placement = %s: %s",
             tr->conf.placement == PLACE_AUTO ? "auto" : "device", err);
    comm_fail_agree(tr->c, err[0] != 0, msg);
}

double train_placement_room(struct trainer *tr, size_t *free_b)
{
    char err[256] = "";
    *free_b = read_free(tr, err);
    agree_read(tr, err);
    const int sharers = tr->dev.sharers > 1 ? tr->dev.sharers : 1;
    return 0.5 * (double)*free_b / sharers;
}

/* The step's workspace of this rank: the model's buffers for a training
 * batch (train.batch_size sequences of data.max_seq_len events, with
 * features their tokens), reserved now (model_reserve_cold: the buffers the
 * steps would grow to) and measured as the device's free memory shrank
 * over it, the ranks of a node in turn (so that a device shared by
 * several sees one rank's at a time). Collective over the node. */
static double workspace_bytes(struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    const int64_t N = cf->N;
    int64_t seq = N;
    if (tr->feat) /* contextual tokens; two an event with interleaved actions: a history of
                     N - 1 events and one more (the training sequence's C + m N) */
        seq = infer_history_tokens(tr, N) + (cf->task.actions == ACT_INTERLEAVE ? 2 : 1);
    double ws = 0;
    char err[256] = "";
    for (int turn = 0; turn < tr->c->g[COMM_NODE].size; turn++) {
        if (turn == tr->c->g[COMM_NODE].rank) {
            const size_t free0 = read_free(tr, err);
            model_reserve_cold(&tr->m, cf->batch_size, cf->batch_size * seq, 0);
            const size_t free1 = read_free(tr, err);
            ws = free0 > free1 ? (double)(free0 - free1) : 0.0;
        }
        comm_barrier_group(tr->c, COMM_NODE);
    }
    agree_read(tr, err);
    return ws;
}

/* embedding.placement = auto with a device backend: see placement.h.
 * Collective; returns 1 for device memory. */
static int choose(struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    const char *optim = emb_optim_name(cf->emb_optim.kind);
    char why[1024];
    if (train_conf_device_refusal(tr->p, cf, tr->be, tr->c->size, why, sizeof why)) {
        for (char *use = why; (use = strpbrk(use, ";:")) != NULL; use++)
            if (!strncmp(use + 1, " use ", 5)) {
                *use = '\0'; /* the remedy names auto: not for this line */
                break;
            }
        log_info("embedding.placement = auto: host (device placement refuses this run: %s)", why);
        return 0;
    }
    const double table = table_bytes(tr);
    if (table < 0) {
        log_info("embedding.placement = auto: host (%s without embedding.capacity: the pool "
                 "has no bound to fit in device memory)",
                 cf->dyn.on ? "embedding.dynamic = on" : "features.dynamic");
        return 0;
    }
    const int sharers = tr->dev.sharers > 1 ? tr->dev.sharers : 1;
    comm_barrier(tr->c);
    size_t free0;
    const double room = train_placement_room(tr, &free0);
    const double ws = workspace_bytes(tr), need = table + ws;
    /* every rank's verdict: device when all fit; the line gives rank 0's figures and
     * the tightest rank's margin */
    const int short_here = need > room;
    const int any_short = comm_allreduce_max_i64(tr->c, short_here) != 0;
    const double worst = -comm_allreduce_max_f64(tr->c, COMM_WORLD, -(room - need));
    snprintf(why, sizeof why,
             "the shards and their %s state %.2f MiB%s + the step's workspace %.2f MiB = %.2f MiB "
             "per rank, %s half of the %.1f MiB free on a rank's device (shared by %d "
             "rank%s; the other half kept as the margin for the exchanges, the loss and the "
             "allocator)%s",
             optim, table / MIB,
             cf->dyn.on || (cf->features.dynamic && cf->features.dynamic[0])
                 ? " (the pools grown to embedding.capacity)" : "",
             ws / MIB, need / MIB, short_here ? "more than" : "within", (double)free0 / MIB,
             sharers, sharers == 1 ? "" : "s",
             any_short && !short_here ? "; another rank's device is short" : "");
    log_info("embedding.placement = auto: %s (%s; the tightest rank: %.2f MiB %s)",
             any_short ? "host" : "device", why, (worst < 0 ? -worst : worst) / MIB,
             worst < 0 ? "short" : "to spare");
    return !any_short;
}

const struct backend_ops *train_placement(struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    if (cf->placement == PLACE_HOST)
        return NULL;
    if (cf->placement == PLACE_AUTO) {
        if (backend_is_host(tr->be)) {
            log_info("embedding.placement = auto: host (the %s backend has no device memory)",
                     tr->be->name);
            return NULL;
        }
        return choose(tr) ? tr->be : NULL;
    }
    const double need = item_shard_bytes(tr);
    size_t free_b;
    const double room = train_placement_room(tr, &free_b);
    char msg[1024];
    const int sharers = tr->dev.sharers > 1 ? tr->dev.sharers : 1;
    snprintf(msg, sizeof msg, "embedding.placement = device: the item table's shard and its %s "
             "state need %.3g GiB per rank, more than %.3g GiB (half of the %.3g GiB free on a "
             "rank's device, shared by %d rank%s): use embedding.placement=host with "
             "embedding.cache (a device cache of the hot rows, e.g. 0.1), or more devices",
             emb_optim_name(cf->emb_optim.kind), need / GIB, room / GIB, (double)free_b / GIB,
             sharers, sharers == 1 ? "" : "s");
    comm_fail_agree(tr->c, need > room, msg);
    log_info("embedding.placement: device (%.3f GiB per rank: the shard and its %s state)",
             need / GIB, emb_optim_name(cf->emb_optim.kind));
    return tr->be;
}
