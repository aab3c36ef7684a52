/* emb_subspace: the basis U, the fixed rows F(i), and the maps between
 * the stored part c and the rows; see emb_subspace.h. */
#include "embedding/emb_subspace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/rng.h"
#include "embedding/emb_table.h"

/* keys of the basis and of F, apart from the rows' initial stream */
#define KEY_U 0x5b5b0f0f11223344ull
#define KEY_F 0xf0f0a5a5c3c39696ull

void emb_subspace_init(struct emb_subspace *s, const struct emb_table_conf *conf)
{
    const int d = conf->dim, k = conf->subspace_k;
    if (k < 1 || k > d)
        fatal("embedding table '%s': subspace_k = %d outside 1..%d (the dim)", conf->name, k, d);
    s->k = k;
    s->dim = d;
    s->identity = conf->subspace_identity;
    s->U = xcalloc((size_t)d * (size_t)k, sizeof *s->U);
    if (s->identity) {
        for (int m = 0; m < k; m++)
            s->U[m * k + m] = 1;
        return;
    }
    /* modified Gram-Schmidt of a Gaussian [d, k] in double; a column that
     * comes out (numerically) dependent is drawn again */
    double *q = xmalloc((size_t)d * (size_t)k * sizeof *q);
    struct rng r;
    rng_init(&r, rng_key(conf->seed, emb_name_hash(conf->name) ^ KEY_U, (uint64_t)k));
    for (int m = 0; m < k; m++) {
        double norm = 0;
        do {
            for (int j = 0; j < d; j++)
                q[j * k + m] = rng_normal(&r);
            for (int p = 0; p < m; p++) {
                double dot = 0;
                for (int j = 0; j < d; j++)
                    dot += q[j * k + p] * q[j * k + m];
                for (int j = 0; j < d; j++)
                    q[j * k + m] -= dot * q[j * k + p];
            }
            norm = 0;
            for (int j = 0; j < d; j++)
                norm += q[j * k + m] * q[j * k + m];
            norm = sqrt(norm);
        } while (norm < 1e-6);
        for (int j = 0; j < d; j++)
            q[j * k + m] /= norm;
    }
    for (int64_t i = 0; i < (int64_t)d * k; i++)
        s->U[i] = (float)q[i];
    free(q);
}

void emb_subspace_free(struct emb_subspace *s)
{
    free(s->U);
    s->U = NULL;
}

void emb_subspace_f(const struct emb_subspace *s, const struct emb_table_conf *conf, int64_t id,
                    float *f)
{
    if (s->identity) {
        memset(f, 0, (size_t)s->dim * sizeof *f);
        return;
    }
    struct rng r;
    rng_init(&r, rng_key(conf->seed, emb_name_hash(conf->name) ^ KEY_F, (uint64_t)id));
    for (int j = 0; j < s->dim; j++)
        f[j] = (float)(rng_normal(&r) * conf->init_scale);
}

void emb_subspace_expand(const struct emb_subspace *s, const struct emb_table_conf *conf,
                         int64_t n, const int64_t *ids, const float *c, float *rows)
{
    const int d = s->dim, k = s->k;
#pragma omp parallel for schedule(static) if (n >= 256)
    for (int64_t u = 0; u < n; u++) {
        float *e = rows + u * d;
        const float *cu = c + u * k;
        emb_subspace_f(s, conf, ids[u], e);
        for (int j = 0; j < d; j++) {
            const float *uj = s->U + (int64_t)j * k;
            double acc = 0;
            for (int m = 0; m < k; m++)
                acc += (double)uj[m] * cu[m];
            e[j] += (float)acc;
        }
    }
}

void emb_subspace_project(const struct emb_subspace *s, int64_t n, const float *g, float *gk)
{
    const int d = s->dim, k = s->k;
#pragma omp parallel for schedule(static) if (n >= 256)
    for (int64_t u = 0; u < n; u++) {
        const float *gu = g + u * d;
        for (int m = 0; m < k; m++) {
            double acc = 0;
            for (int j = 0; j < d; j++)
                acc += (double)s->U[(int64_t)j * k + m] * gu[j];
            gk[u * k + m] = (float)acc;
        }
    }
}
