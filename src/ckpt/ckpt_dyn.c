/* ckpt_dyn: a dynamic table in a checkpoint (embedding/emb_dyn.h;
 * doc/embedding.md, "Dynamic tables").
 *
 * /emb/NAME holds R = rows + 1 rows: ids [R] (int64; row 0 is id 0, the
 * shared unadmitted row), weight [R, width], state [R, state_floats] (an
 * optimizer with state), steps [R] (adam), and the statistics eviction
 * needs, last [R] (the tick of its last lookup) and freq [R] (its lookups);
 * prob [M, 2] (admit > 1: the probation list, id and (tick << 16) |
 * sightings) when not empty; attribute clock (the table's ticks). Every
 * dataset is in ascending id order (row 0 first), whatever P and G wrote
 * it: the same state gives the same datasets at any P (with embedding
 * groups, last and freq count the first group's lookups). The shards of the
 * first embedding group hold the rows; ckpt_dyn_count sorts their keys (id,
 * rank, slot) among all ranks (ckpt_dyn_sort.c: a sample sort, each rank
 * then holding the keys of one range of ids, ascending), and each rank
 * writes its run at the rows given by the runs before it, fetching a
 * round's rows from the ranks holding them as it goes (no copy of a whole
 * shard; a delta's rows the same way; evicted ids and the probation list,
 * small, are sorted whole), collectively through the checkpoint's
 * MPI-IO file, in rounds of at most BLOCK_ROWS rows (all datasets
 * checksummed as the others). A read deals blocks of rows
 * round-robin to every rank, which sends each row to the ranks holding its
 * owner's shard now (a 64-bit mix of the id mod G: any G, any P), which make
 * it a row of their pool: a resume on P' re-hashes every row. */
#include "ckpt/ckpt_dyn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "ckpt/ckpt.h"
#include "ckpt/ckpt_dyn_sort.h"
#include "ckpt/ckpt_priv.h"
#include "train/watchdog.h"

#define BLOCK_ROWS ((int64_t)1 << 15) /* rows per rank per round: a 1 MiB chunk of an int64 vector */

/* What ckpt_dyn_count found and sorted, per table of the registry: the
 * file's rows (R), this rank's first row and count, the collective write
 * rounds; the same of the probation list and of a delta's evicted ids; this
 * rank's runs (ckpt_dyn_sort.h) of the rows' keys (struct row_key), of the
 * probation list and of the evicted ids, written by ckpt_dyn_write. */
static struct dyn_counts {
    int64_t rows, first, mine, rounds;
    int64_t prob, pfirst, pmine, prounds;
    int64_t gone, gfirst, gmine, grounds;
    struct ckpt_dyn_run run, prun, grun;
} counts[EMB_MAX_TABLES];

static int writer(const struct trainer *tr, const struct emb_table *t)
{
    return tr->c->rank < t->G; /* the first embedding group (the replicas are the same) */
}

/* Delta checkpoints (output.checkpoint_delta_every): the write in progress
 * is a delta (ckpt_delta.c sets it). */
static int delta_on;

void ckpt_dyn_set_delta(int on) { delta_on = on; }
int ckpt_dyn_delta_mode(void) { return delta_on; }

/* This shard's rows to write, ascending by id: all of them, or (a delta)
 * those used since the chain's last checkpoint; their number. */
static int64_t select_rows(const struct emb_table *t, int64_t **ids, int64_t **slots)
{
    const int64_t n = emb_dyn_rows(t, ids, slots);
    if (!delta_on)
        return n;
    const int64_t *gone;
    int64_t since, m = 0;
    emb_dyn_delta(t, &gone, &since);
    for (int64_t i = 0; i < n; i++) {
        int64_t last, freq;
        emb_dyn_row_stats(t, (*slots)[i], &last, &freq);
        if (last > since) {
            (*ids)[m] = (*ids)[i];
            (*slots)[m++] = (*slots)[i];
        }
    }
    return m;
}

/* This rank's rows of t to write: their slots (and slot 0, the shared
 * row, on rank 0) and ids (*ids_out); their number *n. */
static int64_t *my_slots(struct trainer *tr, struct emb_table *t, int64_t **ids_out, int64_t *n_out)
{
    int64_t *ids = NULL, *slots = NULL, n = 0;
    if (writer(tr, t))
        n = select_rows(t, &ids, &slots);
    const int z = tr->c->rank == 0;
    int64_t *s = xmalloc((size_t)(n + z + 1) * sizeof *s), *i = xmalloc((size_t)(n + z + 1) * sizeof *i);
    if (z)
        s[0] = 0, i[0] = 0;
    for (int64_t r = 0; r < n; r++)
        s[z + r] = slots[r], i[z + r] = ids[r];
    free(ids);
    free(slots);
    *ids_out = i;
    *n_out = n + z;
    return s;
}

/* What the sort moves of a row: its id, the rank holding it, its slot
 * there (the row itself is fetched while writing, a round at a time). */
struct row_key {
    int64_t id, rank, slot;
};

struct key_src {
    const int64_t *ids, *slots;
    int64_t rank;
};

static void pack_key(const void *ctx, int64_t i, char *o)
{
    const struct key_src *r = ctx;
    const struct row_key k = {r->ids[i], r->rank, r->slots[i]};
    memcpy(o, &k, sizeof k);
}

static void pack_pair(const void *ctx, int64_t i, char *o)
{
    memcpy(o, (const int64_t *)ctx + 2 * i, 16);
}

static void pack_id(const void *ctx, int64_t i, char *o)
{
    memcpy(o, (const int64_t *)ctx + i, 8);
}

void ckpt_dyn_count(struct trainer *tr)
{
    struct comm *c = tr->c;
    int64_t *all = xmalloc((size_t)c->size * 3 * sizeof *all);
    for (int k = 0; k < tr->reg.n; k++) {
        struct emb_table *t = &tr->reg.tables[k];
        if (!t->dyn)
            continue;
        struct dyn_counts *dc = &counts[k];
        ckpt_dyn_run_free(&dc->run);
        ckpt_dyn_run_free(&dc->prun);
        ckpt_dyn_run_free(&dc->grun);
        memset(dc, 0, sizeof *dc);
        const int w = writer(tr, t);
        /* the rows, sorted by id among the ranks */
        int64_t *ids, n, *slots = my_slots(tr, t, &ids, &n);
        const struct key_src src = {ids, slots, c->rank};
        ckpt_dyn_sort(c, ids, n, sizeof(struct row_key), pack_key, &src, BLOCK_ROWS, &dc->run);
        free(ids);
        free(slots);
        /* the probation list */
        int64_t *pairs = NULL;
        const int64_t m = w ? emb_dyn_probation(t, &pairs) : 0;
        int64_t *pid = xmalloc((size_t)(m ? m : 1) * sizeof *pid);
        for (int64_t i = 0; i < m; i++)
            pid[i] = pairs[2 * i];
        ckpt_dyn_sort(c, pid, m, 16, pack_pair, pairs, BLOCK_ROWS, &dc->prun);
        free(pid);
        free(pairs);
        /* a delta's evicted ids */
        if (delta_on) {
            const int64_t *gone = NULL;
            int64_t since;
            const int64_t e = w ? emb_dyn_delta(t, &gone, &since) : 0;
            ckpt_dyn_sort(c, gone, e, 8, pack_id, gone, BLOCK_ROWS, &dc->grun);
        }
        int64_t v[3] = {dc->run.n, dc->prun.n, dc->grun.n};
        comm_allgather_bytes(c, COMM_WORLD, v, sizeof v, all);
        int64_t maxn = 0, maxm = 0, maxe = 0;
        for (int r = 0; r < c->size; r++) {
            if (r < c->rank) {
                dc->first += all[3 * r];
                dc->pfirst += all[3 * r + 1];
                dc->gfirst += all[3 * r + 2];
            }
            dc->rows += all[3 * r];
            dc->prob += all[3 * r + 1];
            dc->gone += all[3 * r + 2];
            maxn = all[3 * r] > maxn ? all[3 * r] : maxn;
            maxm = all[3 * r + 1] > maxm ? all[3 * r + 1] : maxm;
            maxe = all[3 * r + 2] > maxe ? all[3 * r + 2] : maxe;
        }
        dc->mine = v[0];
        dc->pmine = v[1];
        dc->gmine = v[2];
        dc->rounds = (maxn + BLOCK_ROWS - 1) / BLOCK_ROWS;
        dc->prounds = (maxm + BLOCK_ROWS - 1) / BLOCK_ROWS;
        dc->grounds = (maxe + BLOCK_ROWS - 1) / BLOCK_ROWS;
    }
    free(all);
}

/* The datasets of t: name, file type, columns (0: a vector); their number. */
struct dpart {
    const char *name;
    int is_float;
    int64_t cols;
};
static int dparts(const struct emb_table *t, struct dpart p[6])
{
    int n = 0;
    p[n++] = (struct dpart){"ids", 0, 0};
    p[n++] = (struct dpart){"weight", 1, t->width};
    if (t->state_floats)
        p[n++] = (struct dpart){"state", 1, t->state_floats};
    if (t->steps)
        p[n++] = (struct dpart){"steps", 0, 0};
    p[n++] = (struct dpart){"last", 0, 0};
    p[n++] = (struct dpart){"freq", 0, 0};
    return n;
}

/* The bytes of a dataset of rows x cols (0: a vector) as dset writes it:
 * whole chunks (the last one too), a checksum each, and about H5_HEADER
 * bytes of object header (measured: 0.5 to 0.7 kB a dataset). */
#define H5_HEADER 600.0
static double dset_bytes(int is_float, int64_t rows, int64_t cols)
{
    const hid_t ft = is_float ? H5T_IEEE_F32LE : H5T_STD_I64LE;
    const int64_t cr = h5io_chunk_rows(ft, rows, cols), chunks = (rows + cr - 1) / cr;
    return (double)(chunks * cr * (cols > 0 ? cols : 1)) * (is_float ? 4.0 : 8.0) +
           4.0 * (double)chunks + H5_HEADER;
}

double ckpt_dyn_bytes(const struct emb_table *t, int64_t rows)
{
    struct dpart p[6];
    double b = 0;
    for (int j = 0, np = dparts(t, p); j < np; j++)
        b += dset_bytes(p[j].is_float, rows + 1, p[j].cols);
    return b;
}

static hid_t dset(struct h5io *h, hid_t g, const char *name, int is_float, int64_t rows,
                  int64_t cols)
{
    const hid_t ft = is_float ? H5T_IEEE_F32LE : H5T_STD_I64LE;
    const struct h5io_layout lay = {.chunk_rows = h5io_chunk_rows(ft, rows, cols), .checksum = 1};
    return h5io_dset(h, g, name, ft, rows, cols, &lay);
}

void ckpt_dyn_create(struct trainer *tr, struct h5io *h, hid_t emb, int k)
{
    struct emb_table *t = &tr->reg.tables[k];
    const struct dyn_counts *dc = &counts[k];
    hid_t g = h5io_group(h, emb, t->conf.name);
    h5io_attr_i64(h, g, "dynamic", 1);
    h5io_attr_i64(h, g, "clock", emb_dyn_clock(t));
    if (delta_on) {
        h5io_attr_i64(h, g, "delta", 1);
        if (dc->gone)
            h5io_close_obj(h, dset(h, g, "evicted", 0, dc->gone, 0));
    }
    struct dpart p[6];
    for (int j = 0, np = dparts(t, p); j < np; j++)
        h5io_close_obj(h, dset(h, g, p[j].name, p[j].is_float, dc->rows, p[j].cols));
    if (dc->prob)
        h5io_close_obj(h, dset(h, g, "prob", 0, dc->prob, 2));
    h5io_close_obj(h, g);
}

/* This rank's run of records (rb bytes) in rounds of BLOCK_ROWS into the
 * dataset name from row first (collective: rounds for every rank); of each
 * record the cols (0: 1) values of elem bytes at byte off. */
static void write_run(struct h5io *h, const char *name, const struct ckpt_dyn_run *run,
                      int64_t first, int64_t rounds, hid_t mtype, int64_t off, int64_t cols,
                      int64_t elem, char *buf)
{
    hid_t d = h5io_dset_reopen(h, h->f, name);
    const int64_t bytes = (cols ? cols : 1) * elem;
    for (int64_t r = 0; r < rounds; r++) {
        watchdog_beat("in", "a checkpoint write");
        const int64_t a = r * BLOCK_ROWS;
        const int64_t n = a < run->n ? (run->n - a < BLOCK_ROWS ? run->n - a : BLOCK_ROWS) : 0;
        for (int64_t i = 0; i < n; i++)
            memcpy(buf + i * bytes, run->rec + run->ord[a + i].at * run->rb + off, (size_t)bytes);
        h5io_write_rows(h, d, mtype, first + a, 1, n, cols, buf);
    }
    h5io_close_obj(h, d);
}

/* The datasets of a row, as the write fills them. */
enum part { P_IDS, P_LAST, P_FREQ, P_STEPS, P_WEIGHT, P_STATE };

static enum part part_of(const char *name)
{
    return !strcmp(name, "ids") ? P_IDS : !strcmp(name, "last") ? P_LAST
           : !strcmp(name, "freq") ? P_FREQ : !strcmp(name, "steps") ? P_STEPS
           : !strcmp(name, "weight") ? P_WEIGHT : P_STATE;
}

static int64_t part_bytes(const struct emb_table *t, enum part pt)
{
    return pt == P_WEIGHT ? 4 * t->width : pt == P_STATE ? 4 * t->state_floats : 8;
}

/* Part pt of the row id in slot s of this rank's shard of t into o (a
 * host table's: a device or cached table's values, get_parts). */
static void get_part(const struct emb_table *t, enum part pt, int64_t id, int64_t s, char *o)
{
    int64_t v[2] = {0, 0};
    switch (pt) {
    case P_IDS:
        memcpy(o, &id, 8);
        return;
    case P_WEIGHT:
        memcpy(o, t->w + s * t->width, (size_t)t->width * 4);
        return;
    case P_STATE:
        memcpy(o, t->state + s * t->state_floats, (size_t)t->state_floats * 4);
        return;
    case P_STEPS:
        memcpy(o, &t->steps[s], 8);
        return;
    case P_LAST:
    case P_FREQ:
        if (s)
            emb_dyn_row_stats(t, s, &v[0], &v[1]);
        memcpy(o, &v[pt == P_FREQ], 8);
        return;
    }
}

/* Part pt (not the ids) of the rows in slots slot[n] of this rank's shard
 * of t into o, rows in order: a device or cached table's values copied
 * down together (emb_table_get_rows), a host table's row by row. */
static void get_parts(const struct emb_table *t, enum part pt, int64_t n, const int64_t *slot,
                      char *o)
{
    if (!t->ready && (pt == P_WEIGHT || pt == P_STATE || pt == P_STEPS)) {
        emb_table_get_rows((struct emb_table *)t, n, slot, pt == P_WEIGHT ? (float *)o : NULL,
                           pt == P_STATE ? (float *)o : NULL, pt == P_STEPS ? (int64_t *)o : NULL);
        return;
    }
    const int64_t pb = part_bytes(t, pt);
    for (int64_t i = 0; i < n; i++)
        get_part(t, pt, 0, slot[i], o + i * pb);
}

/* The run's key of its i-th row in id order. */
static const struct row_key *key_at(const struct ckpt_dyn_run *run, int64_t i)
{
    return (const struct row_key *)(run->rec + run->ord[i].at * run->rb);
}

/* Part pt of one round's rows held by other ranks (the run's rows a ..
 * a + n; every rank calls it, collective over world): each rank asks the
 * ranks holding them for their slots, and answers (get_part) what others
 * ask it for. On return (*recv) holds the fetched parts in the order
 * asked, and at[i] is the i-th row's place there, or -1 for a row of this
 * rank's own shard. */
static void fetch_round(struct comm *c, const struct emb_table *t, const struct ckpt_dyn_run *run,
                        int64_t a, int64_t n, enum part pt, int64_t *at, int64_t *cnt,
                        int64_t *ask, char **recv, char **send)
{
    const int P = c->size;
    int64_t *sc = cnt, *sd = cnt + P, *rc = cnt + 2 * P, *rd = cnt + 3 * P, off = 0;
    memset(sc, 0, (size_t)P * sizeof *sc);
    for (int64_t i = 0; i < n; i++) {
        const int64_t q = key_at(run, a + i)->rank;
        if (q != c->rank)
            sc[q]++;
    }
    for (int q = 0; q < P; q++) {
        sd[q] = off;
        off += sc[q];
        rc[q] = sd[q]; /* the next place of q's requests */
    }
    for (int64_t i = 0; i < n; i++) {
        const struct row_key *k = key_at(run, a + i);
        at[i] = k->rank == c->rank ? -1 : rc[k->rank]++;
        if (at[i] >= 0)
            ask[at[i]] = k->slot;
    }
    char *asked = NULL;
    const int64_t m = ckpt_dyn_exchange(c, cnt, 8, ask, &asked); /* cnt now in bytes */
    const int64_t pb = part_bytes(t, pt);
    *send = xrealloc(*send, (size_t)((m ? m : 1) * pb));
    get_parts(t, pt, m, (const int64_t *)asked, *send);
    free(asked);
    for (int q = 0; q < P; q++) /* the answers go back as the requests came */
        sc[q] = rc[q] / 8, sd[q] = rd[q] / 8;
    ckpt_dyn_exchange(c, cnt, pb, *send, recv);
}

void ckpt_dyn_write(struct trainer *tr, struct h5io *h, int k)
{
    struct emb_table *t = &tr->reg.tables[k];
    struct dyn_counts *dc = &counts[k];
    struct comm *c = tr->c;
    struct dpart p[6];
    const int np = dparts(t, p);
    const int64_t wmax = t->width > t->state_floats ? t->width : t->state_floats;
    char *buf = xmalloc((size_t)(BLOCK_ROWS * (wmax > 2 ? wmax : 2)) * 8);
    char *loc = xmalloc((size_t)(BLOCK_ROWS * (wmax > 2 ? wmax : 2)) * 8); /* this rank's rows */
    int64_t *lslot = xmalloc((size_t)BLOCK_ROWS * sizeof *lslot);
    char name[300];
    /* the rows, dataset by dataset (as the chunks are laid out), a round
     * at a time: what other ranks hold fetched from them (ids: the keys) */
    int64_t *cnt = xmalloc((size_t)c->size * 4 * sizeof *cnt);
    int64_t *at = xmalloc((size_t)BLOCK_ROWS * sizeof *at);
    int64_t *ask = xmalloc((size_t)BLOCK_ROWS * sizeof *ask);
    char *recv = NULL, *send = NULL;
    for (int j = 0; j < np; j++) {
        snprintf(name, sizeof name, "/emb/%s/%s", t->conf.name, p[j].name);
        hid_t d = h5io_dset_reopen(h, h->f, name);
        const enum part pt = part_of(p[j].name);
        const int64_t pb = part_bytes(t, pt);
        for (int64_t r = 0; r < dc->rounds; r++) {
            watchdog_beat("in", "a checkpoint write");
            const int64_t a = r * BLOCK_ROWS;
            const int64_t n = a < dc->run.n ? (dc->run.n - a < BLOCK_ROWS ? dc->run.n - a : BLOCK_ROWS) : 0;
            if (pt == P_IDS)
                for (int64_t i = 0; i < n; i++)
                    get_part(t, pt, key_at(&dc->run, a + i)->id, 0, buf + i * pb);
            else { /* this rank's rows together (get_parts), the others' fetched */
                fetch_round(c, t, &dc->run, a, n, pt, at, cnt, ask, &recv, &send);
                int64_t nl = 0;
                for (int64_t i = 0; i < n; i++)
                    if (at[i] < 0)
                        lslot[nl++] = key_at(&dc->run, a + i)->slot;
                get_parts(t, pt, nl, lslot, loc);
                for (int64_t i = 0, l = 0; i < n; i++)
                    memcpy(buf + i * pb, at[i] < 0 ? loc + l++ * pb : recv + at[i] * pb,
                           (size_t)pb);
            }
            h5io_write_rows(h, d, p[j].is_float ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT64,
                            dc->first + a, 1, n, p[j].cols, buf);
        }
        h5io_close_obj(h, d);
    }
    free(cnt), free(at), free(ask), free(recv), free(send), free(loc), free(lslot);
    if (dc->prob) {
        snprintf(name, sizeof name, "/emb/%s/prob", t->conf.name);
        write_run(h, name, &dc->prun, dc->pfirst, dc->prounds, H5T_NATIVE_INT64, 0, 2, 8, buf);
    }
    if (delta_on && dc->gone) {
        snprintf(name, sizeof name, "/emb/%s/evicted", t->conf.name);
        write_run(h, name, &dc->grun, dc->gfirst, dc->grounds, H5T_NATIVE_INT64, 0, 0, 8, buf);
    }
    free(buf);
    ckpt_dyn_run_free(&dc->run);
    ckpt_dyn_run_free(&dc->prun);
    ckpt_dyn_run_free(&dc->grun);
}

/* --- reading ------------------------------------------------------------------ */

static hid_t open_part(const char *path, const struct h5io *h, struct emb_table *t,
                       const char *part, int is_float, int64_t rows, int64_t cols, int64_t *got)
{
    char name[300], err[1024];
    snprintf(name, sizeof name, "/emb/%s/%s", t->conf.name, part);
    const int64_t want[2] = {rows, cols};
    int64_t g[2];
    hid_t d = h5io_dset_open(h->f, path, name, is_float ? H5T_FLOAT : H5T_INTEGER,
                             cols > 0 ? 2 : 1, want, g, H5P_DEFAULT, err, sizeof err);
    if (d < 0)
        fatal("checkpoint %s: dynamic table '%s': %s", path, t->conf.name, err);
    if (got)
        *got = g[0];
    return d;
}

static void read_rows(const char *path, struct emb_table *t, hid_t d, const char *part,
                      int is_float, int64_t a, int64_t n, int64_t cols, void *buf)
{
    if (h5io_read_rows(NULL, d, is_float ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT64, a, 1, n, cols,
                       buf))
        fatal("checkpoint %s: cannot read /emb/%s/%s rows %lld..%lld (checksum mismatch or "
              "truncated: the file is damaged)", path, t->conf.name, part, (long long)a,
              (long long)(a + n - 1));
}

/* Whether rank r holds the shard of id (id 0, the shared row: every rank). */
static int holds(const struct emb_table *t, int64_t id, int r)
{
    return id == 0 || emb_dyn_owner(id, t->G) == r % t->G;
}

/* Entries v[n][w] (int64, the first an id) to the ranks holding their
 * ids' shards (collective over world); the ones received (*got of them). */
static int64_t *route(struct emb_table *t, struct comm *c, const int64_t *v, int64_t n, int w,
                      int64_t *got)
{
    const int P = c->size;
    int64_t *out = xmalloc((size_t)((n ? n : 1) * (P / t->G + 1) * w) * sizeof *out);
    int64_t *cnt = xmalloc((size_t)P * 4 * sizeof *cnt);
    int64_t *sc = cnt, *sd = cnt + P, off = 0;
    for (int q = 0; q < P; q++) {
        sd[q] = off;
        for (int64_t i = 0; i < n; i++)
            if (v[i * w] != 0 && holds(t, v[i * w], q))
                memcpy(out + w * off++, v + i * w, (size_t)w * sizeof *v);
        sc[q] = off - sd[q];
    }
    char *in = NULL;
    *got = ckpt_dyn_exchange(c, cnt, 8 * (int64_t)w, out, &in);
    free(out);
    free(cnt);
    return (int64_t *)in;
}

/* A received row's slot (v: id, last, freq, steps): a delta's id upserted,
 * a full checkpoint's restored (id 0: the unadmitted row, slot 0). */
static int64_t restore_slot(const char *path, struct emb_table *t, int is_delta,
                            const int64_t *v)
{
    const int64_t s = is_delta ? emb_dyn_upsert(t, v[0], v[1], v[2])
                      : v[0] == 0 ? 0 : emb_dyn_restore(t, v[0], v[1], v[2]);
    if (s < 0)
        fatal("checkpoint %s: /emb/%s/ids holds id %lld twice", path, t->conf.name,
              (long long)v[0]);
    return s;
}

/* A round's received rows recv[tot] (id, last, freq, steps, weight,
 * state: rb bytes each) into a device table: the statistics row by row
 * on the host mirror, the rows, state and steps up in one batch
 * (emb_dyn_put_rows). */
static void restore_dev(const char *path, struct emb_table *t, int is_delta, int64_t tot,
                        int64_t rb, const char *recv)
{
    const int64_t W = t->width, S = t->state_floats;
    int64_t *slot = xmalloc((size_t)(tot ? tot : 1) * 16), *steps = slot + (tot ? tot : 1);
    float *w = xmalloc((size_t)((tot ? tot : 1) * W) * 4);
    float *st = S ? xmalloc((size_t)(tot * S) * 4 + 4) : NULL;
    for (int64_t i = 0; i < tot; i++) {
        const char *o = recv + i * rb;
        int64_t v[4];
        memcpy(v, o, 32);
        const int64_t s = restore_slot(path, t, is_delta, v);
        slot[i] = s;
        steps[i] = v[3];
        memcpy(w + i * W, o + 32, (size_t)W * 4);
        if (S)
            memcpy(st + i * S, o + 32 + 4 * W, (size_t)S * 4);
    }
    emb_dyn_put_rows(t, tot, slot, w, st, steps);
    free(slot);
    free(w);
    free(st);
}

void ckpt_dyn_read(struct trainer *tr, const struct h5io *h, const char *path, int k)
{
    struct emb_table *t = &tr->reg.tables[k];
    struct comm *c = tr->c;
    const int P = c->size, me = c->rank;
    char err[1024];
    char group[256];
    snprintf(group, sizeof group, "/emb/%s", t->conf.name);
    int64_t R = 0, clock = 0, dyn = 0;
    hid_t gid = h5io_obj_open(h->f, group);
    if (gid < 0 || !h5io_has_attr(gid, "dynamic") ||
        h5io_attr_read_i64(gid, path, "dynamic", &dyn, err, sizeof err) || dyn != 1)
        fatal("checkpoint %s: table %s was not written as a dynamic table (embedding.dynamic / "
              "features.dynamic must be as when it was written)", path, group);
    if (h5io_attr_read_i64(gid, path, "clock", &clock, err, sizeof err))
        fatal("checkpoint %s: %s", path, err);
    int64_t is_delta = 0;
    if (h5io_has_attr(gid, "delta") &&
        h5io_attr_read_i64(gid, path, "delta", &is_delta, err, sizeof err))
        fatal("checkpoint %s: %s", path, err);
    h5io_close_obj(NULL, gid);
    if (!is_delta) /* a full checkpoint: its rows alone (the table may hold others) */
        emb_dyn_clear(t);
    emb_dyn_set_clock(t, clock);
    char ev[300];
    snprintf(ev, sizeof ev, "/emb/%s/evicted", t->conf.name);
    if (is_delta && h5io_exists(h->f, ev)) { /* the ids evicted since the checkpoint before */
        int64_t E = 0;
        hid_t de = open_part(path, h, t, "evicted", 0, -1, 0, &E);
        int64_t *b = xmalloc((size_t)BLOCK_ROWS * 8);
        const int64_t er = (E + (int64_t)P * BLOCK_ROWS - 1) / ((int64_t)P * BLOCK_ROWS);
        for (int64_t r = 0; r < er; r++) {
            const int64_t a = (r * P + me) * BLOCK_ROWS;
            const int64_t n = a < E ? (E - a < BLOCK_ROWS ? E - a : BLOCK_ROWS) : 0;
            read_rows(path, t, de, "evicted", 0, a, n, 0, b);
            int64_t got;
            int64_t *in = route(t, c, b, n, 1, &got);
            for (int64_t i = 0; i < got; i++)
                emb_dyn_remove(t, in[i]);
            free(in);
        }
        free(b);
        h5io_close_obj(NULL, de);
    }
    if (is_delta) /* the list as written replaces the one before */
        emb_dyn_probation_clear(t);
    struct dpart p[6];
    const int np = dparts(t, p);
    hid_t d[6];
    d[0] = open_part(path, h, t, "ids", 0, -1, 0, &R);
    for (int j = 1; j < np; j++)
        d[j] = open_part(path, h, t, p[j].name, p[j].is_float, R, p[j].cols, NULL);
    /* a row on the wire: id, last, freq, steps, weight, state */
    const int64_t W = t->width, S = t->state_floats, rb = 32 + 4 * (W + S);
    const int64_t Wr = BLOCK_ROWS;
    int64_t *ids = xmalloc((size_t)Wr * 8), *last = xmalloc((size_t)Wr * 8),
            *freq = xmalloc((size_t)Wr * 8), *steps = xmalloc((size_t)Wr * 8);
    float *w = xmalloc((size_t)(Wr * W) * 4), *st = xmalloc((size_t)(Wr * (S ? S : 1)) * 4);
    char *send = xmalloc((size_t)(Wr * rb) * (size_t)(P / t->G + 1)), *recv = NULL;
    int64_t *cnt = xmalloc((size_t)P * 4 * sizeof *cnt);
    int64_t *sc = cnt, *sd = cnt + P;
    const int64_t rounds = (R + (int64_t)P * Wr - 1) / ((int64_t)P * Wr);
    for (int64_t r = 0; r < rounds; r++) {
        watchdog_beat("in", "a checkpoint read");
        const int64_t a = (r * P + me) * Wr, n = a < R ? (R - a < Wr ? R - a : Wr) : 0;
        for (int j = 0; j < np; j++) {
            void *dst = !strcmp(p[j].name, "ids") ? (void *)ids : !strcmp(p[j].name, "weight") ? (void *)w
                        : !strcmp(p[j].name, "state") ? (void *)st : !strcmp(p[j].name, "steps") ? (void *)steps
                        : !strcmp(p[j].name, "last") ? (void *)last : (void *)freq;
            read_rows(path, t, d[j], p[j].name, p[j].is_float, a, n, p[j].cols, dst);
        }
        if (!t->steps)
            memset(steps, 0, (size_t)Wr * 8);
        int64_t off = 0;
        for (int q = 0; q < P; q++) { /* to each rank, the rows its shard holds */
            sd[q] = off;
            for (int64_t i = 0; i < n; i++) {
                if ((ids[i] == 0) != (a + i == 0))
                    fatal("checkpoint %s: /emb/%s/ids row %lld holds id %lld (row 0 and only it "
                          "holds id 0, the unadmitted row)", path, t->conf.name,
                          (long long)(a + i), (long long)ids[i]);
                if (!holds(t, ids[i], q))
                    continue;
                char *o = send + off * rb;
                const int64_t v[4] = {ids[i], last[i], freq[i], steps[i]};
                memcpy(o, v, 32);
                memcpy(o + 32, w + i * W, (size_t)W * 4);
                if (S)
                    memcpy(o + 32 + 4 * W, st + i * S, (size_t)S * 4);
                off++;
            }
            sc[q] = off - sd[q];
        }
        const int64_t tot = ckpt_dyn_exchange(c, cnt, rb, send, &recv);
        if (!t->ready) { /* a device table: the round's rows up at once */
            restore_dev(path, t, is_delta, tot, rb, recv);
            continue;
        }
        for (int64_t i = 0; i < tot; i++) {
            const char *o = recv + i * rb;
            int64_t v[4];
            memcpy(v, o, 32);
            const int64_t s = restore_slot(path, t, is_delta, v);
            memcpy(t->w + s * W, o + 32, (size_t)W * 4);
            if (S)
                memcpy(t->state + s * S, o + 32 + 4 * W, (size_t)S * 4);
            if (t->steps)
                t->steps[s] = v[3];
        }
    }
    for (int j = 0; j < np; j++)
        h5io_close_obj(NULL, d[j]);
    /* the probation list */
    snprintf(group, sizeof group, "/emb/%s/prob", t->conf.name);
    if (h5io_exists(h->f, group)) {
        int64_t M = 0;
        hid_t dp = open_part(path, h, t, "prob", 0, -1, 2, &M);
        const int64_t pr = (M + (int64_t)P * Wr - 1) / ((int64_t)P * Wr);
        int64_t *pairs = xmalloc((size_t)Wr * 16);
        for (int64_t r = 0; r < pr; r++) {
            const int64_t a = (r * P + me) * Wr, n = a < M ? (M - a < Wr ? M - a : Wr) : 0;
            read_rows(path, t, dp, "prob", 0, a, n, 2, pairs);
            int64_t tot;
            int64_t *in = route(t, c, pairs, n, 2, &tot); /* to the shards' ranks */
            for (int64_t i = 0; i < tot; i++)
                emb_dyn_probation_put(t, in[2 * i], in[2 * i + 1]);
            free(in);
        }
        free(pairs);
        h5io_close_obj(NULL, dp);
    }
    free(ids), free(last), free(freq), free(steps), free(w), free(st), free(send), free(recv);
    free(cnt);
}
