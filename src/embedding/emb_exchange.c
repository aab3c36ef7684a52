/* emb_exchange: the forward of a sharded lookup (de-duplication, counts,
 * ids, rows) and the contract's accessors; see emb_exchange.h. The
 * backward is in emb_backward.c, the transfers in emb_xfer.c. */
#include "embedding/emb_exchange_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/clock.h"
#include "comm/comm_trace.h"
#include "embedding/emb_cache.h"
#include "embedding/emb_subspace.h"

static void prefix(const int64_t *counts, int64_t *displs, int n)
{
    int64_t s = 0;
    for (int p = 0; p < n; p++) {
        displs[p] = s;
        s += counts[p];
    }
}

static size_t at_least1(int64_t n) { return (size_t)(n > 0 ? n : 1); }

/* De-duplicate ids[n] (table memory) into x->uniq, grouped by owner with
 * chunk 0 (ids among the first n_first tokens) before chunk 1 within each
 * owner, and the inverse index (the table's backend: emb_dedup; the counts
 * come to the host); sets the send counts of both chunks. */
static void dedup_bucket(struct emb_table *t, struct emb_exchange *x, const int64_t *ids,
                         int64_t n, int64_t n_first)
{
    const int G = x->G;
    const struct backend_ops *be = t->be;
    x->inverse = emb_buf_get(be, &x->b_inv, at_least1(n) * sizeof(int64_t));
    x->uniq = emb_buf_get(be, &x->b_uniq, at_least1(n) * sizeof(int64_t));
    int64_t *counts = xmalloc((size_t)G * 2 * sizeof *counts);
    x->nuniq = t->dyn ? be->emb_dyn_dedup(n, ids, n_first, G, x->uniq, x->inverse, counts)
                      : be->emb_dedup(n, ids, n_first, G, x->uniq, x->inverse, counts, t->conf.rows);
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

/* emb_input_dist; ids in the table's memory; counted: into the table's
 * wire stats. */
static struct emb_exchange *input_dist(struct emb_table *t, struct comm *c, const int64_t *ids,
                                       int64_t n, int64_t n_first, int counted,
                                       struct emb_times *tm)
{
    if (n_first < 0 || n_first > n)
        fatal("emb_input_dist: n_first = %lld outside 0..%lld", (long long)n_first,
              (long long)n);
    const int G = t->G;
    double t0 = clock_seconds();
    struct emb_exchange *x = emb_xstate_get(t);
    x->n = n;
    x->c = c;
    x->rcodec = t->conf.rows_codec;
    x->gcodec = t->conf.grads_codec;
    x->dim = t->conf.dim;
    x->width = t->width;
    x->counted = counted;
    if (x->rcodec != EMB_CODEC_FP32 || x->gcodec != EMB_CODEC_FP32) {
        x->bad = emb_buf_get(t->be, &x->b_bad, 2 * sizeof(uint64_t));
        t->be->zero(x->bad, 2 * sizeof(uint64_t));
    }
    dedup_bucket(t, x, ids, n, n_first);
    int64_t *v = xmalloc((size_t)G * 4 * sizeof *v);
    for (int k = 0; k < 2; k++) {
        emb_chunk_layout(x, k, 1, v, v + G, v + 2 * G, v + 3 * G); /* the requester's side */
        for (int p = 0; p < G; p++)
            x->spans[k * G + p] = (struct emb_span){.first = v[G + p], .n = v[p]};
    }
    free(v);
    /* counts (both chunks) to the owners, non-blocking; the ids follow in
     * emb_input_post_ids once the counts have arrived */
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

/* ids[n] of the host, checked, in the table's memory (emb_ids_*). */
static void ids_in(struct emb_table *t, struct comm *c, const int64_t *ids, int64_t n)
{
    emb_ids_reserve(t, n);
    emb_ids_put(t, 0, ids, n, c->rank);
}

struct emb_exchange *emb_input_dist(struct emb_table *t, struct comm *c, const int64_t *ids,
                                    int64_t n, int64_t n_first, struct emb_times *tm)
{
    ids_in(t, c, ids, n);
    return emb_input_dist_at(t, c, n, n_first, tm);
}

struct emb_exchange *emb_input_dist_at(struct emb_table *t, struct comm *c, int64_t n,
                                       int64_t n_first, struct emb_times *tm)
{
    return input_dist(t, c, emb_xstate(t)->ids.p, n, n_first, 1, tm);
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
    x->serve = emb_buf_get(x->tab->be, &x->b_serve, at_least1(x->nserve) * sizeof(int64_t));
    emb_xfer_post(x->tab, c, &x->xf[EMB_X_IDS], EMB_X_IDS, COMM_I64, 1, x->uniq, x->scounts,
                  x->sdispls, x->serve, x->rcounts, x->rdispls, COMM_PH_IDS);
    x->stage = EMB_IDS_POSTED;
}

/* Advance the counts or ids exchange without blocking. */
static void input_test(struct emb_exchange *x)
{
    if (x->stage == EMB_COUNTS_POSTED && comm_test(&x->req))
        x->stage = EMB_COUNTS_DONE;
    if (x->stage == EMB_IDS_POSTED && emb_xfer_test(&x->xf[EMB_X_IDS]))
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

void emb_input_wait(struct comm *c, struct emb_exchange *x)
{
    emb_input_post_ids(c, x);
    if (x->stage == EMB_IDS_POSTED) {
        emb_xfer_wait(&x->xf[EMB_X_IDS]);
        x->stage = EMB_IDS_DONE;
    }
}

void emb_input_serve(struct comm *c, struct emb_exchange *x)
{
    emb_input_wait(c, x);
    if (x->tab->dyn && !x->tab->cache && !x->dyn_mapped) { /* served ids to slots (emb_dyn.h) */
        emb_dyn_map(x->tab, 1, &x->serve, &x->nserve, x->counted);
        x->dyn_mapped = 1;
        x->dyn_shared = emb_dyn_map_shared(x->tab);
    }
    if (x->tab->cache && !x->cache_mapped) { /* the served ids to slots (emb_cache.h) */
        emb_cache_map(x->tab, x); /* a dynamic table's through its pool (emb_cache_dyn.h) */
        x->cache_mapped = 1;
        x->dyn_shared = x->tab->dyn && emb_dyn_map_shared(x->tab);
    }
}

void emb_count_lookup(struct emb_table *t, struct emb_exchange *x)
{
    if (!x->counted) /* this lookup's figures, counted when its rows leave */
        return;
    struct emb_xstate *xs = emb_xstate(t);
    t->wire.lookups++;
    xs->tokens += x->n; /* less those owned here (emb_xstate_wire) */
    if (t->G > 1) /* one shard owns every id: all local, nothing to count */
        t->be->count_range(x->n, x->inverse, x->sdispls[t->shard],
                           x->sdispls[t->shard] + x->scounts[t->shard], xs->stats.p);
}

/* The rows of serve[first, first + count) from the shard into served. */
static void serve_rows(struct emb_table *t, struct emb_exchange *x, int64_t first, int64_t count)
{
    if (count == 0)
        return;
    emb_table_ready(t, x->serve + first, count); /* host tables: lazily initialised */
    t->be->emb_gather_shard(count, t->width, x->crows ? x->crows : t->w, x->serve + first, t->G,
                            x->served + first * t->width);
}

/* Post chunk k's rows (gathered into served, encoded into served_w when
 * the wire is bytes): owner -> requester, each chunk its own part of
 * every owner's block of the rows. */
static void post_chunk(struct emb_exchange *x, int k)
{
    struct emb_table *t = x->tab;
    const int G = t->G, dim = t->width; /* values per row on the wire */
    const int byte_wire = x->rcodec != EMB_CODEC_FP32;
    const int64_t rb = emb_codec_row_bytes(x->rcodec, dim);
    float *recv_f32 = t->sub ? x->cw : x->rows;
    int64_t *v = xmalloc((size_t)G * 4 * sizeof *v);
    int64_t *sc = v, *sd = v + G, *rc = v + 2 * G, *rd = v + 3 * G;
    emb_chunk_layout(x, k, 1, rc, rd, sc, sd); /* owner -> requester, in rows */
    x->xf[EMB_X_ROWS0 + k].p2p_asked = x->hold; /* chunk 1 is posted at a test */
    emb_xfer_post(t, x->c, &x->xf[EMB_X_ROWS0 + k], EMB_X_ROWS0 + k,
                  byte_wire ? COMM_BYTE : COMM_F32, byte_wire ? rb : dim,
                  byte_wire ? (void *)x->served_w : (void *)x->served, sc, sd,
                  byte_wire ? (void *)x->rows_w : (void *)recv_f32, rc, rd, COMM_PH_ROWS);
    free(v);
}

/* A held chunk 1 (emb_output_hold) leaves now. */
static void release_held(struct emb_exchange *x)
{
    if (!x->held)
        return;
    x->held = 0;
    post_chunk(x, 1);
}

/* ... if chunk 0's exchange is done at this rank (a test). */
static void release_if_done(struct emb_exchange *x)
{
    if (x->held && emb_xfer_test(&x->xf[EMB_X_ROWS0]))
        release_held(x);
}

void emb_output_hold(struct emb_exchange *x) { x->hold = 1; }

void emb_output_post(struct emb_table *t, struct comm *c, struct emb_exchange *x,
                     struct emb_times *tm)
{
    const int G = t->G, dim = t->width; /* values per row on the wire */
    const struct backend_ops *be = t->be;
    double t0 = clock_seconds();
    emb_input_serve(c, x);
    double t1 = clock_seconds();
    x->served = emb_buf_get(be, &x->b_served, at_least1(x->nserve) * dim * sizeof(float));
    x->rows = emb_buf_get(be, &x->b_rows, at_least1(x->nuniq) * t->conf.dim * sizeof(float));
    if (t->sub) /* c arrives here; emb_output_wait rebuilds the rows */
        x->cw = emb_buf_get(be, &x->b_cw, at_least1(x->nuniq) * dim * sizeof(float));
    /* the wire: floats (fp32), else rb bytes per row encoded here, decoded
     * by the requester in emb_output_wait */
    const int byte_wire = x->rcodec != EMB_CODEC_FP32;
    const int64_t rb = emb_codec_row_bytes(x->rcodec, dim);
    if (byte_wire) {
        x->served_w = emb_buf_get(be, &x->b_served_w, at_least1(x->nserve) * (size_t)rb);
        x->rows_w = emb_buf_get(be, &x->b_rows_w, at_least1(x->nuniq) * (size_t)rb);
    }
    /* rows go back the way the ids came, chunk 0 first: its rows are
     * gathered and posted before chunk 1's are gathered (held: and posted
     * once chunk 0 is done, emb_output_hold) */
    int64_t *v = xmalloc((size_t)G * 4 * sizeof *v);
    int64_t *sc = v, *sd = v + G, *rc = v + 2 * G, *rd = v + 3 * G;
    double t2 = t1;
    emb_count_lookup(t, x);
    for (int k = 0; k < 2; k++) {
        emb_chunk_layout(x, k, 1, rc, rd, sc, sd); /* owner -> requester, in rows */
        double g0 = clock_seconds();
        for (int p = 0; p < G; p++) {
            serve_rows(t, x, sd[p], sc[p]);
            if (byte_wire) /* every row, those this rank serves itself included */
                emb_wire_encode(x, x->rcodec, sc[p], dim, x->served + sd[p] * dim,
                                x->served_w + sd[p] * rb, 0);
            if (x->counted && p != t->shard) {
                t->wire.rows += sc[p] * rb;
                if (comm_peer_remote(c, COMM_EMB, p))
                    t->wire.rows_xnode += sc[p] * rb;
            }
        }
        t2 += clock_seconds() - g0;
        if (k == 1 && x->hold)
            x->held = 1;
        else
            post_chunk(x, k);
    }
    free(v);
    release_if_done(x);
    if (tm) { /* t2 - t1: the time spent gathering; the rest: posting */
        tm->ids += t1 - t0;
        tm->gather += t2 - t1;
        tm->rows += clock_seconds() - t2;
    }
}

void emb_output_wait(struct emb_exchange *x, int k, struct emb_times *tm)
{
    double t0 = clock_seconds();
    const struct emb_table *t = x->tab;
    if (x->pf_on) { /* prefetched: both chunks' rows come together */
        if (!x->rmade[0]) {
            emb_prefetch_wait(x);
            comm_trace_consumed(t->index, EMB_X_PF);
            comm_trace_consumed(t->index, EMB_X_LATE);
        }
        if (tm)
            tm->rows += clock_seconds() - t0;
        return;
    }
    if (k == 1)
        release_held(x);
    emb_xfer_wait(&x->xf[EMB_X_ROWS0 + k]);
    if (k == 0)
        release_held(x); /* chunk 0 done here: chunk 1 leaves behind it */
    if (!x->rmade[k] && (x->rows_w || x->cw)) { /* chunk k's spans from the wire */
        const int64_t rb = emb_codec_row_bytes(x->rcodec, x->width);
        float *dst = x->cw ? x->cw : x->rows;
        for (int p = 0; p < x->G; p++) {
            const struct emb_span *sp = &x->spans[k * x->G + p];
            if (x->rows_w && sp->n)
                t->be->emb_decode((int)x->rcodec, sp->n, x->width, x->rows_w + sp->first * rb,
                                  dst + sp->first * x->width);
            if (x->cw) /* E = F(i) + U c[i]: host tables */
                emb_subspace_expand(t->sub, &t->conf, sp->n, x->uniq + sp->first,
                                    x->cw + sp->first * x->width, x->rows + sp->first * x->dim);
        }
    }
    if (!x->rmade[k])
        comm_trace_consumed(t->index, EMB_X_ROWS0 + k);
    x->rmade[k] = 1;
    if (tm)
        tm->rows += clock_seconds() - t0;
}

void emb_exchange_progress(struct emb_exchange *x)
{
    input_test(x);
    release_if_done(x);
    for (int k = EMB_X_ROWS0; k < EMB_NX; k++)
        emb_xfer_test(&x->xf[k]);
}

int64_t emb_exchange_nuniq(const struct emb_exchange *x) { return x->nuniq; }
const int64_t *emb_exchange_inverse(const struct emb_exchange *x) { return x->inverse; }
const float *emb_exchange_rows(const struct emb_exchange *x) { return x->rows; }
const int64_t *emb_exchange_uniq(const struct emb_exchange *x) { return x->uniq; }

float *emb_exchange_grads(struct emb_exchange *x)
{
    if (!x->gu)
        x->gu = emb_buf_get(x->tab->be, &x->b_gu, at_least1(x->nuniq) * x->dim * sizeof(float));
    return x->gu;
}

int emb_exchange_spans(const struct emb_exchange *x, int k, const struct emb_span **spans)
{
    *spans = x->spans + k * x->G;
    return x->G;
}

/* The blocking lookup's exchange: ids in, every row out (not counted). */
static struct emb_exchange *lookup_rows(struct emb_table *t, struct comm *c, const int64_t *ids,
                                        int64_t n, struct emb_times *tm)
{
    ids_in(t, c, ids, n);
    struct emb_exchange *x = input_dist(t, c, emb_xstate(t)->ids.p, n, n, 0, tm);
    emb_output_post(t, c, x, tm);
    emb_output_wait(x, 0, tm);
    emb_output_wait(x, 1, tm);
    return x;
}

struct emb_exchange *emb_lookup(struct emb_table *t, struct comm *c, const int64_t *ids,
                                int64_t n, float *out, struct emb_times *tm)
{
    const int dim = t->conf.dim;
    const struct backend_ops *be = t->be;
    struct emb_exchange *x = lookup_rows(t, c, ids, n, tm);
    double t3 = clock_seconds();
    if (backend_is_host(be)) {
        for (int64_t i = 0; i < n; i++)
            memcpy(out + i * dim, x->rows + x->inverse[i] * dim, (size_t)dim * sizeof(float));
    } else { /* gathered on the device, then down */
        float *d = be->alloc(at_least1(n) * dim * sizeof(float));
        be->gather_rows(n, dim, x->rows, x->inverse, d);
        be->to_host(out, d, (size_t)n * dim * sizeof(float));
        be->free(d);
    }
    if (tm)
        tm->expand += clock_seconds() - t3;
    return x;
}

struct emb_exchange *emb_lookup_dev(struct emb_table *t, struct comm *c, const int64_t *ids,
                                    int64_t n, float *out, struct emb_times *tm)
{
    const struct backend_ops *be = t->be;
    if (backend_is_host(be))
        return emb_lookup(t, c, ids, n, out, tm);
    struct emb_exchange *x = lookup_rows(t, c, ids, n, tm);
    double t3 = clock_seconds();
    if (n) /* gathered where the rows are: nothing comes down */
        be->gather_rows(n, t->conf.dim, x->rows, x->inverse, out);
    if (tm)
        tm->expand += clock_seconds() - t3;
    return x;
}

void emb_exchange_free(struct emb_exchange *x)
{
    if (!x)
        return;
    emb_input_wait(x->c, x); /* drain: every peer takes part in the same exchanges */
    release_held(x);
    for (int k = EMB_X_ROWS0; k < EMB_NX; k++)
        emb_xfer_wait(&x->xf[k]);
    if (emb_xstate(x->tab)->mode != EMB_XF_HOST) { /* the codecs' flags, read once */
        emb_codec_check(x, 0);
        if (x->gposted[0] || x->gposted[1])
            emb_codec_check(x, 1);
    }
    emb_xstate_put(x->tab, x);
}
