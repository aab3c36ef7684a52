/* train_conf: the typed configuration of a training run, resolved once at
 * start-up from the parameters (base/params_table.h). The loop, the step,
 * the dense optimizer and evaluation read these fields; nothing on the step
 * path looks parameters up. */
#ifndef FS_TRAIN_CONF_H
#define FS_TRAIN_CONF_H

#include <stdint.h>

#include "balance/cost.h"
#include "balance/split_long.h"
#include "base/params.h"
#include "data/split.h"
#include "data/window.h"
#include "backend/emb_codec.h"
#include "backend/emb_optim.h"
#include "backend/precision.h"
#include "embedding/emb_dyn.h"
#include "feature/schema.h"
#include "model/model.h"
#include "model/task.h"
#include "train/dense_optim.h"

enum overlap_mode { OVERLAP_NONE, OVERLAP_PIPELINE, OVERLAP_PRIORITIZED, OVERLAP_PREFETCH };

struct train_conf {
    /* data */
    const char *data_path;
    enum split_mode split;
    int N;                    /* data.max_seq_len */
    int use_timestamps;       /* data.timestamps (used if the dataset has them) */
    /* model and loss */
    struct model_conf model;  /* time_bias is set once the dataset is open */
    int d;                    /* model.dim */
    enum retrieval_loss loss; /* train.loss (model/task.h) */
    int R;                    /* negatives per position (1 with bce, 0 with full) */
    float temperature;        /* sampled softmax tau */
    int normalize_items;      /* L2-normalised item rows in the loss (HSTU) */
    enum negatives_from { NEG_UNIFORM, NEG_IN_BATCH, NEG_MIXED } negatives_from;
    int64_t shared_negatives; /* positions a draw of negatives, 0: each its own */
    int keep_best;            /* train.keep_best: best.h5 on validation NDCG@10 */
    int64_t patience;         /* train.patience: validations without improvement (0 = off) */
    /* the item table */
    float emb_init_std;
    struct emb_optim_conf emb_optim;
    enum emb_placement { PLACE_AUTO, PLACE_HOST, PLACE_DEVICE } placement;
    int subspace_k;           /* embedding.subspace_k (0 = a plain table) */
    int subspace_identity;    /* embedding.subspace_basis = identity */
    struct emb_dyn_conf dyn;  /* embedding.dynamic and its settings (train/train_dyn.h) */
    const char *cache;        /* embedding.cache (train/train_cache.h): its text, */
    int64_t cache_rows;       /* rows per shard, or */
    double cache_frac;        /* the fraction of the shard's rows; both 0: none */
    int cache_lfu;            /* embedding.cache_policy = lfu */
    /* train.task and the ranking settings (train/step_task.c resolves them) */
    struct task_conf task;
    /* features.* (resolved against the dataset in step_feat_setup) */
    struct feat_conf features;
    /* schedule */
    struct window_conf stream; /* train.schedule = stream and its windows (data/window.h) */
    uint64_t seed;
    int64_t batch_size, epochs, max_steps, log_every, eval_every, checkpoint_every;
    int final_eval, baseline;
    const char *resume;       /* "" | "auto" | a path */
    int nonfinite_skip;       /* train.nonfinite = skip (else stop) */
    int exact_sums;           /* train.exact_sums (base/exact.h) */
    /* dense optimizer */
    struct dense_optim_conf dense_optim;
    /* parallel */
    int64_t embedding_group;
    enum overlap_mode overlap;
    int progress_thread;      /* parallel.progress = thread */
    struct cost_model cost;   /* parallel.cost_model (cost.h) */
    double peak_tflops;       /* device.peak_tflops (0: measured) */
    struct split_conf split_long; /* parallel.split_long and its settings; .on: auto */
    const char *transport;    /* parallel.transport */
    /* device (the backend itself: device_select) */
    const char *device_type;  /* device.type */
    int staging_direct;       /* device.staging = direct */
    enum precision precision; /* device.precision, device.tf32 resolved (precision_resolve) */
    int64_t timeout;          /* parallel.timeout: watchdog seconds (0 = off) */
    enum emb_codec rows_codec, grads_codec; /* parallel.rows_codec, grads_codec */
    /* output */
    const char *checkpoint_dir, *metrics, *trace;
    int64_t trace_steps;
    int trace_peers;          /* output.trace_peers */
    int64_t keep_checkpoints; /* output.keep_checkpoints (0 = all) */
    int shared_dir;           /* output.shared_dir: beside other runs' checkpoints */
    int ckpt_gathered;        /* output.checkpoint_write = gathered (through rank 0) */
    int64_t ckpt_block;       /* debug.checkpoint_block: bytes per round (0 = default) */
    int64_t full_logits;      /* debug.full_logits: the full softmax's block (0 = default) */
    /* debug.slow_rank */
    int slow_rank;            /* -1: none */
    double slow_factor;
    /* debug.nan_step, debug.hang_rank (test hooks; steps numbered from 1) */
    int64_t nan_step;         /* 0: none */
    int nan_sparse;           /* debug.nan_in = sparse: into rank 0's embedding gradients */
    int nan_bias;             /* debug.nan_in = bias: into the model.bias rows rank 0 owns */
    int hang_rank;            /* -1: none */
    int64_t hang_step;
    int signal_rank;          /* debug.signal_rank: -1 none */
    int64_t signal_step;
    int64_t node_size;        /* debug.node_size: 0 = the real nodes */
};

/* Fill tc from p (strings point into p, which must outlive tc). Returns 0,
 * or -1 with err naming the parameter (P ranks: the world size, to check
 * rank numbers; 0 = not known, those checks skipped). */
int train_conf_resolve(const struct params *p, int P, struct train_conf *tc, char *err,
                       size_t errlen);
/* Every check of the parameters that training makes before it starts, in
 * one place (train and 'freescale params' call it): train_conf_resolve's,
 * the model's (model_conf_check), what the CPU backend cannot run when
 * device.type = cpu (backend_check),
 * and with P > 0 the rank counts. 0, or -1 with err. */
int train_conf_check(const struct params *p, int P, char *err, size_t errlen);
struct backend_ops;
/* What embedding.placement = device would refuse in this run on backend be
 * (embedding.placement = auto asks before it chooses the device): the
 * refusals of train_conf_check and backend_check with tc's placement set to
 * device. 0 when none, or -1 with err (`ASKED: WHY; use REMEDY`). */
int train_conf_device_refusal(const struct params *p, const struct train_conf *tc,
                              const struct backend_ops *be, int P, char *err, size_t errlen);

#endif
