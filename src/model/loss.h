/* loss: the training losses against the tied item table, with their
 * gradients (doc/architecture.md, "One step"), and the keyed negative sampler.
 *
 * The trainer looks up the UNIQUE item ids of a step once; a loss gets
 * rows: [nu, d] (raw table rows of those ids) and, per position, indexes
 * into rows. Every position with a next item is supervised; pos[i] < 0 marks
 * a position without one (no loss, du row = 0). Losses and gradients are
 * normalised by the GLOBAL number of supervised positions N (all ranks): the
 * caller passes scale = 1 / N, the gradients are those of scale * sum_i
 * loss_i, and the functions return the UNSCALED sum of the per-position
 * losses (double, to be all-reduced) and the local count of supervised
 * positions in *count.
 *
 * du is written; drows is ACCUMULATED (+=), as the rows of one step may
 * receive gradient from several places (history tokens, targets, negatives).
 * Positions are independent; nothing of size [T, R, d] is built: scores are
 * dot products against the (normalised) unique rows, gradients are
 * scatter-added into the unique rows and taken through the normalisation
 * once per unique row.
 *
 * Pointers are backend memory: the functions normalise the rows and
 * dispatch to the backend's softmax_loss and bce_loss operations (the CPU
 * reference in backend/backend_cpu_loss.c, the CUDA kernels in
 * cuda/loss.cu). */
#ifndef FS_LOSS_H
#define FS_LOSS_H

#include <stdint.h>

#include "backend/backend.h"

/* Item rows are L2-normalised as row / max(|row|, ITEM_NORM_EPS) wherever
 * they are (training loss, evaluation): one constant for both. */
#define ITEM_NORM_EPS 1e-6f

/* Negatives: neg_ids[T * R], uniform in 1 .. num_items. The R draws of
 * position i come from a stream keyed by (seed, epoch, pos_keys[i]) alone,
 * pos_keys: [T] given by the caller (it encodes the sample index and the
 * position), so they do not depend on the rank, the batch split or on which
 * other positions are in the call. Draws may repeat and may hit the
 * positive (the losses mask that case). */
void loss_sample_negatives(uint64_t seed, uint64_t epoch, const uint64_t *pos_keys, int64_t T,
                           int R, int64_t num_items, int64_t *neg_ids);

/* Sampled softmax (HSTU: R = 128, tau = 0.05).
 *   u: [T, d] user vectors (model output, used as given; HSTU's are already
 *      L2-normalised by the model);
 *   rows: [nu, d] raw item rows; e = rows / max(||rows||, 1e-6) when
 *      normalize_items, else e = rows;
 *   pos: [T] index into rows, or < 0 (unsupervised);
 *   neg: [T, R] indexes into rows; a negative equal to its position's pos
 *      (the sampler drew the positive) or < 0 is masked out of the softmax.
 * s_0 = u_i . e_pos / tau, s_r = u_i . e_neg[i, r] / tau,
 * loss_i = logsumexp(s_0, unmasked s_r) - s_0.
 * Writes du: [T, d], accumulates drows: [nu, d] (gradient w.r.t. the RAW
 * rows, through the normalisation). Returns sum_i loss_i (unscaled). */
double loss_sampled_softmax(const struct backend_ops *be, int64_t T, int d, int R, float tau,
                            int normalize_items, const float *u, int64_t nu, const float *rows,
                            const int64_t *pos, const int64_t *neg, float scale, float *du,
                            float *drows, int64_t *count);

/* The buffers of the normalisation, kept across calls (a training step
 * allocates nothing): zero-initialise, loss_ws_free at the end. */
struct loss_ws {
    const struct backend_ops *be;
    float *en, *norms, *de, *dx; /* [cap, d] x 3 and [cap] */
    int64_t cap, d;
};
void loss_ws_free(struct loss_ws *ws);

/* loss_sampled_softmax as the training step calls it: the loss sum and the
 * count of supervised positions ADDED to acc[0], acc[1] (2 doubles of
 * backend memory, read when the caller wants them: no host wait here), the
 * normalisation's buffers from ws. logq: [nu] (backend memory, NULL = none)
 * subtracted from the logit of every candidate, the positive included:
 * s_0 = u_i . e_pos / tau - logq[pos], s_r likewise (sampled softmax with
 * the logQ correction, as TensorFlow's sampled_softmax_loss with
 * subtract_log_q; be->softmax_loss_q, which train/backend_check.c makes
 * sure of). shared: the negatives are shared by runs of positions
 * (train.shared_negatives): be->softmax_loss_shared's GEMM form where the
 * backend has it (the same losses up to the order of the sums), else
 * softmax_loss's per position. */
void loss_sampled_softmax_acc(const struct backend_ops *be, struct loss_ws *ws, int shared,
                              int64_t T, int d, int R, float tau, int normalize_items,
                              const float *u, int64_t nu, const float *rows, const float *logq,
                              const int64_t *pos, const int64_t *neg, float scale, float *du,
                              float *drows, double *acc);

/* In-batch negatives (train.negatives_from = in_batch | mixed). The
 * population is the global batch's targets, one entry per supervised
 * position of every rank, sorted ascending (loss_batch_targets_sort): a
 * multiset that does not depend on the rank count. Columns r0 .. R - 1 of
 * neg_ids[T, R] are drawn from it uniformly (an item with c entries has
 * probability c / n), position i from a stream keyed by (seed, epoch,
 * pos_keys[i]) and a site of its own. */
void loss_batch_targets_sort(int64_t *targets, int64_t n);
void loss_sample_in_batch(uint64_t seed, uint64_t epoch, const uint64_t *pos_keys, int64_t T,
                          int R, int r0, const int64_t *batch, int64_t n, int64_t *neg_ids);
/* The logQ correction of item id when Ru of the R negatives are uniform
 * over num_items (I) and R - Ru are in-batch from batch[n]:
 *   log(I q(id)),  q(id) = (Ru / R) / I + ((R - Ru) / R) c(id) / n,
 * c(id) = the entries of id in batch. Relative to the uniform proposal, so
 * Ru = R gives 0: the uncorrected sampled softmax. */
float loss_logq(int64_t id, const int64_t *batch, int64_t n, int R, int Ru, int64_t num_items);

/* Binary cross-entropy with one negative per position (original SASRec):
 * s_pos = u_i . rows[pos[i]], s_neg = u_i . rows[neg[i]] (no normalisation,
 * no temperature), loss_i = -log sigma(s_pos) - log(1 - sigma(s_neg)); the
 * negative term is dropped when neg[i] == pos[i] or neg[i] < 0.
 * u: [T, d], rows: [nu, d], pos, neg: [T]. Same conventions as above. */
double loss_bce(const struct backend_ops *be, int64_t T, int d, const float *u, int64_t nu,
                const float *rows, const int64_t *pos, const int64_t *neg, float scale, float *du,
                float *drows, int64_t *count);
/* loss_bce with the sum and the count added to acc (as above). */
void loss_bce_acc(const struct backend_ops *be, int64_t T, int d, const float *u, int64_t nu,
                  const float *rows, const int64_t *pos, const int64_t *neg, float scale,
                  float *du, float *drows, double *acc);

/* train.exact_sums (base/exact.h): the sampled softmax (bce = 0; logq as
 * loss_sampled_softmax_acc's) or BCE (bce = 1, neg [T]) one sequence at a
 * time (B sequences, offsets [B + 1] over the T positions; shared as
 * loss_sampled_softmax_acc's) with the
 * batch's own kernel; each sequence's contribution to a row's gradient
 * (summed in the kernel's order, the same on any rank) added exactly to
 * xrows [nu, d][EXACT_LIMBS] (out of range: *xbad), its loss to xloss
 * [EXACT_LIMBS + 1] (limbs, then the out of range count); acc [2] gets the
 * local sum and count as the batched call would (host doubles). Host
 * backends. */
void loss_exact_acc(const struct backend_ops *be, struct loss_ws *ws, int bce, int shared,
                    int64_t B, const int64_t *offsets, int d, int R, float tau, int normalize_items,
                    const float *u, int64_t nu, const float *rows, const float *logq,
                    const int64_t *pos, const int64_t *neg, float scale, float *du, double *acc,
                    int64_t *xrows, int64_t *xbad, int64_t *xloss);

#endif
