/* schema: the features of a run, resolved once from the parameters
 * (features.item, features.event, features.user and their settings) and
 * the dataset (doc/training.md, "Features"): for each feature its name, how it enters
 * the model, its table (rows, width, placement, optimizer) and the
 * projection of its rows to the model width. Everything else reads it:
 * the tables are made from it (train.c), the values loaded by it
 * (feat_values.h), the tokens assembled by it (model/tokens.h).
 *
 *   item   /items/NAME: the rows of an item's values, pooled (sum or mean;
 *          0 = missing, no row), added to the item's token and to its
 *          output representation;
 *   event  /events/NAME: the row of the event's value added to its token
 *          (ranking: to its action, enum action_mode);
 *   user   /users/NAME: the pooled rows of the user's values as one
 *          contextual token in front of the sequence, in the order listed;
 *          NAME = id without a /users/id: the user's own row (user index
 *          u has the value u + 1: a table of num_users rows).
 * Categorical features only (a float feature is a label, for ranking).
 *
 * Tables: "feat.NAME" of cardinality - 1 rows (ids 1 .. cardinality - 1)
 * and width features.dim (or its features.dims entry; 0 = model.dim);
 * replicated or sharded per features.placement (auto: replicated up to
 * features.replicate_below values). A width w other than model.dim d
 * adds "proj.NAME", a replicated table of w rows of width d: the
 * projection P, pooled rows times P. Their optimizer and learning rate
 * are features.optimizer and features.lr (same as the item table's by
 * default). */
#ifndef FS_FEATURE_SCHEMA_H
#define FS_FEATURE_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "base/params.h"
#include "data/dataset.h"
#include "backend/emb_optim.h"

enum feat_role { FEAT_ITEM, FEAT_EVENT, FEAT_USER };
/* How the event features enter the sequence: added to their own event's
 * token (retrieval), or as the event's action (ranking, model.actions):
 * summed into the next item's token, or a token of its own after its item. */
enum action_mode { ACT_NONE, ACT_SUM, ACT_INTERLEAVE };
enum feat_placement { FEAT_PLACE_AUTO, FEAT_PLACE_REPLICATED, FEAT_PLACE_SHARDED };

/* The parameters, as read (train_conf.c). */
struct feat_conf {
    const char *item, *event, *user, *dims; /* comma-separated lists */
    const char *dynamic;     /* features.dynamic: names of dynamic tables */
    const char *cross;       /* features.cross: hashed crosses (feat_cross.h) */
    enum feat_placement placement;
    int64_t replicate_below;
    int dim;                 /* 0 = model.dim */
    int mean;                /* pooling = mean (else sum) */
    int optimizer;           /* enum emb_optimizer, or -1 = embedding.optimizer */
    float lr;                /* 0 = embedding.lr */
};

struct feat_spec {
    char name[DATASET_FEATURE_NAME];
    enum feat_role role;
    int df;                  /* index into the dataset's features */
    int multi;
    int64_t rows;            /* table rows: cardinality - 1 */
    int width;               /* table width */
    int replicated;          /* the table's placement */
    int dynamic;             /* features.dynamic: a dynamic (hashed, sharded) table */
    int table, proj;         /* indexes into the run's feature tables (proj: -1 = none) */
    int ctx;                 /* user: its contextual token (0 .. n_user - 1) */
    int user_id;             /* user: the user id (features.user = id), df = -1 */
    int cross;               /* k + 1: hashed cross k (feat_cross.h; an event feature on its
                                own token, df = -1), else 0 */
    int label;               /* 0: a dataset column; k + 1: the label of ranking task k
                                (binary: value 1 negative, 2 positive; regression: 1,
                                weighted by the standardised label); table label.NAME */
};

#define FEAT_MAX_CROSS 16
#define FEAT_CROSS_KEYS 4
/* A key of a hashed cross (features.cross; feat_cross.h). */
enum cross_key { CK_USER, CK_ITEM, CK_HOUR, CK_ITEM_FEATURE, CK_EVENT_FEATURE };
struct feat_cross {
    int nkeys;
    enum cross_key key[FEAT_CROSS_KEYS];
    int df[FEAT_CROSS_KEYS];     /* CK_*_FEATURE: the dataset's feature */
    char text[160];              /* "user*artist", for the log */
};

struct feat_schema {
    int n, n_item, n_event, n_user, ntables;
    int ncross;
    struct feat_cross cross[FEAT_MAX_CROSS];
    struct feat_spec f[DATASET_MAX_FEATURES]; /* items, events, users, then labels */
    int d;                   /* model.dim */
    enum action_mode actions;
    int mean;
    struct emb_optim_conf optim;
    uint64_t seed;
    float init_std;
};

/* Read the parameters into fc. 0, or -1 + err naming the parameter. */
int feat_conf_from_params(const struct params *p, struct feat_conf *fc, char *err,
                          size_t errlen);
static inline int feat_conf_any(const struct feat_conf *fc)
{
    return fc->item[0] || fc->event[0] || fc->user[0] || fc->cross[0];
}
/* Resolve the features of fc against the open dataset ds for model width
 * d: 0, or -1 + err naming the parameter, the file and the feature.
 * emb: the item table's optimizer (the default); G: the emb group size. */
int feat_schema_resolve(struct feat_schema *s, const struct feat_conf *fc, const struct dataset *ds,
                        int d, const struct emb_optim_conf *emb, uint64_t seed, float init_std,
                        char *err, size_t errlen);
/* Ranking: the label of task k (name) as an event feature of the actions
 * (binary: 2 rows, else 1, of width d, replicated); actions: model.actions.
 * After feat_schema_resolve. */
void feat_schema_add_label(struct feat_schema *s, const char *name, int k, int binary);
/* The conf of table k as an embedding table: embedding/emb_feat.h. */
/* Feature name's width: its features.dims entry, else def (-1 + err on a
 * malformed entry); 1 if name is one of the comma-separated list's. */
int feat_width_of(const struct feat_conf *fc, const char *name, int def, char *err,
                  size_t errlen);
int feat_name_listed(const char *list, const char *name);
/* Feature sp (its rows set) as a table of s: its width, replicated or
 * sharded, dynamic, its table and projection numbers; -1 + err on a bad
 * features.dims or features.dynamic entry. */
int feat_spec_table(struct feat_schema *s, const struct feat_conf *fc, struct feat_spec *sp,
                    const char *name, char *err, size_t errlen);
/* One line per feature for the log: "items/genres: multi-valued, 19 rows x 50, replicated". */
void feat_schema_describe(const struct feat_schema *s, int i, char *buf, size_t len);

#endif
