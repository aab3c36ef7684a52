/* embedding: sharded tables, lookups and sparse updates; see embedding.h. */
#include "embedding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "idmap.h"
#include "cli.h"
#include "rng.h"

/* --- tables ----------------------------------------------------------------- */

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

void emb_init_row(const struct emb_table_conf *conf, int64_t id, float *row)
{
    struct rng r;
    rng_init(&r, rng_key(conf->seed, name_hash(conf->name), (uint64_t)id));
    for (int j = 0; j < conf->dim; j++)
        row[j] = conf->init == EMB_INIT_UNIFORM
                     ? (float)((2.0 * rng_uniform(&r) - 1.0) * conf->init_scale)
                     : (float)(rng_normal(&r) * conf->init_scale);
}

struct emb_table *emb_registry_add(struct emb_registry *r, const struct comm *c,
                                   const struct emb_table_conf *conf)
{
    if (r->n == EMB_MAX_TABLES)
        fatal("embedding: more than %d tables", EMB_MAX_TABLES);
    if (emb_registry_find(r, conf->name))
        fatal("embedding: table '%s' defined twice", conf->name);
    if (conf->rows < 1 || conf->dim < 1)
        fatal("embedding: table '%s' has %lld rows of dim %d", conf->name,
              (long long)conf->rows, conf->dim);
    struct emb_table *t = &r->tables[r->n++];
    memset(t, 0, sizeof *t);
    t->conf = *conf;
    t->G = c->g[COMM_EMB].size;
    t->shard = c->g[COMM_EMB].rank;
    t->local_rows = conf->rows / t->G + 1;
    t->state_floats = emb_optim_state_floats(conf->optim.kind, conf->dim);
    /* calloc: the kernel maps zero pages on first touch, so a shard costs
     * memory only for the rows used (initialisation is lazy) */
    t->w = xcalloc((size_t)t->local_rows, (size_t)conf->dim * sizeof(float));
    t->state = t->state_floats
                   ? xcalloc((size_t)t->local_rows, (size_t)t->state_floats * sizeof(float))
                   : NULL;
    t->steps = conf->optim.kind == EMB_OPT_ADAM
                   ? xcalloc((size_t)t->local_rows, sizeof(int64_t)) : NULL;
    t->ready = xcalloc((size_t)(t->local_rows / 8 + 1), 1);
    return t;
}

struct emb_table *emb_registry_find(struct emb_registry *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->tables[i].conf.name, name))
            return &r->tables[i];
    return NULL;
}

void emb_registry_free(struct emb_registry *r)
{
    for (int i = 0; i < r->n; i++) {
        struct emb_table *t = &r->tables[i];
        free(t->w);
        free(t->state);
        free(t->steps);
        free(t->ready);
    }
    r->n = 0;
}

float *emb_shard_slot(struct emb_table *t, int64_t id)
{
    int64_t k = id / t->G;
    float *w = t->w + k * t->conf.dim;
    if (!(t->ready[k >> 3] & (1u << (k & 7)))) {
        emb_init_row(&t->conf, id, w);
        t->ready[k >> 3] |= (uint8_t)(1u << (k & 7));
    }
    return w;
}

void emb_shard_row(struct emb_table *t, int64_t id, float *row)
{
    if (id < 1 || id > t->conf.rows || id % t->G != t->shard)
        fatal("embedding: table '%s': id %lld is not in shard %d", t->conf.name, (long long)id,
              t->shard);
    memcpy(row, emb_shard_slot(t, id), (size_t)t->conf.dim * sizeof(float));
}

int emb_check_ids(const struct emb_table_conf *conf, const int64_t *ids, int64_t n, int rank,
                  char *err, size_t errlen)
{
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 1 || ids[i] > conf->rows)
            return errorf(err, errlen,
                          "embedding table '%s': id %lld (token %lld, requested by rank %d) is "
                          "outside 1..%lld",
                          conf->name, (long long)ids[i], (long long)i, rank,
                          (long long)conf->rows);
    return 0;
}

/* --- forward ---------------------------------------------------------------- */

static void prefix(const int64_t *counts, int64_t *displs, int n)
{
    int64_t s = 0;
    for (int p = 0; p < n; p++) {
        displs[p] = s;
        s += counts[p];
    }
}

void emb_input_dist(struct emb_table *t, struct comm *c, const int64_t *ids, int64_t n,
                    struct emb_exchange *x, struct emb_times *tm)
{
    char err[512];
    if (emb_check_ids(&t->conf, ids, n, c->rank, err, sizeof err))
        fatal("%s", err);
    const int G = t->G;
    double t0 = cli_seconds();
    memset(x, 0, sizeof *x);
    x->n = n;
    x->inverse = xmalloc((size_t)(n ? n : 1) * sizeof *x->inverse);
    /* unique ids in order of first appearance */
    struct idmap m;
    idmap_init(&m, n);
    int64_t *first = xmalloc((size_t)(n ? n : 1) * sizeof *first);
    int64_t nu = 0;
    for (int64_t i = 0; i < n; i++) {
        int added;
        x->inverse[i] = idmap_get(&m, ids[i], nu, &added);
        if (added)
            first[nu++] = ids[i];
    }
    idmap_free(&m);
    /* bucket by owner (stable counting sort); remap the inverse index */
    x->scounts = xcalloc((size_t)G, sizeof(int64_t));
    x->sdispls = xmalloc((size_t)G * sizeof(int64_t));
    x->rcounts = xmalloc((size_t)G * sizeof(int64_t));
    x->rdispls = xmalloc((size_t)G * sizeof(int64_t));
    for (int64_t u = 0; u < nu; u++)
        x->scounts[first[u] % G]++;
    prefix(x->scounts, x->sdispls, G);
    int64_t *pos = xmalloc((size_t)G * sizeof *pos), *perm = xmalloc((size_t)(nu ? nu : 1) * 8);
    memcpy(pos, x->sdispls, (size_t)G * sizeof *pos);
    x->nuniq = nu;
    x->uniq = xmalloc((size_t)(nu ? nu : 1) * sizeof *x->uniq);
    for (int64_t u = 0; u < nu; u++) {
        int64_t p = pos[first[u] % G]++;
        x->uniq[p] = first[u];
        perm[u] = p;
    }
    for (int64_t i = 0; i < n; i++)
        x->inverse[i] = perm[x->inverse[i]];
    free(pos);
    free(perm);
    free(first);
    double t1 = cli_seconds();
    comm_alltoall_i64(c, COMM_EMB, x->scounts, x->rcounts, COMM_PH_COUNTS);
    prefix(x->rcounts, x->rdispls, G);
    x->nserve = x->rdispls[G - 1] + x->rcounts[G - 1];
    x->serve = xmalloc((size_t)(x->nserve ? x->nserve : 1) * sizeof *x->serve);
    double t2 = cli_seconds();
    comm_ialltoallv(c, COMM_EMB, COMM_I64, x->uniq, x->scounts, x->sdispls, x->serve, x->rcounts,
                    x->rdispls, COMM_PH_IDS, &x->req);
    x->pending = 1;
    if (tm) {
        tm->dedup += t1 - t0;
        tm->counts += t2 - t1;
        tm->ids += cli_seconds() - t2;
    }
}

void emb_output_dist(struct emb_table *t, struct comm *c, struct emb_exchange *x, float *out,
                     struct emb_times *tm)
{
    const int G = t->G, dim = t->conf.dim;
    double t0 = cli_seconds();
    if (x->pending) {
        comm_wait(&x->req);
        x->pending = 0;
    }
    double t1 = cli_seconds();
    float *served = xmalloc((size_t)(x->nserve ? x->nserve : 1) * (size_t)dim * sizeof(float));
    for (int64_t i = 0; i < x->nserve; i++)
        memcpy(served + i * dim, emb_shard_slot(t, x->serve[i]), (size_t)dim * sizeof(float));
    double t2 = cli_seconds();
    int64_t *sc = xmalloc((size_t)G * 4 * sizeof(int64_t));
    int64_t *sd = sc + G, *rc = sc + 2 * G, *rd = sc + 3 * G;
    for (int p = 0; p < G; p++) { /* rows go back the way the ids came */
        sc[p] = x->rcounts[p] * dim;
        sd[p] = x->rdispls[p] * dim;
        rc[p] = x->scounts[p] * dim;
        rd[p] = x->sdispls[p] * dim;
    }
    x->rows = xmalloc((size_t)(x->nuniq ? x->nuniq : 1) * (size_t)dim * sizeof(float));
    comm_alltoallv(c, COMM_EMB, COMM_F32, served, sc, sd, x->rows, rc, rd, COMM_PH_ROWS);
    free(sc);
    free(served);
    double t3 = cli_seconds();
    for (int64_t i = 0; out && i < x->n; i++)
        memcpy(out + i * dim, x->rows + x->inverse[i] * dim, (size_t)dim * sizeof(float));
    if (tm) {
        tm->ids += t1 - t0;
        tm->gather += t2 - t1;
        tm->rows += t3 - t2;
        tm->expand += cli_seconds() - t3;
    }
}

void emb_lookup(struct emb_table *t, struct comm *c, const int64_t *ids, int64_t n, float *out,
                struct emb_exchange *x, struct emb_times *tm)
{
    emb_input_dist(t, c, ids, n, x, tm);
    emb_output_dist(t, c, x, out, tm);
}

void emb_exchange_free(struct emb_exchange *x)
{
    if (x->pending)
        comm_wait(&x->req);
    free(x->uniq);
    free(x->inverse);
    free(x->scounts);
    free(x->sdispls);
    free(x->rcounts);
    free(x->rdispls);
    free(x->serve);
    free(x->rows);
    memset(x, 0, sizeof *x);
}
