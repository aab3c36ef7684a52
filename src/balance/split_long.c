/* split_long: pieces of a global batch; see split_long.h. */
#include "balance/split_long.h"

#include <math.h>
#include <stdlib.h>

#include "base/check.h"
#include "base/log.h"

double split_piece_cost(const struct split_conf *sc, const struct cost_model *cm, int64_t p0,
                        int64_t p1)
{
    double a = (double)p0, z = (double)p1;
    return cm->c0 + (cm->a - cm->b) * (z - a) + cm->b * (z * (z + 1) - a * (a + 1)) +
           sc->kv_cost * a;
}

/* The position p in [0, L] where G(p) = a p + b p^2 reaches t, rounded. */
static int64_t g_inverse(const struct cost_model *cm, double t, int64_t L)
{
    double p;
    if (cm->b > 0)
        p = (-cm->a + sqrt(cm->a * cm->a + 4 * cm->b * t)) / (2 * cm->b);
    else
        p = cm->a > 0 ? t / cm->a : 0;
    int64_t q = (int64_t)floor(p + 0.5);
    return q < 0 ? 0 : q > L ? L : q;
}

static int grid_step(const struct split_conf *sc) { return sc->step > 1 ? sc->step : 1; }

/* The cut points of a sequence of L positions (grid head + step j, j >= 1,
 * below L): their number. */
static int64_t grid_cuts(const struct split_conf *sc, int64_t L)
{
    const int64_t n = (L - sc->head) / grid_step(sc) - 1;
    return n > 0 ? n : 0;
}

/* Boundaries q[0] = 0 < q[1] < ... < q[k] = L of k chunks of equal G, on
 * the grid (k - 1 <= grid_cuts). */
static void boundaries(const struct split_conf *sc, const struct cost_model *cm, int64_t L, int k,
                       int64_t *q)
{
    const int64_t s = grid_step(sc), h = sc->head;
    double G = cm->a * (double)L + cm->b * (double)L * (double)L;
    q[0] = 0;
    q[k] = L;
    for (int j = 1; j < k; j++) {
        int64_t p = g_inverse(cm, G * j / k, L);
        p = p > h ? h + s * ((p - h + s / 2) / s) : h; /* the nearest cut point */
        /* room for one grid step per chunk */
        int64_t lo = j > 1 ? q[j - 1] + s : h + s, hi = h + s * ((L - h) / s - (k - j));
        q[j] = p < lo ? lo : p > hi ? hi : p;
    }
}

static int64_t shortest(const int64_t *q, int k)
{
    int64_t m = q[1] - q[0];
    for (int j = 1; j < k; j++)
        m = q[j + 1] - q[j] < m ? q[j + 1] - q[j] : m;
    return m;
}

static void push(struct split_pieces *sp, struct piece pc, double cost)
{
    if (sp->n == sp->cap) {
        sp->cap = sp->cap ? 2 * sp->cap : 64;
        sp->pc = xrealloc(sp->pc, (size_t)sp->cap * sizeof *sp->pc);
        sp->cost = xrealloc(sp->cost, (size_t)sp->cap * sizeof *sp->cost);
    }
    sp->pc[sp->n] = pc;
    sp->cost[sp->n++] = cost;
}

/* Chunks of a sequence of L positions and cost c (1: leave it whole). */
static int chunks_of(const struct split_conf *sc, const struct cost_model *cm, int64_t L,
                     double c, double theta, int P, int64_t *q)
{
    const int64_t cuts = grid_cuts(sc, L);
    if (sc->force >= 2) {
        int k = sc->force <= cuts ? sc->force : (int)cuts + 1; /* force <= SPLIT_MAX_CHUNKS */
        if (k >= 2)
            boundaries(sc, cm, L, k, q);
        return k < 1 ? 1 : k;
    }
    if (!sc->on || P < 2 || !(c > theta) || L < 2 * (int64_t)sc->min_chunk)
        return 1;
    double want = ceil(c / theta);
    int k = want < P ? (int)want : P;
    k = k < SPLIT_MAX_CHUNKS ? k : SPLIT_MAX_CHUNKS;
    k = k <= cuts ? k : (int)cuts + 1;
    for (; k >= 2; k--) {
        boundaries(sc, cm, L, k, q);
        if (shortest(q, k) >= sc->min_chunk)
            return k;
    }
    return 1;
}

void split_plan(const struct split_conf *sc, const struct cost_model *cm, const int64_t *len,
                int64_t n, int P, struct split_pieces *out)
{
    double total = 0;
    for (int64_t i = 0; i < n; i++)
        total += cost_of(cm, len[i]);
    const double theta = sc->threshold > 0 ? sc->threshold : sc->fraction * total / P;
    int64_t q[SPLIT_MAX_CHUNKS + 1];
    out->n = 0;
    out->nsplit = 0;
    for (int64_t i = 0; i < n; i++) {
        const double c = cost_of(cm, len[i]);
        const int k = chunks_of(sc, cm, len[i], c, theta, P, q);
        if (k < 2) {
            push(out, (struct piece){.seq = i, .p0 = 0, .p1 = len[i], .nchunks = 1}, c);
            continue;
        }
        out->nsplit++;
        for (int j = 0; j < k; j++)
            push(out, (struct piece){.seq = i, .p0 = q[j], .p1 = q[j + 1], .chunk = j,
                                     .nchunks = k},
                 split_piece_cost(sc, cm, q[j], q[j + 1]));
    }
}

void split_free(struct split_pieces *sp)
{
    free(sp->pc);
    free(sp->cost);
    sp->pc = NULL;
    sp->cost = NULL;
    sp->n = sp->cap = 0;
}

int64_t split_p2p_rows(const struct split_pieces *sp, const int *owner)
{
    int64_t rows = 0;
    for (int64_t i = 0; i < sp->n; i++) {
        const struct piece *a = &sp->pc[i];
        for (int j = a->chunk + 1; j < a->nchunks; j++) /* later chunks follow at i + ... */
            if (owner[i + (j - a->chunk)] != owner[i])
                rows += a->p1 - a->p0;
    }
    return rows;
}

int split_check(const struct split_conf *sc, const struct cost_model *cm, char *err,
                size_t errlen)
{
    if (!sc->on || sc->threshold <= 0)
        return 0;
    double tile = split_piece_cost(sc, cm, 0, sc->min_chunk);
    if (sc->threshold < tile)
        return errorf(err, errlen,
                      "parallel.split_threshold = %g is below the predicted cost of one chunk "
                      "of %d positions (%g): chunks would be shorter than one attention tile",
                      sc->threshold, sc->min_chunk, tile);
    return 0;
}
