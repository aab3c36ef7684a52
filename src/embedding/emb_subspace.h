/* emb_subspace: subspace-factorised embedding tables (embedding.subspace_k;
 * after "Protocol Models", 2025; doc/compression.md).
 *
 * A row is E[i] = F(i) + U c[i]:
 *   F(i)  [d]     a fixed pseudo-random row, N(0, s^2) from the keyed stream
 *                 (seed, table, id) under a key of its own: regenerated
 *                 wherever it is needed, never stored, never sent;
 *   U     [d, k]  a fixed matrix with orthonormal columns (Gram-Schmidt of a
 *                 Gaussian matrix from the seed, in double): the same on
 *                 every rank;
 *   c[i]  [k]     the stored and trained part (with its optimizer state),
 *                 initialised as the first k values of the plain table's
 *                 initial row.
 * The row exchange carries c[i] (k values) and the requester rebuilds
 * E[i]; the gradient exchange carries U^T g, which is the exact gradient
 * of c[i] (dE/dc = U). The model changes: E moves only within F(i) +
 * span(U); its quality is measured, not assumed. basis = identity (a test
 * hook) makes U the first k unit vectors and F = 0: with k = d the table is
 * the plain one. */
#ifndef FS_EMB_SUBSPACE_H
#define FS_EMB_SUBSPACE_H

#include <stdint.h>

struct emb_table_conf;

struct emb_subspace {
    int k, dim;
    int identity; /* U = I[:, :k], F = 0 */
    float *U;     /* [dim, k] row-major: U[j k + m] */
};

/* The basis of conf (conf->subspace_k, conf->subspace_identity). */
void emb_subspace_init(struct emb_subspace *s, const struct emb_table_conf *conf);
void emb_subspace_free(struct emb_subspace *s);
/* F(id): f[dim]. */
void emb_subspace_f(const struct emb_subspace *s, const struct emb_table_conf *conf, int64_t id,
                    float *f);
/* rows[u] = F(ids[u]) + U c[u]: c [n, k] -> rows [n, dim]. */
void emb_subspace_expand(const struct emb_subspace *s, const struct emb_table_conf *conf,
                         int64_t n, const int64_t *ids, const float *c, float *rows);
/* gk[u] = U^T g[u]: g [n, dim] -> gk [n, k] (sums in double). */
void emb_subspace_project(const struct emb_subspace *s, int64_t n, const float *g, float *gk);

#endif
