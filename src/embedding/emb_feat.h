/* emb_feat: the embedding table of a feature (feature/schema.h): a
 * feature's own table or its projection, as an emb_table_conf. */
#ifndef FS_EMB_FEAT_H
#define FS_EMB_FEAT_H

#include "embedding/emb_table.h"
#include "feature/schema.h"

/* The conf of table k (k < s->ntables): name, rows, width, init, optimizer,
 * placement. */
void emb_feat_table(const struct feat_schema *s, int k, struct emb_table_conf *conf);

#endif
