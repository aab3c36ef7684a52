/* backend_check: the capability refusals of a run, one rule each; see
 * backend_check.h. */
#include "train/backend_check.h"

#include <stdio.h>
#include <string.h>

#include "base/log.h"

static int refuse(char *err, size_t errlen, const char *asked, const char *why, const char *use)
{
    return errorf(err, errlen, "%s: %s; use %s", asked, why, use);
}

static int has_ctx_attn(const struct backend_ops *be, const struct train_conf *cf)
{
    return cf->model.type == MODEL_HSTU ? be->hstu_attn_ctx_fwd != NULL
                                        : be->sasrec_attn_ctx_fwd != NULL;
}

/* train.exact_sums = on: the paths whose sums are exact (model_exact.c,
 * model/loss_exact.c, embedding/emb_exact.c); the others refused. */
static int exact_check(const struct backend_ops *be, const struct train_conf *cf, char *err,
                       size_t errlen)
{
    const char *asked = "train.exact_sums = on", *off = "train.exact_sums = off";
    char what[300];
    const int ranking = cf->task.type == TASK_RANKING;
    if (!cf->exact_sums)
        return 0;
    if (!backend_is_host(be) || strcmp(be->name, "cpu"))
        return refuse(err, errlen, asked, "exact sums run on the CPU backend alone",
                      "device.type = cpu, or train.exact_sums = off");
    const struct feat_conf *fc = &cf->features;
    const char *no = fc->item[0]                         ? "features.item"
                     : fc->dim > 0 || fc->dims[0]        ? "features.dim or features.dims"
                     : cf->task.bias                     ? "model.bias = on"
                     : cf->task.recency > 0              ? "model.recency"
                     : cf->task.factors > 0              ? "model.factors"
                     : !ranking && cf->loss == LOSS_FULL ? "train.loss = full"
                     : cf->split_long.on                 ? "parallel.split_long = auto"
                     : cf->grads_codec != EMB_CODEC_FP32 ? "parallel.grads_codec (not fp32)"
                     : cf->subspace_k > 0                ? "embedding.subspace_k"
                     : cf->embedding_group != 0          ? "parallel.embedding_group (not 0)"
                                                         : NULL;
    if (!no)
        return 0;
    snprintf(what, sizeof what, "%s with %s", asked, no);
    return refuse(err, errlen, what,
                  "exact sums cover HSTU and SASRec, retrieval (sampled softmax or BCE) and "
                  "ranking (its head, without model.bias, recency or factors), dense or "
                  "dynamic tables, event and user features without projections; not item "
                  "features, split_long, gradient codecs, a subspace or embedding groups",
                  off);
}

int backend_check(const struct backend_ops *be, const struct train_conf *cf, char *err,
                  size_t errlen)
{
    const int host = backend_is_host(be), ranking = cf->task.type == TASK_RANKING;
    char asked[256], why[256];
    snprintf(why, sizeof why, "the %s backend has no ", be->name);
    const size_t w = strlen(why);
#define LACKS(what) (snprintf(why + w, sizeof why - w, "%s", what), why)
    /* the device data flow */
    if (cf->staging_direct && host && !strcmp(cf->device_type, "cpu"))
        return refuse(err, errlen, "device.staging = direct", LACKS("device buffers"),
                      "device.type = cuda or fake, or device.staging = host or auto");
    if (cf->placement == PLACE_DEVICE && host)
        return refuse(err, errlen, "embedding.placement = device", LACKS("device memory"),
                      "device.type = cuda (or auto with a GPU) or fake, or "
                      "embedding.placement = host or auto");
    if ((cf->cache_rows > 0 || cf->cache_frac > 0) && host)
        return refuse(err, errlen, "embedding.cache", LACKS("device memory"),
                      "device.type = cuda (or auto with a GPU) or fake, or embedding.cache = 0");
    const char *tp = cf->transport;
    if ((!strcmp(tp, "copy-engine") || !strcmp(tp, "kernel")) && !backend_has_ipc(be)) {
        snprintf(asked, sizeof asked, "parallel.transport = %s", tp);
        return refuse(err, errlen, asked, LACKS("CUDA IPC"), "parallel.transport = mpi or auto");
    }
    if (cf->placement == PLACE_DEVICE && cf->subspace_k > 0) {
        snprintf(asked, sizeof asked, "embedding.subspace_k = %d with embedding.placement = device",
                 cf->subspace_k);
        return refuse(err, errlen, asked,
                      "a subspace table's rows F(i) + U c[i] are rebuilt and its gradients "
                      "projected on the host (emb_subspace.c)",
                      "embedding.placement = host or auto, or embedding.subspace_k = 0");
    }
    if (cf->precision == PRECISION_BF16 && !be->gemm_bf16)
        return refuse(err, errlen, "device.precision = bf16", LACKS("bf16 GEMM"),
                      "device.precision = fp32 or tf32");
    /* the losses */
    if (!ranking && cf->loss == LOSS_FULL && !(be->softmax_block_lse && be->softmax_block_grad))
        return refuse(err, errlen, "train.loss = full", LACKS("full softmax"), "device.type = cpu");
    if (!ranking && cf->negatives_from != NEG_UNIFORM && !be->softmax_loss_q) {
        snprintf(asked, sizeof asked, "train.negatives_from = %s",
                 cf->negatives_from == NEG_MIXED ? "mixed" : "in_batch");
        return refuse(err, errlen, asked, LACKS("logQ-corrected softmax"),
                      "device.type = cpu, or train.negatives_from = uniform");
    }
    /* the models' context-parallel attention */
    if (cf->split_long.on && !has_ctx_attn(be, cf))
        return refuse(err, errlen, "parallel.split_long = auto",
                      LACKS("context-parallel attention"), "device.type = cpu");
    if (ranking && (cf->final_eval || cf->eval_every > 0) && !has_ctx_attn(be, cf))
        return refuse(err, errlen, "train.task = ranking",
                      LACKS("context-parallel attention, which the evaluation's target mask "
                            "needs (each candidate attends to its history and itself)"),
                      "train.final_eval = off and train.eval_every = 0 (training alone), or "
                      "device.type = cpu (doc/gpu.md)");
    if (cf->model.last_targets && !be->hstu_attn_rows_fwd)
        return refuse(err, errlen, "model.last_layer = targets",
                      LACKS("attention over some query rows"),
                      "model.last_layer = full, or device.type = cpu or fake");
#undef LACKS
    return exact_check(be, cf, err, errlen);
}

int backend_check_cache(const struct train_conf *cf, char *err, size_t errlen)
{
    if (cf->cache_rows == 0 && cf->cache_frac == 0)
        return 0;
    const char *no = cf->subspace_k > 0                   ? "embedding.subspace_k"
                     : cf->embedding_group != 0           ? "parallel.embedding_group (not 0)"
                     : cf->features.dynamic && cf->features.dynamic[0]
                         ? "features.dynamic"
                     : cf->task.type != TASK_RANKING && cf->loss == LOSS_FULL
                         ? "train.loss = full"
                         : NULL;
    if (no)
        return errorf(err, errlen,
                      "embedding.cache = %s with %s: the cache covers plain tables, the "
                      "item table (dense or dynamic) and the sharded feature tables (not "
                      "dynamic feature tables, subspace tables, embedding groups or the full "
                      "softmax, which reads the whole shard); use embedding.cache = 0",
                      cf->cache, no);
    if (cf->placement == PLACE_DEVICE)
        return errorf(err, errlen,
                      "embedding.cache = %s: the cache is over a host-placed table; set "
                      "embedding.placement = host (or auto: device when the whole shard fits, "
                      "else the cache); device placement holds the whole shard on the device",
                      cf->cache);
    return 0;
}
