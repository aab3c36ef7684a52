/* embedding: sharded tables, lookups and sparse updates; see embedding.h. */
#include "embedding/embedding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/idmap.h"
#include "base/clock.h"
#include "base/rng.h"

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
    /* threads may initialise different rows whose bits share a byte (the
     * sparse update runs in parallel over distinct ids): atomic bit ops */
    const uint8_t bit = (uint8_t)(1u << (k & 7));
    if (!(__atomic_load_n(&t->ready[k >> 3], __ATOMIC_RELAXED) & bit)) {
        emb_init_row(&t->conf, id, w);
        __atomic_fetch_or(&t->ready[k >> 3], bit, __ATOMIC_RELAXED);
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
                    int64_t n_first, struct emb_exchange *x, struct emb_times *tm)
{
    char err[512];
    if (emb_check_ids(&t->conf, ids, n, c->rank, err, sizeof err))
        fatal("%s", err);
    if (n_first < 0 || n_first > n)
        fatal("emb_input_dist: n_first = %lld outside 0..%lld", (long long)n_first,
              (long long)n);
    const int G = t->G;
    double t0 = clock_seconds();
    memset(x, 0, sizeof *x);
    x->n = n;
    x->inverse = xmalloc((size_t)(n ? n : 1) * sizeof *x->inverse);
    /* unique ids in order of first appearance; chunk 0 = ids among the
     * first n_first tokens, chunk 1 = the others */
    struct idmap m;
    idmap_init(&m, n);
    int64_t *first = xmalloc((size_t)(n ? n : 1) * sizeof *first);
    int64_t nu = 0, nu0 = 0;
    for (int64_t i = 0; i < n; i++) {
        int added;
        x->inverse[i] = idmap_get(&m, ids[i], nu, &added);
        if (added)
            first[nu++] = ids[i];
        if (i + 1 == n_first)
            nu0 = nu;
    }
    idmap_free(&m);
    /* bucket by owner, chunk 0 before chunk 1 within each owner (stable
     * counting sort); remap the inverse index */
    x->scounts = xcalloc((size_t)G * 6, sizeof(int64_t));
    x->sdispls = x->scounts + G;
    x->rcounts = x->scounts + 2 * G;
    x->rdispls = x->scounts + 3 * G;
    x->scounts0 = x->scounts + 4 * G;
    x->rcounts0 = x->scounts + 5 * G;
    for (int64_t u = 0; u < nu; u++) {
        x->scounts[first[u] % G]++;
        if (u < nu0)
            x->scounts0[first[u] % G]++;
    }
    prefix(x->scounts, x->sdispls, G);
    int64_t *pos = xmalloc((size_t)G * 2 * sizeof *pos), *perm = xmalloc((size_t)(nu ? nu : 1) * 8);
    for (int p = 0; p < G; p++) {
        pos[p] = x->sdispls[p];                      /* next chunk-0 slot */
        pos[G + p] = x->sdispls[p] + x->scounts0[p]; /* next chunk-1 slot */
    }
    x->nuniq = nu;
    x->uniq = xmalloc((size_t)(nu ? nu : 1) * sizeof *x->uniq);
    for (int64_t u = 0; u < nu; u++) {
        int64_t p = pos[(u < nu0 ? 0 : G) + first[u] % G]++;
        x->uniq[p] = first[u];
        perm[u] = p;
    }
    for (int64_t i = 0; i < n; i++)
        x->inverse[i] = perm[x->inverse[i]];
    free(pos);
    free(perm);
    free(first);
    /* counts (both chunks) to the owners, non-blocking; the ids follow in
     * emb_input_progress once the counts have arrived */
    x->cnt = xmalloc((size_t)G * 4 * sizeof *x->cnt);
    for (int p = 0; p < G; p++) {
        x->cnt[2 * p] = x->scounts[p];
        x->cnt[2 * p + 1] = x->scounts0[p];
    }
    double t1 = clock_seconds();
    comm_ialltoall_i64(c, COMM_EMB, x->cnt, 2, x->cnt + 2 * G, COMM_PH_COUNTS, &x->req);
    x->stage = EMB_COUNTS_POSTED;
    x->G = G;
    x->c = c;
    if (tm) {
        tm->dedup += t1 - t0;
        tm->counts += clock_seconds() - t1;
    }
}

/* Counts have arrived: size the serve list and post the ids exchange. */
static void post_ids(struct comm *c, struct emb_exchange *x)
{
    const int G = x->G;
    for (int p = 0; p < G; p++) {
        x->rcounts[p] = x->cnt[2 * G + 2 * p];
        x->rcounts0[p] = x->cnt[2 * G + 2 * p + 1];
    }
    prefix(x->rcounts, x->rdispls, G);
    x->nserve = x->rdispls[G - 1] + x->rcounts[G - 1];
    x->serve = xmalloc((size_t)(x->nserve ? x->nserve : 1) * sizeof *x->serve);
    comm_ialltoallv(c, COMM_EMB, COMM_I64, x->uniq, x->scounts, x->sdispls, x->serve, x->rcounts,
                    x->rdispls, COMM_PH_IDS, &x->req);
    x->stage = EMB_IDS_POSTED;
}

int emb_input_progress(struct emb_exchange *x)
{
    if (x->stage == EMB_COUNTS_POSTED && comm_test(&x->req))
        x->stage = EMB_COUNTS_DONE;
    if (x->stage == EMB_IDS_POSTED && comm_test(&x->req))
        x->stage = EMB_IDS_DONE;
    return x->stage == EMB_IDS_DONE;
}

void emb_input_post_ids(struct comm *c, struct emb_exchange *x)
{
    if (x->stage == EMB_COUNTS_POSTED) {
        comm_wait(&x->req);
        x->stage = EMB_COUNTS_DONE;
    }
    if (x->stage == EMB_COUNTS_DONE)
        post_ids(c, x);
}

/* Block until the ids have arrived at their owners. */
static void input_wait(struct comm *c, struct emb_exchange *x)
{
    emb_input_post_ids(c, x);
    if (x->stage == EMB_IDS_POSTED) {
        comm_wait(&x->req);
        x->stage = EMB_IDS_DONE;
    }
}

void emb_output_post(struct emb_table *t, struct comm *c, struct emb_exchange *x,
                     struct emb_times *tm)
{
    const int G = t->G, dim = t->conf.dim;
    double t0 = clock_seconds();
    input_wait(c, x);
    double t1 = clock_seconds();
    x->served = xmalloc((size_t)(x->nserve ? x->nserve : 1) * (size_t)dim * sizeof(float));
    x->rows = xmalloc((size_t)(x->nuniq ? x->nuniq : 1) * (size_t)dim * sizeof(float));
    /* rows go back the way the ids came, chunk 0 first: its rows are
     * gathered and posted before chunk 1's are gathered; each chunk writes
     * its own part of every owner's block of x->rows */
    int64_t *v = xmalloc((size_t)G * 4 * sizeof *v);
    int64_t *sc = v, *sd = v + G, *rc = v + 2 * G, *rd = v + 3 * G;
    double t2 = t1;
    for (int k = 0; k < 2; k++) {
        for (int p = 0; p < G; p++) {
            int64_t serve0 = x->rcounts0[p], want0 = x->scounts0[p];
            sc[p] = (k == 0 ? serve0 : x->rcounts[p] - serve0) * dim;
            sd[p] = (x->rdispls[p] + (k == 0 ? 0 : serve0)) * dim;
            rc[p] = (k == 0 ? want0 : x->scounts[p] - want0) * dim;
            rd[p] = (x->sdispls[p] + (k == 0 ? 0 : want0)) * dim;
        }
        double g0 = clock_seconds();
        for (int p = 0; p < G; p++)
            for (int64_t i = sd[p] / dim; i < (sd[p] + sc[p]) / dim; i++)
                memcpy(x->served + i * dim, emb_shard_slot(t, x->serve[i]),
                       (size_t)dim * sizeof(float));
        t2 += clock_seconds() - g0;
        comm_ialltoallv(c, COMM_EMB, COMM_F32, x->served, sc, sd, x->rows, rc, rd, COMM_PH_ROWS,
                        &x->rreq[k]);
        x->rpending[k] = 1;
    }
    free(v);
    if (tm) { /* t2 - t1: the time spent gathering; the rest: posting */
        tm->ids += t1 - t0;
        tm->gather += t2 - t1;
        tm->rows += clock_seconds() - t2;
    }
}

int emb_output_test(struct emb_exchange *x, int chunk)
{
    if (x->rpending[chunk] && comm_test(&x->rreq[chunk]))
        x->rpending[chunk] = 0;
    if (!x->rpending[0] && !x->rpending[1] && x->served) {
        free(x->served);
        x->served = NULL;
    }
    return !x->rpending[chunk];
}

void emb_output_wait(struct emb_exchange *x, int chunk, struct emb_times *tm)
{
    double t0 = clock_seconds();
    if (x->rpending[chunk]) {
        comm_wait(&x->rreq[chunk]);
        x->rpending[chunk] = 0;
    }
    emb_output_test(x, chunk); /* frees the served rows once both are done */
    if (tm)
        tm->rows += clock_seconds() - t0;
}

void emb_output_dist(struct emb_table *t, struct comm *c, struct emb_exchange *x, float *out,
                     struct emb_times *tm)
{
    const int dim = t->conf.dim;
    emb_output_post(t, c, x, tm);
    emb_output_wait(x, 0, tm);
    emb_output_wait(x, 1, tm);
    double t3 = clock_seconds();
    for (int64_t i = 0; out && i < x->n; i++)
        memcpy(out + i * dim, x->rows + x->inverse[i] * dim, (size_t)dim * sizeof(float));
    if (tm)
        tm->expand += clock_seconds() - t3;
}

void emb_lookup(struct emb_table *t, struct comm *c, const int64_t *ids, int64_t n, float *out,
                struct emb_exchange *x, struct emb_times *tm)
{
    emb_input_dist(t, c, ids, n, n, x, tm);
    emb_output_dist(t, c, x, out, tm);
}

void emb_exchange_free(struct emb_exchange *x)
{
    if (x->c) /* drain: every peer takes part in the same exchanges */
        input_wait(x->c, x);
    for (int k = 0; k < 2; k++)
        if (x->rpending[k])
            comm_wait(&x->rreq[k]);
    for (int k = 0; k < 2; k++)
        if (x->gpending[k])
            comm_wait(&x->greq[k]);
    free(x->uniq);
    free(x->inverse);
    free(x->scounts);
    free(x->cnt);
    free(x->serve);
    free(x->served);
    free(x->rows);
    free(x->gs);
    memset(x, 0, sizeof *x);
}
