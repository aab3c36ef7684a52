/* train_conf: parameters -> typed configuration; see train_conf.h. */
#include "train/train_conf.h"
#include "train/train_dyn.h"

#include <stdio.h>
#include <string.h>

#include "backend/backend_cpu.h"
#include "backend/precision.h"
#include "base/log.h"
#include "data/stream_follow.h"
#include "train/backend_check.h"
#include "train/train_cache.h"

/* Adam's constants, for the dense parameters and the tables alike. */
/* the embedding tables' Adam (embedding.optimizer = adam); the dense
 * parameters' betas are train.adam_beta1, train.adam_beta2 */
static const float ADAM_BETA1 = 0.9f, ADAM_BETA2 = 0.98f, ADAM_EPS = 1e-8f;

/* debug.slow_rank = R:FACTOR */
static int slow_rank_parse(const char *text, int P, struct train_conf *tc, char *err,
                           size_t errlen)
{
    tc->slow_rank = -1;
    tc->slow_factor = 1.0;
    if (!text[0])
        return 0;
    int rank;
    double factor;
    char tail;
    if (sscanf(text, "%d:%lf%c", &rank, &factor, &tail) != 2 || rank < 0 || factor < 1)
        return errorf(err, errlen, "debug.slow_rank = '%s': expected RANK:FACTOR with FACTOR >= 1",
                      text);
    if (P > 0 && rank >= P)
        return errorf(err, errlen, "debug.slow_rank = '%s': rank %d does not exist (%d ranks)",
                      text, rank, P);
    tc->slow_rank = rank;
    tc->slow_factor = factor;
    return 0;
}

/* debug.hang_rank, debug.signal_rank = R:STEP (-1, 0: none) */
static int rank_step_parse(const char *name, const char *text, int P, int *r, int64_t *at,
                           char *err, size_t errlen)
{
    *r = -1;
    *at = 0;
    if (!text[0])
        return 0;
    int rank;
    long long step;
    char tail;
    if (sscanf(text, "%d:%lld%c", &rank, &step, &tail) != 2 || rank < 0 || step < 1)
        return errorf(err, errlen, "%s = '%s': expected RANK:STEP with STEP >= 1", name, text);
    if (P > 0 && rank >= P)
        return errorf(err, errlen, "%s = '%s': rank %d does not exist (%d ranks)", name, text,
                      rank, P);
    *r = rank;
    *at = step;
    return 0;
}

/* What a run asks that contradicts itself before any backend is known,
 * and with device.type = cpu what the CPU backend cannot give
 * (backend_check: the same refusals as at set-up, found first). */
static int device_check(const struct train_conf *tc, char *err, size_t errlen)
{
    if (!strcmp(tc->device_type, "cpu"))
        return backend_check(&backend_cpu, tc, err, errlen);
    return 0;
}

int train_conf_device_refusal(const struct params *p, const struct train_conf *tc,
                              const struct backend_ops *be, int P, char *err, size_t errlen)
{
    struct train_conf dev = *tc;
    dev.placement = PLACE_DEVICE;
    return backend_check(be, &dev, err, errlen) ||
                   train_dyn_refuse(p, &dev, P, err, errlen)
               ? -1
               : 0;
}

/* train.follow, train.follow_timeout (data/stream_follow.h), and what the
 * stream schedule refuses (output.checkpoint_delta_every: before the deltas'
 * own needs, train_dyn_refuse, which a stream would not help meet). The stream
 * schedule follows the files; until it reads train.follow, a run that asks
 * for it is refused (the schedule's hook: stream_schedule below). */
static int follow_check(const struct params *p, char *err, size_t errlen)
{
    double timeout;
    if (stream_duration_parse("train.follow_timeout", params_str(p, P_train_follow_timeout),
                              &timeout, err, errlen))
        return -1;
    const int stream_schedule = !strcmp(params_str(p, P_train_schedule), "stream");
    const int64_t K = params_i64(p, P_output_checkpoint_delta_every);
    if (stream_schedule && K > 0) /* its checkpoints come after windows, each a full one */
        return errorf(err, errlen, "output.checkpoint_delta_every = %lld: train.schedule = "
                      "stream writes a full checkpoint after each window (or every "
                      "train.checkpoint_every windows), not deltas; use "
                      "output.checkpoint_delta_every = 0", (long long)K);
    if (stream_schedule && strcmp(params_str(p, P_train_tune), "off"))
        return errorf(err, errlen, "train.tune = %s: not with train.schedule = stream (its "
                      "candidates are runs of epochs)", params_str(p, P_train_tune));
    if (stream_schedule && !strcmp(params_str(p, P_model_factors_lr), "auto"))
        return errorf(err, errlen, "model.factors_lr = auto: not with train.schedule = stream "
                      "(its candidates are runs of epochs)");
    if (stream_schedule && strcmp(params_str(p, P_model_calibrate), "off"))
        return errorf(err, errlen, "model.calibrate = %s: not with train.schedule = stream (it "
                      "is fitted on data.split's validation events, which a stream has not)",
                      params_str(p, P_model_calibrate));
    if (!params_i64(p, P_train_follow))
        return 0;
    if (!stream_schedule)
        return errorf(err, errlen, "train.follow needs train.schedule = stream");
    char pattern[4096];
    return stream_follow_pattern(params_str(p, P_data_path), pattern, sizeof pattern, err, errlen);
}

static int conf_check(const struct params *p, int P, char *err, size_t errlen)
{
    struct train_conf tc;
    if (train_conf_resolve(p, P, &tc, err, errlen))
        return -1;
    tc.model.time_bias = tc.use_timestamps; /* the most tensors the dataset may ask for */
    if (model_conf_check(&tc.model, err, errlen) || device_check(&tc, err, errlen) ||
        follow_check(p, err, errlen) || train_dyn_refuse(p, &tc, P, err, errlen) ||
        backend_check_cache(&tc, err, errlen))
        return -1;
    const int64_t G = tc.embedding_group;
    if (P > 0 && G > 0 && (G > P || P % G != 0))
        return errorf(err, errlen,
                      "parallel.embedding_group = %lld does not divide the %d ranks of this job "
                      "(use 0 for all ranks, or a divisor of %d)", (long long)G, P, P);
    return 0;
}

int train_conf_check(const struct params *p, int P, char *err, size_t errlen)
{
    if (conf_check(p, P, err, errlen) == 0)
        return 0;
    params_locate(p, err, errlen); /* "command line: ..." as the parse errors say it */
    return -1;
}

int train_conf_resolve(const struct params *p, int P, struct train_conf *tc, char *err,
                       size_t errlen)
{
    memset(tc, 0, sizeof *tc);
    tc->data_path = params_str(p, P_data_path);
    tc->split = !strcmp(params_str(p, P_data_split), "hstu") ? SPLIT_HSTU : SPLIT_LOO;
    tc->N = (int)params_i64(p, P_data_max_seq_len);
    tc->use_timestamps = (int)params_i64(p, P_data_timestamps);
    tc->d = (int)params_i64(p, P_model_dim);
    tc->model = (struct model_conf){
        .type = params_i64(p, P_model_type) == 0 ? MODEL_HSTU : MODEL_SASREC, .d = tc->d,
        .layers = (int)params_i64(p, P_model_layers), .heads = (int)params_i64(p, P_model_heads),
        .max_len = tc->N, .dropout = (float)params_f64(p, P_model_dropout)};
    const char *loss = params_str(p, P_train_loss);
    tc->loss = !strcmp(loss, "bce") ? LOSS_BCE : !strcmp(loss, "full") ? LOSS_FULL : LOSS_SOFTMAX;
    tc->R = tc->loss == LOSS_BCE ? 1 : (int)params_i64(p, P_train_negatives);
    tc->temperature = (float)params_f64(p, P_train_temperature);
    tc->normalize_items = tc->model.type == MODEL_HSTU;
    if (tc->loss == LOSS_FULL)
        tc->R = 0; /* no sampled negatives */
    const char *nf = params_str(p, P_train_negatives_from);
    tc->negatives_from = !strcmp(nf, "in_batch") ? NEG_IN_BATCH
                         : !strcmp(nf, "mixed")  ? NEG_MIXED
                                                 : NEG_UNIFORM;
    if (tc->negatives_from != NEG_UNIFORM && tc->loss != LOSS_SOFTMAX)
        return errorf(err, errlen, "train.negatives_from = %s: only for train.loss = softmax",
                      nf);
    tc->shared_negatives = params_i64(p, P_train_shared_negatives);
    if (tc->shared_negatives > 0 && tc->loss != LOSS_SOFTMAX)
        return errorf(err, errlen, "train.shared_negatives = %lld: only for train.loss = softmax",
                      (long long)tc->shared_negatives);
    tc->keep_best = (int)params_i64(p, P_train_keep_best);
    tc->patience = params_i64(p, P_train_patience);
    tc->emb_init_std = (float)params_f64(p, P_embedding_init_std);
    tc->emb_optim = (struct emb_optim_conf){
        .kind = (enum emb_optimizer)emb_optim_parse(params_str(p, P_embedding_optimizer)),
        .lr = (float)params_f64(p, P_embedding_lr),
        .weight_decay = (float)params_f64(p, P_embedding_weight_decay), .eps = ADAM_EPS,
        .beta1 = ADAM_BETA1, .beta2 = ADAM_BETA2};
    const char *pl = params_str(p, P_embedding_placement);
    tc->placement = !strcmp(pl, "host") ? PLACE_HOST : !strcmp(pl, "device") ? PLACE_DEVICE
                                                                               : PLACE_AUTO;
    tc->seed = (uint64_t)params_i64(p, P_train_seed);
    tc->batch_size = params_i64(p, P_train_batch_size);
    tc->epochs = params_i64(p, P_train_epochs);
    tc->max_steps = params_i64(p, P_train_max_steps);
    tc->log_every = params_i64(p, P_train_log_every);
    tc->eval_every = params_i64(p, P_train_eval_every);
    tc->checkpoint_every = params_i64(p, P_train_checkpoint_every);
    tc->final_eval = (int)params_i64(p, P_train_final_eval);
    tc->baseline = (int)params_i64(p, P_train_baseline);
    tc->resume = params_str(p, P_train_resume);
    tc->nonfinite_skip = !strcmp(params_str(p, P_train_nonfinite), "skip");
    tc->exact_sums = (int)params_i64(p, P_train_exact_sums);
    tc->dense_optim = (struct dense_optim_conf){
        .lr = params_f64(p, P_train_lr), .warmup_steps = params_i64(p, P_train_warmup_steps),
        .schedule = lr_schedule_parse(params_str(p, P_train_lr_schedule)),
        .weight_decay = (float)params_f64(p, P_train_weight_decay),
        .clip_norm = params_f64(p, P_train_clip_norm),
        .beta1 = (float)params_f64(p, P_train_adam_beta1),
        .beta2 = (float)params_f64(p, P_train_adam_beta2), .eps = ADAM_EPS};
    tc->embedding_group = params_i64(p, P_parallel_embedding_group);
    const char *ov = params_str(p, P_parallel_overlap);
    tc->overlap = !strcmp(ov, "none")       ? OVERLAP_NONE
                  : !strcmp(ov, "pipeline") ? OVERLAP_PIPELINE
                  : !strcmp(ov, "prefetch") ? OVERLAP_PREFETCH
                                            : OVERLAP_PRIORITIZED;
    tc->progress_thread = !strcmp(params_str(p, P_parallel_progress), "thread");
    tc->transport = params_str(p, P_parallel_transport);
    tc->device_type = params_str(p, P_device_type);
    tc->staging_direct = !strcmp(params_str(p, P_device_staging), "direct");
    if (precision_resolve(p, &tc->precision, NULL, 0, err, errlen))
        return -1;
    tc->timeout = params_i64(p, P_parallel_timeout);
    tc->rows_codec = (enum emb_codec)emb_codec_parse(params_str(p, P_parallel_rows_codec));
    tc->grads_codec = (enum emb_codec)emb_codec_parse(params_str(p, P_parallel_grads_codec));
    tc->node_size = params_i64(p, P_debug_node_size);
    tc->cache = params_str(p, P_embedding_cache);
    tc->cache_lfu = !strcmp(params_str(p, P_embedding_cache_policy), "lfu");
    if (train_cache_parse(tc->cache, &tc->cache_rows, &tc->cache_frac, err, errlen))
        return -1;
    tc->subspace_k = (int)params_i64(p, P_embedding_subspace_k);
    tc->subspace_identity = !strcmp(params_str(p, P_embedding_subspace_basis), "identity");
    if (tc->subspace_k > tc->d)
        return errorf(err, errlen, "embedding.subspace_k = %d exceeds model.dim = %d",
                      tc->subspace_k, tc->d);
    if (train_dyn_resolve(p, &tc->dyn, err, errlen))
        return -1;
    tc->checkpoint_dir = params_str(p, P_output_checkpoint_dir);
    tc->metrics = params_str(p, P_output_metrics);
    tc->trace = params_str(p, P_output_trace);
    tc->trace_steps = params_i64(p, P_output_trace_steps);
    tc->trace_peers = (int)params_i64(p, P_output_trace_peers);
    tc->keep_checkpoints = params_i64(p, P_output_keep_checkpoints);
    tc->shared_dir = (int)params_i64(p, P_output_shared_dir);
    tc->ckpt_gathered = !strcmp(params_str(p, P_output_checkpoint_write), "gathered");
    tc->ckpt_block = params_i64(p, P_debug_checkpoint_block);
    tc->full_logits = params_i64(p, P_debug_full_logits);
    tc->nan_step = params_i64(p, P_debug_nan_step);
    tc->nan_sparse = !strcmp(params_str(p, P_debug_nan_in), "sparse");
    tc->nan_bias = !strcmp(params_str(p, P_debug_nan_in), "bias");
    if (!tc->data_path[0])
        return errorf(err, errlen,
                      "data.path is not set: name an HDF5 dataset (freescale data import / "
                      "data gen)");
    if (!strcmp(tc->resume, "auto") && !tc->checkpoint_dir[0])
        return errorf(err, errlen, "train.resume = auto needs output.checkpoint_dir (where it "
                      "looks for this run's checkpoints)");
    if (tc->trace_peers && !tc->trace[0])
        return errorf(err, errlen, "output.trace_peers = on needs output.trace (the file the "
                                   "per-peer events are written to)");
    if (tc->keep_best && !tc->checkpoint_dir[0])
        return errorf(err, errlen, "train.keep_best = on needs output.checkpoint_dir (where "
                      "best.h5 goes)");
    if (task_conf_from_params(p, &tc->task, err, errlen))
        return -1;
    if (window_conf_from_params(p, &tc->stream, err, errlen))
        return -1;
    if (tc->stream.on) { /* the stream schedule: ranking, causal start-up values */
        if (tc->task.type != TASK_RANKING && tc->loss == LOSS_FULL)
            return errorf(err, errlen, "train.schedule = stream: train.loss = full has no "
                          "positions without a target (a window's history); use train.loss = "
                          "softmax or bce");
        if (tc->dense_optim.schedule != LR_CONSTANT)
            return errorf(err, errlen, "train.schedule = stream: train.lr_schedule = %s decays "
                          "over a known number of steps, which a stream has not; use "
                          "train.lr_schedule = constant", params_str(p, P_train_lr_schedule));
        if (tc->keep_best || tc->patience)
            return errorf(err, errlen, "train.schedule = stream: train.%s follows the "
                          "validations of epochs; a stream is evaluated on each window",
                          tc->keep_best ? "keep_best" : "patience");
    }
    if (tc->task.type == TASK_RANKING && tc->task.select < 0 && (tc->keep_best || tc->patience))
        return errorf(err, errlen, "train.%s follows the validation AUC of a binary task: "
                      "train.tasks has none (or name a metric: train.select = TASK.mse)",
                      tc->keep_best ? "keep_best" : "patience");
    tc->model.last_targets = !strcmp(params_str(p, P_model_last_layer), "targets");
    if (tc->model.last_targets && (tc->model.type != MODEL_HSTU || tc->task.type != TASK_RANKING))
        return errorf(err, errlen, "model.last_layer = targets: for model.type = hstu with "
                      "train.task = ranking, whose loss and evaluation read the item positions' "
                      "and candidates' outputs alone (this run: model.type = %s, train.task = "
                      "%s); use model.last_layer = full",
                      tc->model.type == MODEL_HSTU ? "hstu" : "sasrec",
                      tc->task.type == TASK_RANKING ? "ranking" : "retrieval");
    if (tc->keep_best && tc->split != SPLIT_LOO)
        return errorf(err, errlen, "train.keep_best = on needs data.split = loo (with hstu "
                      "the validation target is the test target)");
    if (tc->patience > 0 && tc->eval_every < 1)
        return errorf(err, errlen, "train.patience = %lld needs train.eval_every >= 1",
                      (long long)tc->patience);
    if (feat_conf_from_params(p, &tc->features, err, errlen))
        return -1;
    if (cost_model_from_params(p, &tc->cost, NULL, err, errlen) ||
        split_conf_from_params(p, &tc->cost, &tc->split_long, err, errlen))
        return -1;
    if (tc->shared_negatives > 0 && tc->split_long.on)
        return errorf(err, errlen, "train.shared_negatives = %lld does not combine with "
                      "parallel.split_long = auto (a block of positions would depend on where "
                      "the pieces are cut)", (long long)tc->shared_negatives);
    tc->peak_tflops = params_f64(p, P_device_peak_tflops);
    if (slow_rank_parse(params_str(p, P_debug_slow_rank), P, tc, err, errlen))
        return -1;
    return rank_step_parse("debug.hang_rank", params_str(p, P_debug_hang_rank), P,
                           &tc->hang_rank, &tc->hang_step, err, errlen) ||
                   rank_step_parse("debug.signal_rank", params_str(p, P_debug_signal_rank), P,
                                   &tc->signal_rank, &tc->signal_step, err, errlen)
               ? -1
               : 0;
}
