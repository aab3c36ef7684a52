/* cost: the predicted cost of one training sequence, c(L) = c0 + a L + b L^2
 * (struct cost_model in balance.h), for the balancer and the planner.
 *
 * parallel.cost_model is either "c0,a,b" (three finite numbers >= 0, not
 * all 0; any unit, only ratios matter: 'freescale calibrate' prints
 * microseconds per sequence) or "auto": the FLOP count of one sequence's
 * forward and backward from the model configuration (cost_model_auto).
 *
 * The FLOP model (L tokens, d = model.dim, layers, H = heads, R =
 * train.negatives; a causal sequence has L (L + 1) / 2 attention pairs):
 *   per token, forward:
 *     dense   HSTU   2 d (4d) (uvqk) + 2 d d (o)                = 10 d^2
 *             SASRec 4 x 2 d d (q, k, v, out) + 2 x 2 d d (ffn) = 12 d^2
 *     elementwise (LayerNorms, SiLU/ReLU, dropout, residual)     ~ 40 d
 *     per layer; once per token, the input layer and output norm ~ 10 d;
 *     loss    sampled softmax 2 d (R + 1) (+ ~6 (R + 1) for the logsumexp),
 *             BCE 2 d 2.
 *   per attention pair and layer, forward: 2 d (q.k) + 2 d (A v) = 4 d,
 *     plus ~8 per head (bias, SiLU or softmax, scale).
 *   backward = 2 x forward for the dense, elementwise and loss work (3 x in
 *     all); the attention backward recomputes the scores and forms dq, dk,
 *     dv and dA (~12 d per pair against 4 d), so attention counts 4 x.
 * So with f_tok = 3 (layers (W d^2 + 40 d) + 10 d + loss) and f_pair =
 * 4 layers (4 d + 8 H):
 *   c(L) = c0 + f_tok L + f_pair L (L + 1) / 2
 *   => a = f_tok + f_pair / 2,  b = f_pair / 2,  c0 = f_tok
 * (c0, the per-sequence overhead, is guessed as one token's work; calibrate
 * measures it). Unit: FLOPs per sequence. */
#ifndef FS_COST_H
#define FS_COST_H

#include <stddef.h>

#include "balance/balance.h"
#include "model/model.h"

struct params;

/* "c0,a,b" -> m. Returns 0, or -1 with err naming parallel.cost_model. */
int cost_model_parse(const char *text, struct cost_model *m, char *err, size_t errlen);

/* The FLOP count of a step's model work, forward and backward, from the
 * model above: per_token FLOPs (f_tok) for each token and per_pair (f_pair)
 * for each causal attention pair (a sequence of L tokens has L (L + 1) / 2).
 * The trainer reports achieved FLOP/s and MFU with it (doc/training.md). */
struct flop_model {
    double per_token, per_pair;
};

/* The FLOP-count model above. conf: type, d, layers, heads are used;
 * negatives = R (ignored when bce). */
void cost_flops_auto(const struct model_conf *conf, int negatives, int bce, struct flop_model *f);
void cost_model_auto(const struct model_conf *conf, int negatives, int bce,
                     struct cost_model *m);

/* The model of a parameter set: parallel.cost_model, or the FLOP counts of
 * model.* and train.negatives/loss when it is "auto". Returns 0, or -1 with
 * err naming parallel.cost_model. *is_auto (may be NULL) tells which. */
int cost_model_from_params(const struct params *p, struct cost_model *m, int *is_auto,
                           char *err, size_t errlen);

/* The model_conf that the trainer builds from p (time_bias from
 * data.timestamps alone: the dataset may not have timestamps). */
void cost_model_conf(const struct params *p, struct model_conf *conf);

/* The split_long configuration (split_long.h) of a parameter set, with cm
 * its cost model: parallel.split_long, split_threshold, split_fraction,
 * split_kv_cost (auto: 160 d layers FLOPs per row, 16 d bytes per layer
 * at 10 FLOPs per byte, scaled by a / a_auto when the cost model is not
 * the FLOP count), debug.split_chunks; min_chunk = HSTU_TILE. Returns 0,
 * or -1 with err naming the parameter. */
struct split_conf;
int split_conf_from_params(const struct params *p, const struct cost_model *cm,
                           struct split_conf *sc, char *err, size_t errlen);

/* "c0=..., a=..., b=..." (%.6g), for reports. */
void cost_model_format(const struct cost_model *m, char *buf, size_t len);

#endif
