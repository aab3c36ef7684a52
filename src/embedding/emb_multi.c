/* emb_multi: one lookup of many tables, the sharded ones in one exchange;
 * see emb_multi.h. */
#include "embedding/emb_multi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/stage.h"
#include "base/check.h"
#include "base/exact.h"
#include "embedding/emb_cache.h"
#include "embedding/emb_exact.h"

/* One table of the lookup. */
struct mtab {
    struct emb_table *t;
    int sharded, width;
    int64_t n, nuniq;
    int64_t *uniq;      /* [nuniq] grouped by owner, ascending within an owner */
    int64_t *inverse;   /* [n] request -> unique row */
    int64_t *scnt;      /* [G] unique ids per owner (sharded) */
    int64_t *sfirst;    /* [G] the first of them in uniq */
    int64_t *rcnt;      /* [G] ids this rank serves to each requester */
    float *rows;        /* [nuniq, width] */
    const float *src;   /* a cached table's read-through rows (emb_cache_resolve), else
                           NULL: the served rows are read from t->w */
};

struct emb_multi {
    struct comm *c;
    int nt, ns, G;            /* tables, of which sharded; emb group size */
    int sidx[EMB_MULTI_MAX];  /* the sharded tables' indexes */
    struct mtab tab[EMB_MULTI_MAX];
    int64_t *cnt;             /* [2 G ns]: counts sent [G][ns], then received */
    struct comm_request req;
    int counts_pending, done;
    int64_t *serve;           /* ids served: per requester, table after table */
    int64_t *sc, *sd, *rc, *rd; /* [G] counts and displacements (elements) */
    int train;                /* a training lookup (dynamic tables: emb_multi_train) */
    int exact;                /* emb_multi_backward_exact: the gradients travel and are summed
                                 as packed exact sums (base/exact.h), EXACT_LIMBS words a value
                                 in float-sized slots (widths x EXACT_LIMBS meanwhile) */
    const struct backend_ops *dbe; /* the tables' device (embedding.placement = device), or
                                      NULL: host tables */
};

/* --- device tables ------------------------------------------------------------------ */

/* What the lookups of device tables keep across calls (one device per
 * process): the ids staged up (stage.h: no host wait), the rows gathered
 * and the gradients applied, in device buffers that grow to the largest
 * call. Before staging, the comm stream waits for the compute stream's
 * work so far (the previous call's operations read these buffers). */
static struct multi_dev {
    const struct backend_ops *be;
    struct stage *st;
    struct backend_event *ev;
    void *buf[4]; /* lookup ids, rows; backward ids, gradients */
    size_t cap[4];
} md;
enum { MD_IDS, MD_ROWS, MD_GIDS, MD_GRADS };

static void *md_buf(int which, size_t bytes)
{
    if (bytes < 8)
        bytes = 8;
    if (bytes > md.cap[which]) { /* with room: lookups vary */
        md.be->free(md.buf[which]);
        md.cap[which] = bytes + bytes / 2;
        md.buf[which] = md.be->alloc(md.cap[which]);
    }
    return md.buf[which];
}

/* Start staging to be's buffers (after the compute stream's work so far). */
static void md_begin(const struct backend_ops *be)
{
    if (md.be != be) {
        emb_multi_device_free();
        md.be = be;
        md.st = stage_new(be);
        md.ev = be->event_new(0);
    }
    be->event_record(md.ev, BACKEND_COMPUTE);
    be->stream_wait(BACKEND_COMM, md.ev);
}

void emb_multi_device_free(void)
{
    if (!md.be)
        return;
    for (int i = 0; i < 4; i++)
        md.be->free(md.buf[i]);
    stage_free(md.st);
    md.be->event_free(md.ev);
    memset(&md, 0, sizeof md);
}

static void *alloc0(size_t n, size_t size) { return xcalloc(n ? n : 1, size); }

static void displs(const int64_t *counts, int64_t *d, int G)
{
    int64_t s = 0;
    for (int p = 0; p < G; p++) {
        d[p] = s;
        s += counts[p];
    }
}

struct emb_multi *emb_multi_input(struct emb_table *const *t, int nt, struct comm *c,
                                  const int64_t *const *ids, const int64_t *n)
{
    if (nt < 0 || nt > EMB_MULTI_MAX)
        fatal("emb_multi: %d tables (at most %d)", nt, EMB_MULTI_MAX);
    struct emb_multi *x = xcalloc(1, sizeof *x);
    x->c = c;
    x->nt = nt;
    x->G = c->g[COMM_EMB].size;
    const int G = x->G;
    char err[512];
    for (int k = 0; k < nt; k++) {
        struct mtab *m = &x->tab[k];
        m->t = t[k];
        m->n = n[k];
        m->width = t[k]->width;
        m->sharded = !t[k]->conf.replicated;
        const int dev = !backend_is_host(t[k]->be);
        if ((!t[k]->ready && !dev) || t[k]->sub)
            fatal("emb_multi: table '%s' must be a plain table (not a subspace one)",
                  t[k]->conf.name);
        if (k > 0 && (dev ? x->dbe != t[k]->be : x->dbe != NULL))
            fatal("emb_multi: table '%s' is not in the memory of the others", t[k]->conf.name);
        if (dev)
            x->dbe = t[k]->be;
        if (m->sharded && t[k]->G != G)
            fatal("emb_multi: table '%s' is sharded over %d ranks, the emb group has %d",
                  t[k]->conf.name, t[k]->G, G);
        if (emb_check_ids(&t[k]->conf, ids[k], n[k], c->rank, err, sizeof err))
            fatal("%s", err);
        const int Gt = m->sharded ? G : 1;
        m->uniq = alloc0((size_t)n[k], sizeof *m->uniq);
        m->inverse = alloc0((size_t)n[k], sizeof *m->inverse);
        int64_t *counts = alloc0((size_t)(2 * Gt), sizeof *counts);
        if (t[k]->dyn && !m->sharded)
            fatal("emb_multi: table '%s' is dynamic: it must be sharded", t[k]->conf.name);
        m->nuniq = t[k]->dyn ? emb_dyn_dedup(n[k], ids[k], n[k], Gt, m->uniq, m->inverse, counts)
                             : backend_cpu.emb_dedup(n[k], ids[k], n[k], Gt, m->uniq, m->inverse,
                                                     counts, t[k]->conf.rows);
        m->rows = alloc0((size_t)(m->nuniq * m->width), sizeof *m->rows);
        if (!m->sharded) { /* replicated: read in emb_multi_lookup */
            free(counts);
            continue;
        }
        m->scnt = counts; /* [G] (the second half: chunk 0 counts, unused) */
        m->sfirst = alloc0((size_t)G, sizeof *m->sfirst);
        m->rcnt = alloc0((size_t)G, sizeof *m->rcnt);
        displs(m->scnt, m->sfirst, G);
        x->sidx[x->ns++] = k;
    }
    if (x->ns == 0)
        return x;
    x->cnt = alloc0((size_t)(2 * G * x->ns), sizeof *x->cnt);
    for (int p = 0; p < G; p++)
        for (int j = 0; j < x->ns; j++)
            x->cnt[p * x->ns + j] = x->tab[x->sidx[j]].scnt[p];
    comm_ialltoall_i64(c, COMM_EMB, x->cnt, x->ns, x->cnt + G * x->ns, COMM_PH_COUNTS, &x->req);
    x->counts_pending = 1;
    return x;
}

void emb_multi_train(struct emb_multi *x) { x->train = 1; }

void emb_multi_progress(struct emb_multi *x)
{
    if (x && x->counts_pending && comm_test(&x->req))
        x->counts_pending = 0;
}

/* Per-peer element counts of the sharded tables' ids (unit 0) or rows
 * (unit 1: width floats per id), requester side (req) or owner side. */
static void peer_counts(const struct emb_multi *x, int rows, int req, int64_t *count)
{
    for (int p = 0; p < x->G; p++) {
        count[p] = 0;
        for (int j = 0; j < x->ns; j++) {
            const struct mtab *m = &x->tab[x->sidx[j]];
            count[p] += (req ? m->scnt[p] : m->rcnt[p]) * (rows ? m->width : 1);
        }
    }
}

/* The floats of one exchange of the sharded tables' rows (grads = 0: owner
 * -> requester) or gradients (grads = 1: requester -> owner): send counts,
 * displacements, receive counts, displacements per peer ([4G], free()
 * it), and the send (*out) and receive (*in) buffers they size. */
static int64_t *float_layout(const struct emb_multi *x, int grads, float **out, float **in)
{
    const int G = x->G;
    int64_t *l = alloc0((size_t)(4 * G), sizeof *l);
    peer_counts(x, 1, grads, l);
    peer_counts(x, 1, !grads, l + 2 * G);
    displs(l, l + G, G);
    displs(l + 2 * G, l + 3 * G, G);
    *out = alloc0((size_t)(l[2 * G - 1] + l[G - 1]), sizeof **out);
    *in = alloc0((size_t)(l[4 * G - 1] + l[3 * G - 1]), sizeof **in);
    return l;
}

/* Sharded table j's served ids in serve[] (x->serve, or its copy in the
 * tables' device memory) as segments seg[nseg], n[nseg] ([G] each), one
 * per requester, those that follow one another as one; returns nseg. */
static int multi_segs(const struct emb_multi *x, int j, int64_t *serve, int64_t **seg,
                      int64_t *n)
{
    const int G = x->G;
    int nseg = 0;
    for (int p = 0; p < G; p++) {
        int64_t at = x->rd[p];
        for (int q = 0; q < j; q++)
            at += x->tab[x->sidx[q]].rcnt[p];
        const int64_t np = x->tab[x->sidx[j]].rcnt[p];
        if (nseg > 0 && seg[nseg - 1] + n[nseg - 1] == serve + at)
            n[nseg - 1] += np;
        else {
            seg[nseg] = serve + at;
            n[nseg++] = np;
        }
    }
    return nseg;
}

/* The served ids of the dynamic sharded tables made virtual ids, in serve[]
 * (as multi_segs'): their lookups (emb_dyn_map_tables; x->train: a
 * training one), all at once. */
static void multi_map(struct emb_multi *x, int64_t *serve)
{
    const int G = x->G;
    struct emb_table *t[EMB_MULTI_MAX];
    int nseg[EMB_MULTI_MAX], m = 0;
    int64_t **seg[EMB_MULTI_MAX], *n[EMB_MULTI_MAX];
    for (int j = 0; j < x->ns; j++) {
        if (!x->tab[x->sidx[j]].t->dyn)
            continue;
        t[m] = x->tab[x->sidx[j]].t;
        seg[m] = alloc0((size_t)G, sizeof *seg[m]);
        n[m] = alloc0((size_t)G, sizeof *n[m]);
        nseg[m] = multi_segs(x, j, serve, seg[m], n[m]);
        m++;
    }
    if (m)
        emb_dyn_map_tables(m, t, nseg, (int64_t *const *const *)seg, (const int64_t *const *)n,
                           x->train);
    for (int k = 0; k < m; k++) {
        free(seg[k]);
        free(n[k]);
    }
}

/* The served ids of the cached sharded tables (emb_cache.h) in x->serve
 * (host memory) resolved by their caches, one call a table (x->train: a
 * training lookup, its misses fetched now; else read through into m->src)
 * and made virtual ids in place, before they go up. */
static void cache_map(struct emb_multi *x)
{
    const int G = x->G;
    int64_t **seg = alloc0((size_t)G, sizeof *seg), *n = alloc0((size_t)G, sizeof *n);
    for (int j = 0; j < x->ns; j++) {
        struct mtab *m = &x->tab[x->sidx[j]];
        if (!m->t->cache)
            continue;
        const int nseg = multi_segs(x, j, x->serve, seg, n);
        int64_t total = 0, at = 0;
        for (int i = 0; i < nseg; i++)
            total += n[i];
        int64_t *ids = alloc0((size_t)total, sizeof *ids);
        for (int i = 0; i < nseg; at += n[i++])
            memcpy(ids + at, seg[i], (size_t)n[i] * sizeof *ids);
        m->src = emb_cache_resolve(m->t, ids, total, x->train, 0);
        emb_cache_post(m->t);
        at = 0;
        for (int i = 0; i < nseg; at += n[i++])
            memcpy(seg[i], ids + at, (size_t)n[i] * sizeof *ids);
        free(ids);
    }
    free(seg);
    free(n);
}

/* Device tables: every row a lookup reads, gathered on the device from
 * ids staged up and copied to the host at once (one host wait): the
 * replicated tables' unique rows into their m->rows, then the sharded
 * tables' served rows ([nout] floats: per requester, table after table,
 * x->serve's order) into out. Dynamic tables: their served ids are made
 * virtual ids there (emb_dyn_map: emb_dyn_dev.c, a host wait of its own
 * in a training lookup) and come back into x->serve with the rows. */
static void dev_rows(struct emb_multi *x, float *out, int64_t nout)
{
    const struct backend_ops *be = x->dbe;
    const int G = x->G;
    const int64_t nserve = x->ns ? x->rd[G - 1] + x->rc[G - 1] : 0;
    int64_t nid = 0, nf = 0;
    int dyn = 0;
    for (int k = 0; k < x->nt; k++) {
        dyn |= x->tab[k].t->dyn != NULL;
        if (!x->tab[k].sharded) {
            nid += x->tab[k].nuniq;
            nf += x->tab[k].nuniq * x->tab[k].width;
        }
    }
    md_begin(be);
    int64_t *dids = md_buf(MD_IDS, (size_t)(nid + nserve) * sizeof *dids);
    /* the rows, then (dynamic tables) the served virtual ids, 8-byte aligned */
    const size_t rows_b = ((size_t)(nf + nout) * sizeof(float) + 7) / 8 * 8;
    const size_t back_b = rows_b + (dyn ? (size_t)nserve * sizeof *dids : 0);
    float *drows = md_buf(MD_ROWS, back_b);
    int64_t ai = 0, af = 0;
    for (int k = 0; k < x->nt; k++) {
        const struct mtab *m = &x->tab[k];
        if (m->sharded)
            continue;
        stage_up(md.st, dids + ai, m->uniq, (size_t)m->nuniq * sizeof *dids);
        be->emb_gather_shard(m->nuniq, m->width, m->t->w, dids + ai, 1, drows + af);
        ai += m->nuniq;
        af += m->nuniq * m->width;
    }
    cache_map(x); /* cached tables: their served ids to slots, on the host */
    stage_up(md.st, dids + ai, x->serve, (size_t)nserve * sizeof *dids);
    int64_t *dserve = dids + ai;
    if (dyn) /* dynamic tables: the served ids to slots */
        multi_map(x, dserve);
    for (int p = 0; p < G && x->ns; p++) /* as the host's loop: out's layout */
        for (int j = 0; j < x->ns; j++) {
            const struct mtab *m = &x->tab[x->sidx[j]];
            be->emb_gather_shard(m->rcnt[p], m->width, m->src ? m->src : m->t->w, dids + ai, G,
                                 drows + af);
            ai += m->rcnt[p];
            af += m->rcnt[p] * m->width;
        }
    if (dyn && nserve) /* the virtual ids behind the rows: one copy down */
        be->copy((char *)drows + rows_b, dserve, (size_t)nserve * sizeof *dids);
    float *h = alloc0(back_b / sizeof *h, sizeof *h);
    be->to_host(h, drows, back_b);
    if (dyn && nserve)
        memcpy(x->serve, (char *)h + rows_b, (size_t)nserve * sizeof *x->serve);
    af = 0;
    for (int k = 0; k < x->nt; k++) {
        struct mtab *m = &x->tab[k];
        if (m->sharded)
            continue;
        memcpy(m->rows, h + af, (size_t)(m->nuniq * m->width) * sizeof *h);
        af += m->nuniq * m->width;
    }
    if (nout)
        memcpy(out, h + nf, (size_t)nout * sizeof *h);
    free(h);
}

void emb_multi_lookup(struct emb_multi *x)
{
    if (x->done)
        return;
    x->done = 1;
    if (x->dbe && x->ns == 0) { /* replicated device tables alone */
        dev_rows(x, NULL, 0);
        return;
    }
    /* replicated tables: every row is here, read now (after the updates
     * applied before this call, as the owners read theirs) */
    for (int k = 0; k < x->nt && !x->dbe; k++) {
        struct mtab *m = &x->tab[k];
        if (m->sharded)
            continue;
        emb_table_ready(m->t, m->uniq, m->nuniq);
        backend_cpu.emb_gather_shard(m->nuniq, m->width, m->t->w, m->uniq, 1, m->rows);
    }
    const int G = x->G, ns = x->ns;
    if (ns == 0)
        return;
    if (x->counts_pending) {
        comm_wait(&x->req);
        x->counts_pending = 0;
    }
    for (int p = 0; p < G; p++)
        for (int j = 0; j < ns; j++)
            x->tab[x->sidx[j]].rcnt[p] = x->cnt[G * ns + p * ns + j];
    x->sc = alloc0((size_t)(4 * G), sizeof *x->sc);
    x->sd = x->sc + G;
    x->rc = x->sc + 2 * G;
    x->rd = x->sc + 3 * G;
    /* ids: per owner, table after table */
    peer_counts(x, 0, 1, x->sc);
    peer_counts(x, 0, 0, x->rc);
    displs(x->sc, x->sd, G);
    displs(x->rc, x->rd, G);
    const int64_t nsend = x->sd[G - 1] + x->sc[G - 1], nserve = x->rd[G - 1] + x->rc[G - 1];
    int64_t *sids = alloc0((size_t)nsend, sizeof *sids);
    int64_t at = 0;
    for (int p = 0; p < G; p++)
        for (int j = 0; j < ns; j++) {
            const struct mtab *m = &x->tab[x->sidx[j]];
            memcpy(sids + at, m->uniq + m->sfirst[p], (size_t)m->scnt[p] * sizeof *sids);
            at += m->scnt[p];
        }
    x->serve = alloc0((size_t)nserve, sizeof *x->serve);
    comm_alltoallv(x->c, COMM_EMB, COMM_I64, sids, x->sc, x->sd, x->serve, x->rc, x->rd,
                   COMM_PH_IDS);
    free(sids);
    /* rows: the owner reads them from its shards, per requester table after table */
    float *out, *in;
    int64_t *fsc = float_layout(x, 0, &out, &in), *fsd = fsc + G, *frc = fsc + 2 * G,
            *frd = fsc + 3 * G;
    if (!x->dbe) /* dynamic tables: the served ids to slots (emb_dyn.h; device tables:
                    in dev_rows) */
        multi_map(x, x->serve);
    for (int p = 0; p < G; p++) {
        int64_t f_at = fsd[p], id_at = x->rd[p];
        for (int j = 0; j < ns; j++) {
            struct mtab *m = &x->tab[x->sidx[j]];
            const int64_t *ids = x->serve + id_at;
            for (int64_t i = 0; i < m->rcnt[p] && !m->t->dyn; i++)
                if (ids[i] % G != m->t->shard)
                    fatal("emb_multi: table '%s': rank %d asked shard %d for id %lld",
                          m->t->conf.name, p, m->t->shard, (long long)ids[i]);
            if (!x->dbe) {
                emb_table_ready(m->t, ids, m->rcnt[p]);
                backend_cpu.emb_gather_shard(m->rcnt[p], m->width, m->t->w, ids, G, out + f_at);
            }
            f_at += m->rcnt[p] * m->width;
            id_at += m->rcnt[p];
        }
    }
    if (x->dbe) /* device tables: the replicated tables' rows and these, gathered there */
        dev_rows(x, out, fsd[G - 1] + fsc[G - 1]);
    comm_alltoallv(x->c, COMM_EMB, COMM_F32, out, fsc, fsd, in, frc, frd, COMM_PH_ROWS);
    for (int p = 0; p < G; p++) {
        int64_t f_at = frd[p];
        for (int j = 0; j < ns; j++) {
            struct mtab *m = &x->tab[x->sidx[j]];
            memcpy(m->rows + m->sfirst[p] * m->width, in + f_at,
                   (size_t)(m->scnt[p] * m->width) * sizeof *in);
            f_at += m->scnt[p] * m->width;
        }
    }
    free(out);
    free(in);
    free(fsc);
}

int64_t emb_multi_nuniq(const struct emb_multi *x, int k) { return x->tab[k].nuniq; }
const int64_t *emb_multi_inverse(const struct emb_multi *x, int k) { return x->tab[k].inverse; }
const float *emb_multi_rows(const struct emb_multi *x, int k) { return x->tab[k].rows; }
const int64_t *emb_multi_uniq(const struct emb_multi *x, int k) { return x->tab[k].uniq; }

/* --- backward -------------------------------------------------------------------- */

/* Per-table gradient lists: ids[k] [n[k]], g[k] [n[k], width_k]. */
struct glist {
    int64_t *ids[EMB_MULTI_MAX], n[EMB_MULTI_MAX];
    float *g[EMB_MULTI_MAX];
};

/* g [n, w] summed per key (the backend's emb_sum_by_id, host memory) into
 * uid, out; returns the number of distinct keys (the -1 after them
 * dropped). */
static int64_t sum_by_id(const struct emb_multi *x, int64_t n, int w, const int64_t *keys,
                         const float *g, int64_t *uid, float *out)
{
    if (x->exact) { /* packed exact sums in, packed exact sums out: integer adds */
        const int dim = w / EXACT_LIMBS;
        float *vals = alloc0((size_t)(n * dim), sizeof *vals);
        int64_t *sums = alloc0((size_t)(n * w), sizeof *sums);
        const int64_t k = emb_exact_sum_by_id(n, dim, keys, (const uint32_t *)g, uid, vals, sums);
        exact_pack(sums, k * dim, (uint32_t *)out);
        free(vals);
        free(sums);
        return k;
    }
    backend_cpu.emb_sum_by_id(n, w, keys, g, uid, out, 0);
    int64_t k = 0;
    while (k < n && uid[k] >= 0)
        k++;
    return k;
}

/* Sum the lists of the tables idx[0 .. m) over group grp: every rank's
 * entries are gathered in rank order and summed per id (emb_sum_by_id: in
 * that order), the lists replaced by the sums, the same on every rank. */
static void group_sum(struct emb_multi *x, enum comm_group grp, const int *idx, int m,
                      struct glist *l)
{
    struct comm *c = x->c;
    const int R = c->g[grp].size;
    int64_t *cnt = alloc0((size_t)m, sizeof *cnt), *all = alloc0((size_t)(R * m), sizeof *all);
    for (int j = 0; j < m; j++)
        cnt[j] = l->n[idx[j]];
    comm_allgather_bytes(c, grp, cnt, (size_t)m * sizeof *cnt, all);
    int64_t *ni = alloc0((size_t)R, sizeof *ni), *nf = alloc0((size_t)R, sizeof *nf);
    int64_t tot_i = 0, tot_f = 0, mine_i = 0, mine_f = 0;
    for (int r = 0; r < R; r++)
        for (int j = 0; j < m; j++) {
            ni[r] += all[r * m + j];
            nf[r] += all[r * m + j] * x->tab[idx[j]].width;
        }
    for (int r = 0; r < R; r++)
        tot_i += ni[r], tot_f += nf[r];
    mine_i = ni[c->g[grp].rank];
    mine_f = nf[c->g[grp].rank];
    int64_t *sid = alloc0((size_t)mine_i, sizeof *sid), *rid = alloc0((size_t)tot_i, sizeof *rid);
    float *sg = alloc0((size_t)mine_f, sizeof *sg), *rg = alloc0((size_t)tot_f, sizeof *rg);
    int64_t ai = 0, af = 0;
    for (int j = 0; j < m; j++) {
        const int k = idx[j], w = x->tab[k].width;
        memcpy(sid + ai, l->ids[k], (size_t)l->n[k] * sizeof *sid);
        memcpy(sg + af, l->g[k], (size_t)(l->n[k] * w) * sizeof *sg);
        ai += l->n[k];
        af += l->n[k] * w;
    }
    comm_allgatherv(c, grp, COMM_I64, sid, mine_i, rid, ni, COMM_PH_REPLICA);
    comm_allgatherv(c, grp, COMM_F32, sg, mine_f, rg, nf, COMM_PH_REPLICA);
    /* table j's entries of rank r start after the earlier ranks' and tables' */
    int64_t *oi = alloc0((size_t)R, sizeof *oi), *of = alloc0((size_t)R, sizeof *of);
    for (int r = 1; r < R; r++)
        oi[r] = oi[r - 1] + ni[r - 1], of[r] = of[r - 1] + nf[r - 1];
    for (int j = 0; j < m; j++) {
        const int k = idx[j], w = x->tab[k].width;
        int64_t total = 0;
        for (int r = 0; r < R; r++)
            total += all[r * m + j];
        int64_t *ids = alloc0((size_t)total, sizeof *ids);
        float *g = alloc0((size_t)(total * w), sizeof *g);
        int64_t at = 0;
        for (int r = 0; r < R; r++) {
            const int64_t cnt_r = all[r * m + j];
            memcpy(ids + at, rid + oi[r], (size_t)cnt_r * sizeof *ids);
            memcpy(g + at * w, rg + of[r], (size_t)(cnt_r * w) * sizeof *g);
            oi[r] += cnt_r;
            of[r] += cnt_r * w;
            at += cnt_r;
        }
        free(l->ids[k]);
        free(l->g[k]);
        l->ids[k] = alloc0((size_t)total, sizeof *l->ids[k]);
        l->g[k] = alloc0((size_t)(total * w), sizeof *l->g[k]);
        l->n[k] = sum_by_id(x, total, w, ids, g, l->ids[k], l->g[k]);
        free(ids);
        free(g);
    }
    free(oi);
    free(of);
    free(sid);
    free(rid);
    free(sg);
    free(rg);
    free(ni);
    free(nf);
    free(cnt);
    free(all);
}

/* Packed exact sums [n, width] (the lists' floats while x->exact) to their
 * values in place, the first row's limbs kept in x0 [width / EXACT_LIMBS]
 * [EXACT_LIMBS] (the shared row of a dynamic table). */
static void unpack_sums(float *g, int64_t n, int dim, int64_t *x0)
{
    int64_t *acc = alloc0((size_t)dim * EXACT_LIMBS, sizeof *acc);
    float *v = alloc0((size_t)dim, sizeof *v);
    for (int64_t i = 0; i < n; i++) { /* row i's values fit where its words were */
        memset(acc, 0, (size_t)dim * EXACT_LIMBS * sizeof *acc);
        exact_unpack_add(acc, (const uint32_t *)(g + i * dim * EXACT_LIMBS), dim);
        if (i == 0)
            memcpy(x0, acc, (size_t)dim * EXACT_LIMBS * sizeof *acc);
        exact_to_float(acc, dim, 0, v);
        memcpy(g + i * dim, v, (size_t)dim * sizeof *v);
    }
    free(acc);
    free(v);
}

void emb_multi_backward_exact(struct emb_multi *x, int64_t *const *xg)
{
    float *gu[EMB_MULTI_MAX];
    emb_multi_lookup(x); /* before the widths change */
    for (int k = 0; k < x->nt; k++) {
        struct mtab *m = &x->tab[k];
        gu[k] = alloc0((size_t)(m->nuniq * m->width * EXACT_LIMBS), sizeof *gu[k]);
        exact_pack(xg[k], m->nuniq * m->width, (uint32_t *)gu[k]);
        m->width *= EXACT_LIMBS;
    }
    x->exact = 1;
    emb_multi_backward(x, gu);
    x->exact = 0;
    for (int k = 0; k < x->nt; k++) {
        x->tab[k].width /= EXACT_LIMBS;
        free(gu[k]);
    }
}

/* Device tables: the summed gradient lists l (host) staged up, each
 * table's sparse optimizer on its rows there (no host wait); l freed. A
 * dynamic table's shared unadmitted row: its gradient summed over the job
 * on the host lists first (emb_dyn_shared_grad_host, as a host table's). */
static void dev_update(struct emb_multi *x, struct glist *l)
{
    const struct backend_ops *be = x->dbe;
    int64_t *uid[EMB_MULTI_MAX];
    float *ug[EMB_MULTI_MAX];
    for (int k = 0; k < x->nt; k++) {
        uid[k] = l->ids[k];
        ug[k] = l->g[k];
        if (x->tab[k].t->dyn) /* maybe one more row (the lists then dyn's own) */
            emb_dyn_shared_grad_host(x->tab[k].t, x->c, &uid[k], &ug[k], &l->n[k]);
    }
    int64_t nid = 0, nf = 0;
    for (int k = 0; k < x->nt; k++) {
        nid += l->n[k];
        nf += l->n[k] * x->tab[k].width;
    }
    md_begin(be);
    int64_t *dids = md_buf(MD_GIDS, (size_t)nid * sizeof *dids);
    float *dg = md_buf(MD_GRADS, (size_t)nf * sizeof *dg);
    int64_t ai = 0, af = 0;
    for (int k = 0; k < x->nt; k++) {
        struct emb_table *t = x->tab[k].t;
        stage_up(md.st, dids + ai, uid[k], (size_t)l->n[k] * sizeof *dids);
        stage_up(md.st, dg + af, ug[k], (size_t)(l->n[k] * t->width) * sizeof *dg);
        be->emb_sparse_update(&t->conf.optim, l->n[k], t->width, dids + ai, t->G, dg + af, t->w,
                              t->state, t->state_floats, t->steps);
        ai += l->n[k];
        af += l->n[k] * t->width;
        free(l->ids[k]);
        free(l->g[k]);
    }
}

void emb_multi_backward(struct emb_multi *x, float *const *gu)
{
    emb_multi_lookup(x);
    struct comm *c = x->c;
    const int G = x->G, ns = x->ns;
    struct glist l;
    memset(&l, 0, sizeof l);
    int rep[EMB_MULTI_MAX], nrep = 0;
    for (int k = 0; k < x->nt; k++)
        if (!x->tab[k].sharded) { /* replicated: this rank's unique rows as they are */
            struct mtab *m = &x->tab[k];
            l.n[k] = m->nuniq;
            l.ids[k] = alloc0((size_t)m->nuniq, sizeof *l.ids[k]);
            l.g[k] = alloc0((size_t)(m->nuniq * m->width), sizeof *l.g[k]);
            memcpy(l.ids[k], m->uniq, (size_t)m->nuniq * sizeof *l.ids[k]);
            memcpy(l.g[k], gu[k], (size_t)(m->nuniq * m->width) * sizeof *l.g[k]);
            rep[nrep++] = k;
        }
    if (ns) { /* sharded: the gradients to the owners, one exchange */
        float *out, *in;
        int64_t *fsc = float_layout(x, 1, &out, &in), *fsd = fsc + G, *frc = fsc + 2 * G,
                *frd = fsc + 3 * G;
        for (int p = 0; p < G; p++) {
            int64_t at = fsd[p];
            for (int j = 0; j < ns; j++) {
                const int k = x->sidx[j];
                const struct mtab *m = &x->tab[k];
                memcpy(out + at, gu[k] + m->sfirst[p] * m->width,
                       (size_t)(m->scnt[p] * m->width) * sizeof *out);
                at += m->scnt[p] * m->width;
            }
        }
        comm_alltoallv(c, COMM_EMB, COMM_F32, out, fsc, fsd, in, frc, frd, COMM_PH_GRADS);
        /* owner: per table, the served ids and their gradients in requester order */
        for (int j = 0; j < ns; j++) {
            const int k = x->sidx[j];
            const struct mtab *m = &x->tab[k];
            int64_t total = 0;
            for (int p = 0; p < G; p++)
                total += m->rcnt[p];
            int64_t *ids = alloc0((size_t)total, sizeof *ids);
            float *g = alloc0((size_t)(total * m->width), sizeof *g);
            int64_t at = 0;
            for (int p = 0; p < G; p++) {
                int64_t id_at = x->rd[p], f_at = frd[p];
                for (int q = 0; q < j; q++) { /* the earlier tables of requester p */
                    const struct mtab *mq = &x->tab[x->sidx[q]];
                    id_at += mq->rcnt[p];
                    f_at += mq->rcnt[p] * mq->width;
                }
                memcpy(ids + at, x->serve + id_at, (size_t)m->rcnt[p] * sizeof *ids);
                memcpy(g + at * m->width, in + f_at,
                       (size_t)(m->rcnt[p] * m->width) * sizeof *g);
                at += m->rcnt[p];
            }
            l.ids[k] = alloc0((size_t)total, sizeof *l.ids[k]);
            l.g[k] = alloc0((size_t)(total * m->width), sizeof *l.g[k]);
            l.n[k] = sum_by_id(x, total, m->width, ids, g, l.ids[k], l.g[k]);
            free(ids);
            free(g);
        }
        free(out);
        free(in);
        free(fsc);
        if (c->g[COMM_EMB_REPLICA].size > 1) {
            for (int j = 0; j < ns; j++) /* dynamic: the replicas' slots differ, ids travel */
                if (x->tab[x->sidx[j]].t->dyn)
                    emb_dyn_unmap(x->tab[x->sidx[j]].t, l.ids[x->sidx[j]], l.n[x->sidx[j]]);
            group_sum(x, COMM_EMB_REPLICA, x->sidx, ns, &l);
            for (int j = 0; j < ns; j++)
                if (x->tab[x->sidx[j]].t->dyn)
                    emb_dyn_rebind(x->tab[x->sidx[j]].t, l.ids[x->sidx[j]], l.n[x->sidx[j]]);
        }
    }
    if (nrep)
        group_sum(x, COMM_DP, rep, nrep, &l);
    if (x->dbe) { /* device tables: the sums staged up, the optimizer there */
        dev_update(x, &l);
        return;
    }
    for (int k = 0; k < x->nt; k++) {
        struct emb_table *t = x->tab[k].t;
        emb_table_ready(t, l.ids[k], l.n[k]);
        int64_t *uid = l.ids[k];
        float *ug = l.g[k];
        int64_t *x0 = x->exact ? alloc0((size_t)t->width * EXACT_LIMBS, sizeof *x0) : NULL;
        if (x->exact)
            unpack_sums(ug, l.n[k], t->width, x0);
        if (t->dyn && x->exact) /* the shared unadmitted row: one gradient over the job */
            emb_dyn_shared_grad_exact(t, c, &uid, &ug, &l.n[k], x0);
        else if (t->dyn)
            emb_dyn_shared_grad(t, c, &uid, &ug, &l.n[k]);
        free(x0);
        backend_cpu.emb_sparse_update(&t->conf.optim, l.n[k], t->width, uid, t->G, ug,
                                      t->w, t->state, t->state_floats, t->steps);
        free(l.ids[k]);
        free(l.g[k]);
    }
}

void emb_multi_free(struct emb_multi *x)
{
    if (!x)
        return;
    if (x->counts_pending) /* every peer takes part in the same exchanges */
        comm_wait(&x->req);
    for (int k = 0; k < x->nt; k++) {
        struct mtab *m = &x->tab[k];
        free(m->uniq);
        free(m->inverse);
        free(m->scnt);
        free(m->sfirst);
        free(m->rcnt);
        free(m->rows);
    }
    free(x->cnt);
    free(x->serve);
    free(x->sc);
    free(x);
}
