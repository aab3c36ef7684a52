/* emb_exchange: the forward of a sharded lookup (de-duplication, counts,
 * ids, rows) and the contract's accessors; see emb_exchange.h. The
 * backward is in emb_backward.c. */
#include "embedding/emb_exchange_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/clock.h"
#include "embedding/emb_subspace.h"

static void prefix(const int64_t *counts, int64_t *displs, int n)
{
    int64_t s = 0;
    for (int p = 0; p < n; p++) {
        displs[p] = s;
        s += counts[p];
    }
}

/* De-duplicate ids[n] into x->uniq, grouped by owner with chunk 0 (ids
 * among the first n_first tokens) before chunk 1 within each owner, and
 * the inverse index (the table's backend: emb_dedup); sets the send counts
 * of both chunks. */
static void dedup_bucket(struct emb_table *t, struct emb_exchange *x, const int64_t *ids,
                         int64_t n, int64_t n_first)
{
    const int G = x->G;
    const size_t nb = (size_t)(n ? n : 1) * sizeof(int64_t);
    x->inverse = xmalloc(nb);
    x->uniq = xmalloc(nb);
    int64_t *counts = xmalloc((size_t)G * 2 * sizeof *counts);
    /* the operands where the table's engine runs (mirror.h: the host
     * buffers themselves on the CPU) */
    struct mirror *m = t->scratch;
    const int64_t *d_ids = mirror_bind(&m[0], t->be, ids, nb);
    mirror_up(&m[0], 0, (size_t)n * sizeof *ids);
    int64_t *d_uniq = mirror_bind(&m[1], t->be, x->uniq, nb);
    int64_t *d_inv = mirror_bind(&m[2], t->be, x->inverse, nb);
    x->nuniq = t->be->emb_dedup(n, d_ids, n_first, G, d_uniq, d_inv, counts);
    mirror_down(&m[1], 0, (size_t)x->nuniq * sizeof *x->uniq);
    mirror_down(&m[2], 0, (size_t)n * sizeof *x->inverse);
    memcpy(x->scounts, counts, (size_t)G * sizeof *counts);
    memcpy(x->scounts0, counts + G, (size_t)G * sizeof *counts);
    free(counts);
    prefix(x->scounts, x->sdispls, G);
}

void emb_chunk_layout(const struct emb_exchange *x, int k, int64_t scale, int64_t *req_c,
                      int64_t *req_d, int64_t *own_c, int64_t *own_d)
{
    for (int p = 0; p < x->G; p++) {
        int64_t want0 = x->scounts0[p], serve0 = x->rcounts0[p];
        req_c[p] = (k == 0 ? want0 : x->scounts[p] - want0) * scale;
        req_d[p] = (x->sdispls[p] + (k == 0 ? 0 : want0)) * scale;
        own_c[p] = (k == 0 ? serve0 : x->rcounts[p] - serve0) * scale;
        own_d[p] = (x->rdispls[p] + (k == 0 ? 0 : serve0)) * scale;
    }
}

void emb_wire_encode(const struct emb_table *t, enum emb_codec cd, int64_t n, int width,
                     const float *rows, uint8_t *wire, const int64_t *ids, const char *what)
{
    char err[512];
    if (emb_codec_encode_ids(cd, n, width, rows, wire, ids, t->conf.name, what, err, sizeof err))
        fatal("%s", err);
}

/* The wire stats' fp32 figure: tokens of ids[n] that another rank of the
 * emb group owns (counted with the rows, in emb_output_post). */
static int64_t remote_tokens(const struct emb_table *t, const int64_t *ids, int64_t n)
{
    int64_t remote = 0;
    for (int64_t i = 0; i < n; i++)
        remote += ids[i] % t->G != t->shard;
    return remote;
}

/* emb_input_dist; counted: into the table's wire stats. */
static struct emb_exchange *input_dist(struct emb_table *t, struct comm *c, const int64_t *ids,
                                       int64_t n, int64_t n_first, int counted,
                                       struct emb_times *tm)
{
    char err[512];
    if (emb_check_ids(&t->conf, ids, n, c->rank, err, sizeof err))
        fatal("%s", err);
    if (n_first < 0 || n_first > n)
        fatal("emb_input_dist: n_first = %lld outside 0..%lld", (long long)n_first,
              (long long)n);
    const int G = t->G;
    double t0 = clock_seconds();
    struct emb_exchange *x = xcalloc(1, sizeof *x);
    x->n = n;
    x->G = G;
    x->c = c;
    x->rcodec = t->conf.rows_codec;
    x->gcodec = t->conf.grads_codec;
    x->dim = t->conf.dim;
    x->tab = t;
    x->width = t->width;
    x->counted = counted;
    if (counted)
        x->remote_tokens = remote_tokens(t, ids, n);
    x->scounts = xcalloc((size_t)G * 6, sizeof(int64_t));
    x->sdispls = x->scounts + G;
    x->rcounts = x->scounts + 2 * G;
    x->rdispls = x->scounts + 3 * G;
    x->scounts0 = x->scounts + 4 * G;
    x->rcounts0 = x->scounts + 5 * G;
    dedup_bucket(t, x, ids, n, n_first);
    x->spans = xmalloc((size_t)G * 2 * sizeof *x->spans);
    int64_t *v = xmalloc((size_t)G * 4 * sizeof *v);
    for (int k = 0; k < 2; k++) {
        emb_chunk_layout(x, k, 1, v, v + G, v + 2 * G, v + 3 * G); /* the requester's side */
        for (int p = 0; p < G; p++)
            x->spans[k * G + p] = (struct emb_span){.first = v[G + p], .n = v[p]};
    }
    free(v);
    /* counts (both chunks) to the owners, non-blocking; the ids follow in
     * emb_input_post_ids once the counts have arrived */
    x->cnt = xmalloc((size_t)G * 4 * sizeof *x->cnt);
    for (int p = 0; p < G; p++) {
        x->cnt[2 * p] = x->scounts[p];
        x->cnt[2 * p + 1] = x->scounts0[p];
    }
    double t1 = clock_seconds();
    comm_ialltoall_i64(c, COMM_EMB, x->cnt, 2, x->cnt + 2 * G, COMM_PH_COUNTS, &x->req);
    x->stage = EMB_COUNTS_POSTED;
    if (tm) {
        tm->dedup += t1 - t0;
        tm->counts += clock_seconds() - t1;
    }
    return x;
}

struct emb_exchange *emb_input_dist(struct emb_table *t, struct comm *c, const int64_t *ids,
                                    int64_t n, int64_t n_first, struct emb_times *tm)
{
    return input_dist(t, c, ids, n, n_first, 1, tm);
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

/* Advance the counts or ids exchange without blocking. */
static void input_test(struct emb_exchange *x)
{
    if (x->stage == EMB_COUNTS_POSTED && comm_test(&x->req))
        x->stage = EMB_COUNTS_DONE;
    if (x->stage == EMB_IDS_POSTED && comm_test(&x->req))
        x->stage = EMB_IDS_DONE;
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

/* The rows of serve[first, first + count) from the shard into served. */
static void serve_rows(struct emb_table *t, struct emb_exchange *x, int64_t first, int64_t count)
{
    const int dim = t->width; /* c[i] of a subspace table */
    const size_t ib = (size_t)(count ? count : 1) * sizeof(int64_t);
    const size_t rb = (size_t)(count ? count : 1) * (size_t)dim * sizeof(float);
    emb_table_ready(t, x->serve + first, count);
    struct mirror *m = t->scratch;
    const int64_t *d_ids = mirror_bind(&m[0], t->be, x->serve + first, ib);
    mirror_up(&m[0], 0, (size_t)count * sizeof(int64_t));
    float *d_rows = mirror_bind(&m[1], t->be, x->served + first * dim, rb);
    t->be->emb_gather_shard(count, dim, t->w, d_ids, t->G, d_rows);
    mirror_down(&m[1], 0, (size_t)count * (size_t)dim * sizeof(float));
}

void emb_output_post(struct emb_table *t, struct comm *c, struct emb_exchange *x,
                     struct emb_times *tm)
{
    const int G = t->G, dim = t->width; /* values per row on the wire */
    double t0 = clock_seconds();
    input_wait(c, x);
    double t1 = clock_seconds();
    x->served = xmalloc((size_t)(x->nserve ? x->nserve : 1) * (size_t)dim * sizeof(float));
    x->rows = xmalloc((size_t)(x->nuniq ? x->nuniq : 1) * (size_t)t->conf.dim * sizeof(float));
    if (t->sub) /* c arrives here; emb_output_wait rebuilds the rows */
        x->cw = xmalloc((size_t)(x->nuniq ? x->nuniq : 1) * (size_t)dim * sizeof(float));
    float *recv_f32 = t->sub ? x->cw : x->rows;
    /* the wire: floats (fp32), else rb bytes per row encoded here, decoded
     * by the requester in emb_output_wait */
    const int byte_wire = x->rcodec != EMB_CODEC_FP32;
    const int64_t rb = emb_codec_row_bytes(x->rcodec, dim), unit = byte_wire ? rb : dim;
    if (byte_wire) {
        x->served_w = xmalloc((size_t)(x->nserve ? x->nserve : 1) * (size_t)rb);
        x->rows_w = xmalloc((size_t)(x->nuniq ? x->nuniq : 1) * (size_t)rb);
    }
    /* rows go back the way the ids came, chunk 0 first: its rows are
     * gathered and posted before chunk 1's are gathered; each chunk writes
     * its own part of every owner's block of x->rows */
    int64_t *v = xmalloc((size_t)G * 4 * sizeof *v);
    int64_t *sc = v, *sd = v + G, *rc = v + 2 * G, *rd = v + 3 * G;
    double t2 = t1;
    if (x->counted) { /* this lookup's figures, counted when its rows leave */
        t->wire.lookups++;
        t->wire.fp32 += x->remote_tokens * 4 * t->conf.dim;
    }
    for (int k = 0; k < 2; k++) {
        emb_chunk_layout(x, k, unit, rc, rd, sc, sd); /* owner -> requester */
        double g0 = clock_seconds();
        for (int p = 0; p < G; p++) {
            const int64_t first = sd[p] / unit, count = sc[p] / unit;
            serve_rows(t, x, first, count);
            if (byte_wire) /* every row, those this rank serves itself included */
                emb_wire_encode(t, x->rcodec, count, dim, x->served + first * dim,
                                x->served_w + first * rb, x->serve + first, "row");
            if (x->counted && p != t->shard) {
                t->wire.rows += count * rb;
                if (comm_peer_remote(c, COMM_EMB, p))
                    t->wire.rows_xnode += count * rb;
            }
        }
        t2 += clock_seconds() - g0;
        comm_ialltoallv(c, COMM_EMB, byte_wire ? COMM_BYTE : COMM_F32,
                        byte_wire ? (void *)x->served_w : (void *)x->served, sc, sd,
                        byte_wire ? (void *)x->rows_w : (void *)recv_f32, rc, rd, COMM_PH_ROWS,
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

/* Test chunk k's rows; the served rows are freed once both chunks left. */
static void rows_test(struct emb_exchange *x, int k)
{
    if (x->rpending[k] && comm_test(&x->rreq[k]))
        x->rpending[k] = 0;
    if (!x->rpending[0] && !x->rpending[1] && x->served) {
        free(x->served);
        x->served = NULL;
        free(x->served_w);
        x->served_w = NULL;
    }
}

void emb_output_wait(struct emb_exchange *x, int k, struct emb_times *tm)
{
    double t0 = clock_seconds();
    if (x->rpending[k]) {
        comm_wait(&x->rreq[k]);
        x->rpending[k] = 0;
    }
    rows_test(x, k); /* frees the served rows once both are done */
    if (!x->rmade[k] && (x->rows_w || x->cw)) { /* chunk k's spans from the wire */
        const int64_t rb = emb_codec_row_bytes(x->rcodec, x->width);
        float *dst = x->cw ? x->cw : x->rows;
        for (int p = 0; p < x->G; p++) {
            const struct emb_span *sp = &x->spans[k * x->G + p];
            if (x->rows_w)
                emb_codec_decode(x->rcodec, sp->n, x->width, x->rows_w + sp->first * rb,
                                 dst + sp->first * x->width);
            if (x->cw) /* E = F(i) + U c[i] */
                emb_subspace_expand(x->tab->sub, &x->tab->conf, sp->n, x->uniq + sp->first,
                                    x->cw + sp->first * x->width, x->rows + sp->first * x->dim);
        }
    }
    x->rmade[k] = 1;
    if (tm)
        tm->rows += clock_seconds() - t0;
}

void emb_exchange_progress(struct emb_exchange *x)
{
    input_test(x);
    for (int k = 0; k < 2; k++)
        if (x->rpending[k])
            rows_test(x, k);
    for (int k = 0; k < 2; k++)
        if (x->gpending[k] && comm_test(&x->greq[k]))
            x->gpending[k] = 0;
}

int64_t emb_exchange_nuniq(const struct emb_exchange *x) { return x->nuniq; }
const int64_t *emb_exchange_inverse(const struct emb_exchange *x) { return x->inverse; }
const float *emb_exchange_rows(const struct emb_exchange *x) { return x->rows; }
const int64_t *emb_exchange_uniq(const struct emb_exchange *x) { return x->uniq; }

int emb_exchange_spans(const struct emb_exchange *x, int k, const struct emb_span **spans)
{
    *spans = x->spans + k * x->G;
    return x->G;
}

struct emb_exchange *emb_lookup(struct emb_table *t, struct comm *c, const int64_t *ids,
                                int64_t n, float *out, struct emb_times *tm)
{
    const int dim = t->conf.dim;
    struct emb_exchange *x = input_dist(t, c, ids, n, n, 0, tm); /* not counted */
    emb_output_post(t, c, x, tm);
    emb_output_wait(x, 0, tm);
    emb_output_wait(x, 1, tm);
    double t3 = clock_seconds();
    for (int64_t i = 0; i < n; i++)
        memcpy(out + i * dim, x->rows + x->inverse[i] * dim, (size_t)dim * sizeof(float));
    if (tm)
        tm->expand += clock_seconds() - t3;
    return x;
}

void emb_exchange_free(struct emb_exchange *x)
{
    if (!x)
        return;
    input_wait(x->c, x); /* drain: every peer takes part in the same exchanges */
    for (int k = 0; k < 2; k++)
        if (x->rpending[k])
            comm_wait(&x->rreq[k]);
    for (int k = 0; k < 2; k++)
        if (x->gpending[k])
            comm_wait(&x->greq[k]);
    free(x->uniq);
    free(x->inverse);
    free(x->scounts);
    free(x->spans);
    free(x->cnt);
    free(x->serve);
    free(x->served);
    free(x->rows);
    free(x->gs);
    free(x->served_w);
    free(x->rows_w);
    free(x->gu_w);
    free(x->gs_w);
    free(x->cw);
    free(x->gk);
    free(x);
}
