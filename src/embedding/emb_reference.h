/* emb_reference: the unsharded reference of an embedding table, for tests
 * and 'bench exchange --check'. Every row is held here, so it is only for
 * sizes that fit one rank. Same initial values and same row-wise optimizer
 * as the sharded table; gradients are summed per id in token order
 * (in double). */
#ifndef FS_EMB_REFERENCE_H
#define FS_EMB_REFERENCE_H

#include <stdint.h>

#include "embedding/emb_table.h"

struct emb_ref {
    struct emb_table_conf conf;
    int64_t state_floats;
    float *w;        /* [rows + 1, dim], row id at w + id * dim */
    float *state;    /* [rows + 1, state_floats] */
    int64_t *steps;  /* [rows + 1] adam */
};

void emb_ref_init(struct emb_ref *r, const struct emb_table_conf *conf);
void emb_ref_free(struct emb_ref *r);
/* out: [n, dim] */
void emb_ref_lookup(const struct emb_ref *r, const int64_t *ids, int64_t n, float *out);
/* Sum grad[n, dim] per id in token order, then update each touched row. */
void emb_ref_update(struct emb_ref *r, const int64_t *ids, int64_t n, const float *grad);

#endif
