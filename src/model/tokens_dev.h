/* tokens_dev: the token assembly of tokens.h on a device backend: the
 * same rows moved and added in the same order by the backend's index_rows
 * (backend.h), so that a device gives the host functions' bits (the fake
 * device: tolerance 0). The plan and the features' pooled rows are made on
 * the host (tokens.c, next to the host feature tables); tokens_dev_load
 * puts a step's index arrays and the event and user features' rows in the
 * device's memory (mirrors kept across steps), the rest computes there:
 *
 *   tokens_dev_inputs      tokens_inputs     x [Tx, d] from emb [T, d]
 *   tokens_dev_outputs     tokens_outputs    out_ev [T, d] from out_x
 *   tokens_dev_dout        tokens_dout       du_x [Tx, d] from du_ev
 *   tokens_dev_inputs_bwd  tokens_inputs_bwd demb [T, d] from dx, and the
 *                          event and user features' dout brought back to
 *                          the host (their pooling's backward runs there)
 *
 * Every buffer argument is in the backend's memory. Without candidates
 * (training; the backward refuses them: their actions' gradients would
 * add several rows into one). */
#ifndef FS_MODEL_TOKENS_DEV_H
#define FS_MODEL_TOKENS_DEV_H

#include "backend/mirror.h"
#include "backend/stage.h"
#include "model/tokens.h"

struct tokens_dev {
    const struct backend_ops *be;
    struct mirror xrow, xact, aprev, act, tmp, tmpu;
    struct mirror ctxrow[DATASET_MAX_FEATURES], out[DATASET_MAX_FEATURES];
    int64_t *hctx;       /* host: a user feature's rows among the Tx */
    int64_t hctx_cap;
    struct stage *st;    /* the uploads' pinned ring (no host wait) */
    float *hg;           /* host: the features' gradients of the backward, downloaded at once */
    int64_t hg_cap;      /* its floats */
    int64_t nf;          /* floats of them the last backward left in tmpu */
    int ev;              /* ... of which the event features' [Te, d] first */
};

/* Upload tk's index arrays and its event and user features' rows (after
 * tokens_features_fwd) to be's memory, through a pinned ring: no host
 * wait (once a step: the previous step's operations have run). */
void tokens_dev_load(struct tokens_dev *D, const struct backend_ops *be, const struct tokens *tk);
void tokens_dev_inputs(struct tokens_dev *D, const struct tokens *tk, const float *emb, float *x);
void tokens_dev_outputs(struct tokens_dev *D, const struct tokens *tk, const float *out_x,
                        float *out_ev);
void tokens_dev_dout(struct tokens_dev *D, const struct tokens *tk, const float *du_ev,
                     float *du_x);
/* The backward of the assembly: demb [T, d] from dx [Tx, d]; the event
 * and user features' gradients left in device memory (room for extra
 * more floats after them) until tokens_dev_grads brings them to tk's
 * douts: one host wait, which may carry extra [nextra] floats of device
 * memory into hextra (the item features' d rep: step_feat.c). */
void tokens_dev_inputs_bwd(struct tokens_dev *D, struct tokens *tk, const float *dx,
                           float *demb, int64_t extra);
void tokens_dev_grads(struct tokens_dev *D, struct tokens *tk, const float *extra, int64_t nextra,
                      float *hextra);
void tokens_dev_free(struct tokens_dev *D);

#endif
