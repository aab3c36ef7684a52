/* ctx_split: the key/value exchange of context-parallel attention
 * (parallel.split_long; the model side is struct model_split, model.h).
 *
 * A step whose plan cut a sequence into chunks c = 0 .. k - 1 (positions
 * [p0_c, p1_c), on ranks r_c): at every layer, chunk c's keys and values go
 * point-to-point to the ranks of the later chunks c' > c, whose queries
 * attend to them; in the backward, the gradients that chunk c' computed for
 * chunk c's keys and values go back to r_c, which adds them (in chunk
 * order) to its own. Receives are posted before the model computes the
 * attention of the own keys and waited for after it; a sender never waits
 * for its receivers in the forward (its sends complete in the backward). Messages to the same rank are sent too (MPI delivers
 * them locally). Tags name the (sender chunk, receiver chunk, key or value,
 * direction), so matching does not depend on posting order. HSTU's
 * pointwise attention needs no re-normalisation across key blocks: the sum
 * over the blocks is the unsplit output.
 *
 * The exchange copies what it needs from the plan, so the plan slot may be
 * reused while the step runs. The buffers the model hands over are host
 * memory, or a device's (ctx_split_device): then the rows to send and
 * those received are staged through the layer's pinned buffer (async
 * copies on the comm stream, MPI, async uploads the compute stream waits
 * for; one host wait per layer for the rows sent, one for the gradients
 * sent), or with device.staging =
 * direct (CUDA-aware MPI) the device buffers go to MPI themselves (a host
 * wait per layer for the compute stream before the messages are posted);
 * the received gradients are added on the device in the same order. */
#ifndef FS_CTX_SPLIT_H
#define FS_CTX_SPLIT_H

#include "comm/comm.h"
#include "data/batch.h"
#include "model/model.h"
#include "train/planner.h"
#include "train/steptime.h"

struct ctx_split;

/* The exchange of this rank's batch sb (read from plan pl with pieces)
 * for a model of `layers` attention layers; NULL when none of the rank's
 * entries is a chunk of a cut sequence. st (or NULL): the waits are timed
 * as phase kv_wait, cutting the forward and backward phases around them
 * (so the trace shows them). */
struct ctx_split *ctx_split_new(struct comm *c, const struct step_plan *pl,
                                const struct seq_batch *sb, int layers, struct steptime *st);
/* The model batch's segments (offsets [B + 1]: the rows of each piece,
 * the seq_batch's or, with contextual or action tokens, the tokens'),
 * checked against the pieces; before the model runs (x NULL: nothing). */
void ctx_split_rows(struct ctx_split *x, const int64_t *offsets);
/* The staged exchange's pinned host buffers, one per layer, kept across
 * steps (the caller's, for every step's exchange): NULL on a host backend. */
struct ctx_stage;
struct ctx_stage *ctx_stage_new(const struct backend_ops *be, int layers);
void ctx_stage_free(struct ctx_stage *g);
/* The model computes on `be`: on a device backend the buffers it hands
 * to the exchange are device memory (x NULL, or a host backend: nothing);
 * direct: MPI takes device pointers (device_choice.direct); else staged
 * through stage (ctx_stage_new of be). */
void ctx_split_device(struct ctx_split *x, const struct backend_ops *be, int direct,
                      struct ctx_stage *stage);
/* The batch.split of the model for it (valid until ctx_split_free). */
const struct model_split *ctx_split_model(const struct ctx_split *x);
void ctx_split_free(struct ctx_split *x);

#endif
