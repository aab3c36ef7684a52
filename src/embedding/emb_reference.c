/* emb_reference: unsharded reference table; see emb_reference.h. */
#include "embedding/emb_reference.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"

void emb_ref_init(struct emb_ref *r, const struct emb_table_conf *conf)
{
    memset(r, 0, sizeof *r);
    r->conf = *conf;
    int64_t rows = conf->rows + 1;
    r->state_floats = emb_optim_state_floats(conf->optim.kind, conf->dim);
    r->w = xcalloc((size_t)rows, (size_t)conf->dim * sizeof(float));
    for (int64_t id = 1; id <= conf->rows; id++)
        emb_init_row(conf, id, r->w + id * conf->dim);
    if (r->state_floats)
        r->state = xcalloc((size_t)rows, (size_t)r->state_floats * sizeof(float));
    if (conf->optim.kind == EMB_OPT_ADAM)
        r->steps = xcalloc((size_t)rows, sizeof(int64_t));
}

void emb_ref_free(struct emb_ref *r)
{
    free(r->w);
    free(r->state);
    free(r->steps);
    memset(r, 0, sizeof *r);
}

void emb_ref_lookup(const struct emb_ref *r, const int64_t *ids, int64_t n, float *out)
{
    const int dim = r->conf.dim;
    for (int64_t i = 0; i < n; i++)
        memcpy(out + i * dim, r->w + ids[i] * dim, (size_t)dim * sizeof(float));
}

void emb_ref_update(struct emb_ref *r, const int64_t *ids, int64_t n, const float *grad)
{
    const int dim = r->conf.dim;
    /* a dense accumulator over the rows touched: simple and obviously right */
    double *acc = xcalloc((size_t)(r->conf.rows + 1), (size_t)dim * sizeof(double));
    float *g = xmalloc((size_t)dim * sizeof *g);
    uint8_t *touched = xcalloc((size_t)(r->conf.rows + 1), 1);
    for (int64_t i = 0; i < n; i++) {
        touched[ids[i]] = 1;
        for (int j = 0; j < dim; j++)
            acc[ids[i] * dim + j] += grad[i * dim + j];
    }
    for (int64_t id = 1; id <= r->conf.rows; id++) {
        if (!touched[id])
            continue;
        for (int j = 0; j < dim; j++)
            g[j] = (float)acc[id * dim + j];
        emb_optim_row(&r->conf.optim, dim, r->w + id * dim,
                      r->state ? r->state + id * r->state_floats : NULL,
                      r->steps ? r->steps + id : NULL, g);
    }
    free(g);
    free(acc);
    free(touched);
}
