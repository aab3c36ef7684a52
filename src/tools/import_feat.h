/* import_feat: the features 'freescale data import' keeps: categorical
 * value dictionaries (string values -> dense ids 1..K, 0 = missing, the
 * strings kept as the feature's map), per-event columns of the input, and
 * per-user / per-item features from side files (import_side.c: generic
 * csv joined by key; import_ml.c: the MovieLens movie and user files). */
#ifndef FS_IMPORT_FEAT_H
#define FS_IMPORT_FEAT_H

#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"
#include "tools/import_ids.h"

/* Categorical values seen, interned in order of appearance; after
 * import_vocab_finish each has a dense id 1..K in ascending order of the
 * value (numeric when every value is an integer, else bytewise). */
struct import_vocab {
    struct import_ids ids;   /* string mode */
    int32_t *dense;          /* [ids.n] after finish */
    int32_t *order;          /* [ids.n] interned index of dense id k + 1 */
    int numeric;             /* every value an integer: ordered numerically */
};

void import_vocab_init(struct import_vocab *v);
void import_vocab_free(struct import_vocab *v);
/* The interned index of value s[0 .. len) (len > 0). */
int32_t import_vocab_add(struct import_vocab *v, const char *s, size_t len);
void import_vocab_finish(struct import_vocab *v);
/* Its strings in dense order as the map of feature kind/name; 0 or -1 + err. */
int import_vocab_write_map(const struct import_vocab *v, struct dataset_writer *w,
                           enum dataset_feat_kind kind, const char *name, char *err,
                           size_t errlen);
/* Cardinality after finish: K + 1 (id 0 = missing). */
static inline int64_t import_vocab_card(const struct import_vocab *v) { return v->ids.n + 1; }

/* A feature of users or items ready to write: n entities (dense order),
 * single-valued (off NULL) or CSR (off [n + 1]); categorical ids (dense,
 * 0 = missing) in ints, or floats. */
struct import_feature {
    char name[DATASET_FEATURE_NAME];
    enum dataset_feat_kind kind;
    int is_float;
    int64_t n;
    int64_t *off;             /* [n + 1] or NULL */
    int32_t *ints;            /* [off ? off[n] : n] */
    float *floats;            /* [n] */
    struct import_vocab vocab;/* categorical: the values' strings */
    /* while the values are collected (import_feature_begin .. finish) */
    int multi;
    int32_t *stage;           /* single: [n] interned index, -1 = missing */
    int64_t np, pcap, *pe;    /* multi: np (entity, interned value) pairs */
    int32_t *pv;
};

/* A list of features of one kind. */
struct import_features {
    int n;
    struct import_feature f[DATASET_MAX_FEATURES];
};

/* A new feature of the list (name checked: 1..47 of A-Za-z0-9_-.; a
 * duplicate name ends the program, naming `where`). */
struct import_feature *import_features_add(struct import_features *l, enum dataset_feat_kind kind,
                                           const char *name, int is_float, const char *where);
void import_features_free(struct import_features *l);

/* Collect the values of feature f for n entities (single or multi):
 * categorical values as text (empty = missing: nothing stored), floats as
 * numbers (entities without one get 0); finish turns them into dense ids
 * (CSR of a multi-valued one, each entity's values in the order given). */
void import_feature_begin(struct import_feature *f, int64_t n, int multi);
void import_feature_text(struct import_feature *f, int64_t entity, const char *s, size_t len);
void import_feature_float(struct import_feature *f, int64_t entity, float v);
void import_feature_finish(struct import_feature *f);
/* Write every feature and its value map; 0 or -1 + err. */
int import_features_write(const struct import_features *l, struct dataset_writer *w, char *err,
                          size_t errlen);

/* --- per-event columns ------------------------------------------------------ */

/* One column of the events' input kept as an event feature: the values of
 * the events read, in file order. */
struct import_evfeat {
    char name[DATASET_FEATURE_NAME];
    int is_float;
    struct import_vocab vocab;  /* categorical */
    int32_t *k;                 /* [events] interned index, -1 = missing */
    float *v;                   /* [events] float values */
};

/* Is s[0 .. len) a valid feature name? */
int import_feat_name_ok(const char *s, size_t len);

#endif
