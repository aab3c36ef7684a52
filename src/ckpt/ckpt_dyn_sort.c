/* ckpt_dyn_sort: a sample sort of a dynamic table's records among the
 * ranks (see ckpt_dyn_sort.h). Every rank sorts its records by id, takes
 * SAMPLES evenly spaced ids with the number of records each stands for,
 * and all-gathers them: from the gathered samples (the same on every rank)
 * P - 1 splitters cut the ids into P ranges of about as many records each.
 * The records travel to the rank of their range in rounds (at most block
 * of a rank's records each), which sorts what it received. Which rank holds
 * which range depends on P, the order of the records over the runs does
 * not: the sorted order of them all. */
#include "ckpt/ckpt_dyn_sort.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "train/watchdog.h"

#define SAMPLES 64 /* ids per rank for the splitters */

/* ckpt_dyn_exchange, into *recv grown as needed (grow) or large enough. */
static int64_t exchange(struct comm *c, int64_t *cnt, int64_t rb, const void *send, char **recv,
                        int grow)
{
    const int P = c->size;
    int64_t *sc = cnt, *sd = cnt + P, *rc = cnt + 2 * P, *rd = cnt + 3 * P, tot = 0;
    comm_alltoall_i64(c, COMM_WORLD, sc, rc, COMM_PH_OTHER);
    for (int q = 0; q < P; q++) {
        rd[q] = tot;
        tot += rc[q];
    }
    if (grow)
        *recv = xrealloc(*recv, (size_t)((tot ? tot : 1) * rb));
    for (int q = 0; q < P; q++) /* in bytes */
        sc[q] *= rb, sd[q] *= rb, rc[q] *= rb, rd[q] *= rb;
    comm_alltoallv(c, COMM_WORLD, COMM_BYTE, send, sc, sd, *recv, rc, rd, COMM_PH_OTHER);
    return tot;
}

int64_t ckpt_dyn_exchange(struct comm *c, int64_t *cnt, int64_t rb, const void *send,
                          char **recv)
{
    return exchange(c, cnt, rb, send, recv, 1);
}

static int cmp_key(const void *a, const void *b)
{
    const struct ckpt_dyn_key *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

/* k[n] into ascending order (already sorted: left as it is). */
static void sort_keys(struct ckpt_dyn_key *k, int64_t n)
{
    for (int64_t i = 1; i < n; i++)
        if (cmp_key(&k[i - 1], &k[i]) > 0) {
            qsort(k, (size_t)n, sizeof *k, cmp_key);
            return;
        }
}

/* The splitters: split[q] (q = 1 .. P - 1) the least id of rank q's range
 * (rank 0's: from 0), nondecreasing; from SAMPLES ids of every rank's
 * sorted keys loc[n] (key, records it stands for). */
static void splitters(struct comm *c, const struct ckpt_dyn_key *loc, int64_t n, uint64_t *split)
{
    const int P = c->size;
    struct ckpt_dyn_key mine[SAMPLES];
    for (int64_t j = 0; j < SAMPLES; j++) {
        const int64_t a = j * n / SAMPLES, b = (j + 1) * n / SAMPLES;
        mine[j] = (struct ckpt_dyn_key){b > a ? loc[a].key : 0, b - a};
    }
    struct ckpt_dyn_key *all = xmalloc((size_t)P * SAMPLES * sizeof *all);
    comm_allgather_bytes(c, COMM_WORLD, mine, sizeof mine, all);
    qsort(all, (size_t)P * SAMPLES, sizeof *all, cmp_key); /* the same on every rank */
    int64_t total = 0, cum = 0;
    for (int64_t i = 0; i < (int64_t)P * SAMPLES; i++)
        total += all[i].at;
    int q = 1;
    for (int64_t i = 0; i < (int64_t)P * SAMPLES && q < P; i++) {
        if (!all[i].at)
            continue;
        while (q < P && (int64_t)q * total <= cum * P) /* rank q starts here */
            split[q++] = all[i].key;
        cum += all[i].at;
    }
    while (q < P)
        split[q++] = UINT64_MAX;
    free(all);
}

void ckpt_dyn_sort(struct comm *c, const int64_t *ids, int64_t n, int64_t rb, ckpt_dyn_pack pack,
                   const void *ctx, int64_t block, struct ckpt_dyn_run *run)
{
    const int P = c->size;
    memset(run, 0, sizeof *run);
    run->rb = rb;
    struct ckpt_dyn_key *loc = xmalloc((size_t)(n ? n : 1) * sizeof *loc);
    for (int64_t i = 0; i < n; i++)
        loc[i] = (struct ckpt_dyn_key){(uint64_t)ids[i], i};
    sort_keys(loc, n);
    uint64_t *split = xmalloc((size_t)P * sizeof *split);
    splitters(c, loc, n, split);
    const int64_t rounds = comm_allreduce_max_i64(c, (n + block - 1) / block);
    int64_t *cnt = xmalloc((size_t)P * 4 * sizeof *cnt), *sc = cnt, *sd = cnt + P;
    /* the records this rank receives: their number, the run's room */
    int *dest = xmalloc((size_t)(n ? n : 1) * sizeof *dest);
    memset(sc, 0, (size_t)P * sizeof *sc);
    for (int64_t i = 0, q = 0; i < n; i++) { /* the records go in ascending order */
        while (q + 1 < P && split[q + 1] <= loc[i].key)
            q++;
        dest[i] = (int)q;
        sc[q]++;
    }
    int64_t *rc = xmalloc((size_t)P * sizeof *rc), total = 0;
    comm_alltoall_i64(c, COMM_WORLD, sc, rc, COMM_PH_OTHER);
    for (int q = 0; q < P; q++)
        total += rc[q];
    free(rc);
    run->rec = xmalloc((size_t)((total ? total : 1) * rb));
    char *send = xmalloc((size_t)((n < block ? (n ? n : 1) : block) * rb));
    for (int64_t r = 0; r < rounds; r++) {
        watchdog_beat("in", "a checkpoint write");
        const int64_t a = r * block, m = a < n ? (n - a < block ? n - a : block) : 0;
        memset(sc, 0, (size_t)P * sizeof *sc);
        for (int64_t i = 0; i < m; i++) {
            sc[dest[a + i]]++;
            pack(ctx, loc[a + i].at, send + i * rb);
        }
        for (int64_t q = 0, off = 0; q < P; q++) {
            sd[q] = off;
            off += sc[q];
        }
        char *at = run->rec + run->n * rb; /* in place: the room was counted */
        run->n += exchange(c, cnt, rb, send, &at, 0);
    }
    run->ord = xmalloc((size_t)(run->n ? run->n : 1) * sizeof *run->ord);
    for (int64_t i = 0; i < run->n; i++) {
        int64_t id;
        memcpy(&id, run->rec + i * rb, sizeof id);
        run->ord[i] = (struct ckpt_dyn_key){(uint64_t)id, i};
    }
    sort_keys(run->ord, run->n);
    free(loc), free(split), free(cnt), free(send), free(dest);
}

void ckpt_dyn_run_free(struct ckpt_dyn_run *run)
{
    free(run->rec);
    free(run->ord);
    memset(run, 0, sizeof *run);
}
