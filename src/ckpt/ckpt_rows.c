/* ckpt_rows: a table's rows between the ranks' shards and the
 * checkpoint's datasets /emb/NAME/PART [rows + 1(, cols)] (ckpt_priv.h),
 * rows in global id order (row i: id i; row 0, the padding, holds what
 * its slot holds: zeros). Shard q of an embedding group of G ranks holds
 * the ids = q mod G at consecutive slots id / G.
 *
 * Collective (every read; writes with output.checkpoint_write =
 * collective). A part's rows are cut into blocks of W rows, a multiple of
 * its chunk rows, dealt round-robin to all P ranks: in round k, rank w
 * handles the block [(kP + w) W, (kP + w + 1) W). A checksummed chunk is
 * written whole by one process (HDF5 1.10 would otherwise shuttle the
 * pieces of every shared chunk between the ranks, after gathering every
 * chunk's writers on rank 0), so the rows travel first:
 *   write: the ranks of w's embedding group send w the rows of its block
 *          that their shards hold (an all-to-all within each group), and w
 *          writes the block as one hyperslab (a collective H5Dwrite);
 *   read:  w reads its block from the file every rank opened together
 *          (HDF5 verifies each chunk's checksum) and sends every row to the
 *          ranks holding its shard, in every group (an all-to-all over the
 *          world), which check and store them.
 * Every chunk is written or read once, by one rank; no rank holds more
 * than a few blocks of about BLOCK_BYTES at a time, whatever the table's
 * size or the rank counts of the writing and reading jobs. A table whose
 * shard is the whole table (G = 1) is read whole by every rank; written by
 * every rank from its own rows when it is the embedding group's, and by
 * rank 0 alone, block by block, when it is a replicated feature table
 * (its designated writer: small, and one copy is the one written).
 *
 * Gathered (output.checkpoint_write = gathered, the former path, kept for
 * comparison): the first embedding group's rows go to rank 0 in blocks of
 * GATHER_ROWS, which writes them alone. */
#include "ckpt/ckpt_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "train/watchdog.h"

#define BLOCK_BYTES ((int64_t)16 << 20) /* a rank's block of one part in one round
                                          (debug.checkpoint_block: another) */
#define GATHER_ROWS ((int64_t)1 << 15)  /* rows per block of the gathered path */

/* The first id >= a of shard q of G, and how many of [a, b) it holds. */
static int64_t shard_first(int64_t a, int G, int q)
{
    return a + (((q - a % G) % G) + G) % G;
}

static int64_t shard_count(int64_t a, int64_t b, int G, int q)
{
    const int64_t id0 = shard_first(a, G, q);
    return id0 < b ? (b - 1 - id0) / G + 1 : 0;
}

/* Block rows of a part whose chunks hold chunk rows (0: contiguous), each
 * row in flight `copies` times: a multiple of the chunk rows. */
static int64_t block_rows(const struct trainer *tr, const struct ckpt_part *p, int64_t chunk,
                          int copies)
{
    const int64_t bytes = tr->conf.ckpt_block > 0 ? tr->conf.ckpt_block : BLOCK_BYTES;
    int64_t w = chunk > 0 ? chunk : 1;
    while (w * 2 * (int64_t)p->row_bytes * copies <= bytes)
        w *= 2;
    return w;
}

/* Host copies of slots [slot0, slot0 + n) of part p, into buf; and back. */
static void get_part(struct emb_table *t, const struct ckpt_part *p, int64_t slot0, int64_t n,
                     void *buf)
{
    if (n > 0)
        emb_table_get_stored(t, slot0, n, p->kind == CKPT_WEIGHT ? buf : NULL,
                             p->kind == CKPT_STATE ? buf : NULL,
                             p->kind == CKPT_STEPS ? buf : NULL);
}

static void set_part(struct emb_table *t, const struct ckpt_part *p, int64_t slot0, int64_t n,
                     const void *buf)
{
    if (n > 0)
        emb_table_set_slots(t, slot0, n, p->kind == CKPT_WEIGHT ? buf : NULL,
                            p->kind == CKPT_STATE ? buf : NULL,
                            p->kind == CKPT_STEPS ? buf : NULL);
}

/* A table shares the embedding group's sharding, or is whole on every rank. */
static int whole_table(const struct comm *c, const struct emb_table *t)
{
    if (t->G == 1)
        return 1;
    if (t->G != c->g[COMM_EMB].size || t->shard != c->g[COMM_EMB].rank)
        fatal("checkpoint: table '%s' is sharded over %d ranks, the embedding group has %d",
              t->conf.name, t->G, c->g[COMM_EMB].size);
    return 0;
}

/* --- writing, collective ---------------------------------------------------------- */

static void write_part(struct trainer *tr, struct h5io *h, struct emb_table *t,
                       const struct ckpt_part *p, hid_t d)
{
    struct comm *c = tr->c;
    const int P = c->size, me = c->rank, whole = whole_table(c, t);
    const int G = whole ? 1 : t->G, q = whole ? 0 : t->shard, g0 = me - q; /* my group's first */
    const int one = whole && t->conf.replicated; /* rank 0 writes every block */
    const int64_t R = t->conf.rows + 1, rb = (int64_t)p->row_bytes;
    const int64_t W = block_rows(tr, p, h5io_chunk_rows(ckpt_file_type(p), R, p->cols), 1);
    const int64_t rounds = one ? (R + W - 1) / W : (R + (int64_t)P * W - 1) / ((int64_t)P * W);
    char *block = xmalloc((size_t)(W * rb));
    char *send = whole ? NULL : xmalloc((size_t)((W + G) * rb));
    char *recv = whole ? NULL : xmalloc((size_t)((W + G) * rb));
    int64_t *cnt = xmalloc((size_t)G * 4 * sizeof *cnt);
    int64_t *sc = cnt, *sd = cnt + G, *rc = cnt + 2 * G, *rd = cnt + 3 * G;
    for (int64_t k = 0; k < rounds; k++) {
        const int64_t a = (k * P + me) * W, b = a + W < R ? a + W : R, n = a < R ? b - a : 0;
        watchdog_beat("in", "a checkpoint write"); /* progress, round by round */
        if (whole) { /* my block from my own rows */
            const int64_t a1 = one ? k * W : a, n1 = !one ? n : me ? 0 : a1 + W < R ? W : R - a1;
            get_part(t, p, a1, n1, block);
            h5io_write_rows(h, d, ckpt_mem_type(p), a1, 1, n1, p->cols, block);
            continue;
        }
        /* to each writer of my group, the rows of its block my shard holds */
        int64_t off = 0;
        for (int j = 0; j < G; j++) {
            const int64_t aj = (k * P + g0 + j) * W, bj = aj + W < R ? aj + W : R;
            sc[j] = aj < R ? shard_count(aj, bj, G, q) : 0;
            sd[j] = off;
            if (sc[j])
                get_part(t, p, shard_first(aj, G, q) / G, sc[j], send + off * rb);
            off += sc[j];
            rc[j] = n ? shard_count(a, b, G, j) : 0; /* from shard j, of my block */
            rd[j] = j ? rd[j - 1] + rc[j - 1] : 0;
        }
        for (int j = 0; j < G; j++) { /* in bytes */
            sc[j] *= rb, sd[j] *= rb, rc[j] *= rb, rd[j] *= rb;
        }
        comm_alltoallv(c, COMM_EMB, COMM_BYTE, send, sc, sd, recv, rc, rd, COMM_PH_OTHER);
        for (int j = 0; j < G; j++) { /* shard j's rows into their places */
            const int64_t id0 = shard_first(a, G, j), m = rc[j] / rb;
            for (int64_t i = 0; i < m; i++)
                memcpy(block + (id0 + i * G - a) * rb, recv + rd[j] + i * rb, (size_t)rb);
        }
        h5io_write_rows(h, d, ckpt_mem_type(p), a, 1, n, p->cols, block);
    }
    free(block);
    free(send);
    free(recv);
    free(cnt);
}

void ckpt_rows_write(struct trainer *tr, struct h5io *h, struct emb_table *t, const hid_t *d)
{
    struct ckpt_part part[3];
    const int np = ckpt_parts(t, part);
    for (int j = 0; j < np; j++)
        write_part(tr, h, t, &part[j], d[j]);
}

/* --- writing, gathered to rank 0 (the former path) ------------------------------------- */

void ckpt_rows_gather(struct trainer *tr, struct h5io *h, struct emb_table *t, const hid_t *d)
{
    struct comm *c = tr->c;
    const int whole = whole_table(c, t), root = c->rank == 0;
    if (whole ? !root : c->rank >= t->G) /* only the first group (world ranks 0..G-1) */
        return;
    const int G = whole ? 1 : t->G, q = whole ? 0 : t->shard;
    struct ckpt_part part[3];
    const int np = ckpt_parts(t, part);
    size_t rb_max = 0;
    for (int j = 0; j < np; j++)
        rb_max = part[j].row_bytes > rb_max ? part[j].row_bytes : rb_max;
    char *mine = xmalloc((size_t)GATHER_ROWS * rb_max);
    char *gath = root ? xmalloc((size_t)GATHER_ROWS * rb_max) : NULL;
    char *out = root ? xmalloc((size_t)GATHER_ROWS * rb_max) : NULL;
    int64_t *counts = xmalloc((size_t)G * 2 * sizeof *counts), *cb = counts + G;
    const int64_t rows = t->conf.rows + 1; /* ids 0 .. rows - 1, 0 = padding */
    for (int64_t a = 0; a < rows; a += GATHER_ROWS) {
        const int64_t b = a + GATHER_ROWS < rows ? a + GATHER_ROWS : rows;
        watchdog_beat("in", "a checkpoint write");
        const int64_t id0 = shard_first(a, G, q), n = shard_count(a, b, G, q);
        for (int j = 0; j < np; j++) {
            const int64_t rb = (int64_t)part[j].row_bytes;
            get_part(t, &part[j], id0 / G, n, whole ? out : mine);
            if (!whole) {
                comm_gather_i64(c, COMM_EMB, n, counts, 0);
                if (root)
                    for (int s = 0; s < G; s++)
                        cb[s] = counts[s] * rb;
                comm_gatherv(c, COMM_EMB, COMM_BYTE, mine, n * rb, gath, cb, 0);
            }
            if (!root)
                continue;
            /* interleave: shard s holds ids = s mod G in ascending order */
            for (int s = 0, base = 0; !whole && s < G; base += (int)counts[s], s++) {
                const int64_t first = shard_first(a, G, s);
                for (int64_t i = 0; i < counts[s]; i++)
                    memcpy(out + (first + i * G - a) * rb, gath + (base + i) * rb, (size_t)rb);
            }
            h5io_write_rows(h, d[j], ckpt_mem_type(&part[j]), a, 1, b - a, part[j].cols, out);
        }
    }
    free(mine);
    free(gath);
    free(out);
    free(counts);
}

/* --- reading, collective ---------------------------------------------------------- */

/* The n rows at buf of part p (ids id0, id0 + G, ...): floats finite, lazy
 * Adam counts in [0, step]. */
static void check_rows(const char *path, const struct emb_table *t, const struct ckpt_part *p,
                       int64_t id0, int G, int64_t n, const void *buf, int64_t step)
{
    if (p->is_float) {
        const float *v = buf;
        const int64_t cols = p->cols;
        for (int64_t i = 0; i < n * cols; i++)
            if (!isfinite(v[i]))
                fatal("checkpoint %s: /emb/%s/%s: a value of row %lld is not finite", path,
                      t->conf.name, p->name, (long long)(id0 + (i / cols) * G));
        return;
    }
    const int64_t *s = buf;
    for (int64_t i = 0; i < n; i++)
        if (s[i] < 0 || s[i] > step)
            fatal("checkpoint %s: /emb/%s/steps: row %lld has %lld steps, outside [0, %lld]",
                  path, t->conf.name, (long long)(id0 + i * G), (long long)s[i],
                  (long long)step);
}

/* Rows [a, a + n) of part p: whole chunks of this rank's, read by it alone
 * (an independent transfer: HDF5 1.10's collective path for filtered
 * datasets only adds exchanges and buffers here). */
static void read_block(const char *path, const struct emb_table *t, const struct ckpt_part *p,
                       hid_t d, int64_t a, int64_t n, void *buf)
{
    if (h5io_read_rows(NULL, d, ckpt_mem_type(p), a, 1, n, p->cols, buf))
        fatal("checkpoint %s: cannot read /emb/%s/%s rows %lld..%lld (checksum mismatch or "
              "truncated: the file is damaged)", path, t->conf.name, p->name, (long long)a,
              (long long)(a + n - 1));
}

static void read_part(struct trainer *tr, const char *path, struct emb_table *t,
                      const struct ckpt_part *p, hid_t d)
{
    struct comm *c = tr->c;
    const int P = c->size, me = c->rank, whole = whole_table(c, t);
    const int G = whole ? 1 : t->G, q = whole ? 0 : t->shard, copies = whole ? 1 : P / G;
    const int64_t R = t->conf.rows + 1, rb = (int64_t)p->row_bytes;
    const int64_t W = block_rows(tr, p, h5io_dset_chunk_rows(d), copies);
    char *block = xmalloc((size_t)(W * rb));
    if (whole) { /* every rank reads all rows, in the same blocks */
        for (int64_t a = 0; a < R; a += W) {
            const int64_t n = a + W < R ? W : R - a;
            watchdog_beat("in", "a checkpoint read");
            read_block(path, t, p, d, a, n, block);
            check_rows(path, t, p, a, 1, n, block, tr->step);
            set_part(t, p, a, n, block);
        }
        free(block);
        return;
    }
    const int64_t rounds = (R + (int64_t)P * W - 1) / ((int64_t)P * W);
    char *send = xmalloc((size_t)((copies * W + P) * rb));
    char *recv = xmalloc((size_t)((copies * W + P) * rb));
    int64_t *cnt = xmalloc((size_t)P * 4 * sizeof *cnt);
    int64_t *sc = cnt, *sd = cnt + P, *rc = cnt + 2 * P, *rd = cnt + 3 * P;
    for (int64_t k = 0; k < rounds; k++) {
        const int64_t a = (k * P + me) * W, b = a + W < R ? a + W : R, n = a < R ? b - a : 0;
        watchdog_beat("in", "a checkpoint read");
        read_block(path, t, p, d, a, n, block);
        /* to every rank, the rows of my block its shard (r mod G) holds */
        int64_t off = 0;
        for (int r = 0; r < P; r++) {
            const int s = r % G;
            const int64_t id0 = shard_first(a, G, s);
            sc[r] = n ? shard_count(a, b, G, s) : 0;
            sd[r] = off;
            for (int64_t i = 0; i < sc[r]; i++)
                memcpy(send + (off + i) * rb, block + (id0 + i * G - a) * rb, (size_t)rb);
            off += sc[r];
            const int64_t aw = (k * P + r) * W, bw = aw + W < R ? aw + W : R;
            rc[r] = aw < R ? shard_count(aw, bw, G, q) : 0; /* my shard's, of r's block */
            rd[r] = r ? rd[r - 1] + rc[r - 1] : 0;
        }
        for (int r = 0; r < P; r++) { /* in bytes */
            sc[r] *= rb, sd[r] *= rb, rc[r] *= rb, rd[r] *= rb;
        }
        comm_alltoallv(c, COMM_WORLD, COMM_BYTE, send, sc, sd, recv, rc, rd, COMM_PH_OTHER);
        for (int r = 0; r < P; r++) { /* consecutive slots of my shard */
            const int64_t aw = (k * P + r) * W, m = rc[r] / rb, id0 = shard_first(aw, G, q);
            check_rows(path, t, p, id0, G, m, recv + rd[r], tr->step);
            set_part(t, p, id0 / G, m, recv + rd[r]);
        }
    }
    free(block);
    free(send);
    free(recv);
    free(cnt);
}

void ckpt_rows_read(struct trainer *tr, const char *path, struct emb_table *t, const hid_t *d)
{
    struct ckpt_part part[3];
    const int np = ckpt_parts(t, part);
    for (int j = 0; j < np; j++)
        read_part(tr, path, t, &part[j], d[j]);
}
