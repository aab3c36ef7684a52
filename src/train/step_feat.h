/* step_feat: the features of a run on the trainer's side (schema.h,
 * feat_values.h, model/tokens.h, embedding/emb_multi.h put together):
 * set-up, one training step's feature lookup and backward, and the inputs
 * and item representations of evaluation, recommend and export. A step
 * always goes through here: without features (tr->feat NULL) its plan is
 * the identity layout (no tables, the representations are the item rows,
 * the model's tokens the events), where every step function is a no-op.
 *
 * In a step (train_step.c):
 *   read     step_feat_read: the plan (the item exchange's unique ids, the
 *            batch's events and users), the lookup of every feature table
 *            posted (one exchange for the sharded ones)
 *   lookup   step_feat_lookup: the rows (read after the previous step's
 *            update), the features' forward; step_feat_items per chunk of
 *            item rows: rep = row + item features, into step_feat_rep
 *   forward  the model on the tokens (tokens.h: contextual tokens, event
 *            features), the loss against rep
 *   backward step_feat_backward_inputs from the model's input gradient;
 *            step_feat_update: the item features' part from d rep, every
 *            table's gradient, summed and applied (collective). */
#ifndef FS_STEP_FEAT_H
#define FS_STEP_FEAT_H

#include <stdint.h>

#include "embedding/emb_exchange.h"
#include "embedding/emb_multi.h"
#include "feature/feat_values.h"
#include "feature/schema.h"
#include "model/tokens.h"
#include "model/tokens_dev.h"

struct trainer;
struct stage;

/* The run's features (tr->feat). */
struct train_feat {
    struct feat_schema s;
    struct feat_values v;
    struct emb_table *tab[TOKENS_MAX_TABLES]; /* the schema's tables, in its order */
    struct tokens_dev dev; /* a device backend's buffers of the token assembly */
    int on_device;         /* the model computes on a device: the assembly's device form
                              (tokens_dev.h), else the host's (tokens.h); set once */
    /* a device item table (embedding.placement = device): the step's
     * representations made in its memory (step_feat_items) */
    const struct backend_ops *dbe; /* that device, once used, else NULL */
    struct stage *st;      /* the item features' outputs staged up */
    float *drep, *dfeat;   /* [nuniq, d] representations; [item features, nuniq, d] */
    size_t drep_cap;       /* drep's bytes */
};

/* Resolve the features of tr->conf.features against the dataset, refuse
 * what cannot run, load the values; model.max_len gains the contextual
 * tokens. Sets tr->feat (NULL without features). Before the model is
 * built. */
void step_feat_setup(struct trainer *tr);
/* Window files: tr->ds is a new window's dataset (its item list grown,
 * its users the window's): the item and user features' values read again
 * from it. 0, or -1 + err naming the file. */
int step_feat_window(struct trainer *tr, char *err, size_t errlen);
/* Add the feature tables to tr->reg (after the item table). */
void step_feat_tables(struct trainer *tr);
/* The bytes a rank's shards of the feature tables hold with their
 * optimizer state over G shards (a replicated table: whole; a dynamic
 * one: its pool grown to its share of embedding.capacity, -1 without a
 * capacity: no bound), for embedding.placement = auto (placement.c); 0
 * without features. */
double step_feat_table_bytes(const struct trainer *tr, int G);
void step_feat_teardown(struct trainer *tr);

/* --- one training step ---------------------------------------------------- */

struct step_feat;
/* The plan of a step's input sb whose item lookup is x (every rank, every
 * step; x outlives it), its feature lookups posted. */
struct step_feat *step_feat_read(struct trainer *tr, const struct seq_batch *sb,
                                 const struct emb_exchange *x);
void step_feat_lookup(struct step_feat *sf);
/* The item representations [nuniq, d] (the item table's memory): the
 * loss's rows. */
const float *step_feat_rep(struct step_feat *sf);
/* rep = rows + item features for chunk k of the item exchange's rows. */
void step_feat_items(struct step_feat *sf, const struct emb_exchange *x, int k);
/* The model's tokens of a step of T event tokens (T + the contextual and
 * action tokens), and its batch mb over them from the events' b (tokens.h;
 * mb = b in the identity layout). */
int64_t step_feat_Tx(const struct step_feat *sf, int64_t T);
void step_feat_model_batch(struct step_feat *sf, const struct batch *b, struct batch *mb);
/* The token assembly in the model's memory (tokens.h; on a device,
 * tokens_dev.h): x [Tx, d] from the inputs' representations emb [T, d]
 * (x may be emb when Tx = T), the event tokens' outputs out_ev [T, d] from
 * the model's out_x [Tx, d], and du_x [Tx, d] from du_ev [T, d]. */
void step_feat_assemble(struct step_feat *sf, const float *emb, float *x);
void step_feat_outputs(struct step_feat *sf, const float *out_x, float *out_ev);
void step_feat_dout(struct step_feat *sf, const float *du_ev, float *du_x);
/* The model's input gradient dx [Tx, d] -> demb [T, d] (may be dx without
 * contextual tokens). */
void step_feat_backward_inputs(struct step_feat *sf, const float *dx, float *demb);
/* drep [nuniq, d]: the gradient of the item representations; every
 * feature table's gradient summed and applied. Collective. */
void step_feat_update(struct step_feat *sf, const float *drep);
void step_feat_progress(struct step_feat *sf);
void step_feat_free(struct step_feat *sf);

/* --- evaluation, recommend, export ---------------------------------------- */

/* The model input of batch b (no dropout) from its tokens' item rows emb
 * [T, d]: item, event and user features, contextual tokens; *x [Tx, d]
 * (heap) and the model batch mb (valid until the returned plan is freed
 * with tokens_free + free). Collective (the lookups). */
struct tokens *step_feat_inputs(struct trainer *tr, const struct seq_batch *b, const float *emb,
                                const struct batch *eb, struct batch *mb, float **x);
/* rows [n, d] of items ids[n] += their item features (the representation
 * the loss and the ranking score). Collective over the tables' groups. */
void step_feat_item_rows(struct trainer *tr, const int64_t *ids, int64_t n, float *rows);

#endif
