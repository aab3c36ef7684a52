/* emb_exact: a table's row gradients as exact sums (train.exact_sums;
 * base/exact.h). The requester adds each token's contribution to its
 * unique row's accumulator (emb_exact_add_rows; the loss's per token, the
 * inputs' scatter), so a row's sum over the tokens of a rank has the same
 * limbs whatever else the rank holds; the accumulators travel to the
 * owners packed (exact_pack: EXACT_LIMBS 32-bit digits a value, 5x fp32's
 * bytes), which add them as integers and round once (emb_backward.c). Host
 * tables only. */
#ifndef FS_EMB_EXACT_H
#define FS_EMB_EXACT_H

#include <stdint.h>

#include "embedding/emb_exchange.h"

/* The accumulators [nuniq, dim][EXACT_LIMBS] of this use of the exchange,
 * zeroed at the first call; NULL when the table's sums are not exact.
 * *bad (may be NULL) gets the counter of contributions out of range. */
int64_t *emb_exchange_exact(struct emb_exchange *x, int64_t **bad);
/* x[idx[t]] += g[t] for the n rows of dim (idx < the accumulators' rows). */
void emb_exact_add_rows(int64_t *x, int dim, int64_t n, const float *g, const int64_t *idx,
                        int64_t *bad);
/* emb_exchange_grads (floats) := the accumulators' values: the local sums,
 * for the divergence guard. */
void emb_exact_local(struct emb_exchange *x);
/* The owner's sum of n received packed accumulators ws [n, dim][EXACT_LIMBS] by
 * keys[n]: uid [n] the distinct keys ascending, then -1 (as emb_sum_by_id),
 * out [k, dim] their values; sums [k, dim][EXACT_LIMBS] (may be NULL) their
 * limbs. Returns k. */
int64_t emb_exact_sum_by_id(int64_t n, int dim, const int64_t *keys, const uint32_t *ws,
                            int64_t *uid, float *out, int64_t *sums);

#endif
