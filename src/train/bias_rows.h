/* bias_rows: model.bias's tables (bias.item [items, K], bias.user
 * [users, K]; model/task_bias.h) as rows sharded over the ranks of dp and
 * updated sparsely, with the dense AdamW's arithmetic (doc/ranking.md,
 * "Biases").
 *
 * Rows are numbered item i -> i, user u -> items + u; row r belongs to
 * rank r mod P (dp) at slot r / P. The owner holds the row, its Adam
 * moments m, v and the optimizer step the row is at (its stamp). A step
 * exchanges only the rows its tokens touch:
 *   bias_rows_lookup  the tokens' rows (unique, by owner) go to their
 *                     owners, which bring each row up to date and send it
 *                     back (every rank calls it the same number of times)
 *   bias_rows_grads   the requester's gradient per unique row, to fill
 *   bias_rows_push    the gradients go to the owners, summed there over
 *                     the requesters in rank order (or bias_rows_defer:
 *                     when the owners need them)
 *   bias_rows_sumsq   their squared norm over all owners (the clip's)
 *   bias_rows_apply   step t: the owners update the rows touched
 * A row last updated at step s and not touched again is brought up to
 * date (to the current step t) by replaying steps s + 1 .. t with a zero
 * gradient: the per-element operations of the dense update
 * (backend/adamw_elem.h) with each step's learning rate and corrections,
 * kept as a history; so every row holds the bits the dense AdamW over a
 * replicated table would give it (with the gradients summed in another
 * order across ranks). Weight decay is 0, as for the dense tables.
 * Everything that reads the whole tables brings every row up to date
 * first (bias_rows_full, bias_rows_load, bias_rows_set). Host memory; the
 * caller moves the step's rows and gradients to and from its backend. */
#ifndef FS_BIAS_ROWS_H
#define FS_BIAS_ROWS_H

#include <stdint.h>

#include "comm/comm.h"

struct bias_rows;

/* K floats a row, items + users rows, over dp; b1, b2, eps the dense
 * AdamW's. Every row starts at 0 with zero moments, at step t. */
struct bias_rows *bias_rows_init(struct comm *c, int K, int64_t items, int64_t users, float b1,
                                 float b2, float eps, int64_t t);
void bias_rows_free(struct bias_rows *b);
/* Collective over dp: the rows of n tokens' items [n] and users [n] (host;
 * items < the items count, users < the users count, fatal otherwise). Returns
 * the unique rows [*nu, K] (host, valid until the next call) with each
 * token's item row index inv_item [n] and user row index inv_user [n]
 * into them. train: a training step's (its gradients follow with
 * bias_rows_push; without them the lookup only reads). */
const float *bias_rows_lookup(struct bias_rows *b, int64_t n, const int64_t *items,
                              const int64_t *users, int train, const int64_t **inv_item,
                              const int64_t **inv_user, int64_t *nu);
/* The last training lookup's gradients per unique row [nu, K] (host,
 * zeroed by the lookup): the caller adds its tokens' gradients. */
float *bias_rows_grads(struct bias_rows *b);
/* Collective: the gradients to the owners, summed per row. */
void bias_rows_push(struct bias_rows *b);
/* bias_rows_push deferred until the owners need the gradients
 * (bias_rows_sumsq, bias_rows_apply): fetch(arg) first fills
 * bias_rows_grads (a device's, come down meanwhile). A lookup drops a
 * deferred push not made (a step whose update was dropped). */
void bias_rows_defer(struct bias_rows *b, void (*fetch)(void *arg), void *arg);
/* Collective (it makes a deferred push): this rank's summed gradients of
 * the rows it owns [*n floats] (*n = 0: none pushed this step), for the
 * divergence guard (train/guard.h). */
float *bias_rows_owned_grads(struct bias_rows *b, int64_t *n);
/* Collective: the summed gradients' sum of squares over every owner. */
double bias_rows_sumsq(struct bias_rows *b);
/* Step t (the dense optimizer's count, after its increment): the rows of
 * the last pushed gradients (each times scale when scaled: the clip's)
 * updated at learning rate lr; every other row catches up later. */
void bias_rows_apply(struct bias_rows *b, int scaled, float scale, float lr, int64_t t);
/* Collective: the whole tables, part 0 the values, 1 the first moments, 2
 * the second: item [items, K], user [users, K] on every rank (all_ranks)
 * or on rank 0 of dp alone (the others pass NULL). */
void bias_rows_full(struct bias_rows *b, int part, int all_ranks, float *item, float *user);
/* Take this rank's rows of part from the whole tables (every rank passes
 * the same); the rows are at the current step. */
void bias_rows_load(struct bias_rows *b, int part, const float *item, const float *user);
/* The values from the whole tables (the moments kept: bias_rows_load of
 * part 0 after bringing every row up to date). */
void bias_rows_set(struct bias_rows *b, const float *item, const float *user);
/* The step the rows are at (a checkpoint's restore: every row). */
void bias_rows_restart(struct bias_rows *b, int64_t t);
/* The hooks through which the ranking task reaches the rows
 * (model/task_bias.h; h kept by the caller). */
struct rank_bias_rows;
void bias_rows_hooks(struct bias_rows *b, struct rank_bias_rows *h);
/* Window files (train/bias_ids.h): the tokens' items and users are a
 * window dataset's numbers, the rows imap[item] (item < ni) and
 * umap[user] (user < nu); kept by the caller until the next call. NULL
 * maps: the numbers are the rows. */
void bias_rows_map(struct bias_rows *b, const int64_t *imap, int64_t ni, const int64_t *umap,
                   int64_t nu);
/* Bytes this rank sent to other ranks (counts, ids, rows, gradients) and
 * the training lookups since the last call. */
void bias_rows_traffic_take(struct bias_rows *b, int64_t *bytes, int64_t *steps);

#endif
