/* test_ctx_split: context-parallel HSTU and SASRec (parallel.split_long)
 * against the unsplit model. Every rank runs the whole batch unsplit (the reference);
 * then the batch's sequences are cut into chunks spread over the ranks
 * (chunk i of the step to rank i mod P), each rank runs its chunks with
 * the key/value exchange (train/ctx_split.c), and its outputs and input
 * gradients are compared with the reference's rows, the dense gradients
 * summed over the ranks with the reference's.
 *
 * Cases, for each model: every long sequence into 2 and into 3 chunks at
 * boundaries that do and do not fall on attention tiles (64 rows), with
 * dropout (train) and HSTU's time bias; one short sequence stays whole. Run on 1 rank (every
 * chunk local: messages to itself), 2 and 3. Tolerance 1e-5 relative to
 * the largest magnitude of each tensor (of the whole tensor for outputs and
 * input gradients; of each parameter's gradient, or 1% of the largest
 * parameter gradient when it is smaller). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/check.h"
#include "base/rng.h"
#include "comm/comm.h"
#include "model/model.h"
#include "train/ctx_split.h"
#include "mpitest.h"

#define NSEQ 3
#define D 16
#define TOL 1e-5

static const int64_t lens[NSEQ] = {150, 70, 9};

struct cut {
    const char *name;
    int k[NSEQ];               /* chunks of each sequence */
    int64_t at[NSEQ][4];       /* boundaries after 0 */
};

static const struct cut cuts[] = {
    {"2 chunks", {2, 2, 1}, {{64}, {31}, {0}}},
    {"3 chunks", {3, 3, 1}, {{50, 129}, {20, 45}, {0}}},
    {"3 chunks, tiny", {3, 2, 1}, {{1, 149}, {69}, {0}}},
};

static double max_abs(const float *x, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++)
        m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

/* worst |a - b| / max|b| over n values; 0 when both are 0 */
static double rel_err(const float *a, const float *b, int64_t n)
{
    double m = max_abs(b, n), e = 0;
    for (int64_t i = 0; i < n; i++)
        e = fabs((double)a[i] - b[i]) > e ? fabs((double)a[i] - b[i]) : e;
    return m > 0 ? e / m : e;
}

static void init_model(struct model *m, enum model_type type)
{
    struct model_conf conf = {.type = type, .d = D, .layers = 2, .heads = 2,
                              .max_len = 160, .dropout = 0.2f, .time_bias = type == MODEL_HSTU};
    char err[256];
    T_CHECK(model_init(m, &conf, &backend_cpu, 7, err, sizeof err) == 0, "%s", err);
}

int main(int argc, char **argv)
{
    struct comm c;
    comm_init(&c, &argc, &argv);
    char err[256];
    T_CHECK(!comm_setup_groups(&c, 0, err, sizeof err), "%s", err);
    const int P = c.size;

    /* the batch: embeddings, dout, timestamps, dropout keys */
    int64_t T = 0, off[NSEQ + 1] = {0};
    for (int s = 0; s < NSEQ; s++)
        off[s + 1] = T += lens[s];
    float *emb = xmalloc((size_t)(T * D) * sizeof *emb);
    float *dout = xmalloc((size_t)(T * D) * sizeof *dout);
    int64_t *ts = xmalloc((size_t)T * sizeof *ts);
    uint64_t *keys = xmalloc((size_t)T * sizeof *keys);
    struct rng r;
    rng_init(&r, rng_key(2026, 12, 1));
    for (int64_t i = 0; i < T * D; i++) {
        emb[i] = (float)(2 * rng_uniform(&r) - 1);
        dout[i] = (float)(2 * rng_uniform(&r) - 1);
    }
    for (int s = 0; s < NSEQ; s++)
        for (int64_t i = off[s]; i < off[s + 1]; i++) {
            ts[i] = (i > off[s] ? ts[i - 1] : 1000) + (int64_t)exp(12.0 * rng_uniform(&r));
            keys[i] = rng_key(11, (uint64_t)s, (uint64_t)(i - off[s]));
        }

    int bad = 0;
    for (int mt = 0; mt < 2; mt++) {
    const enum model_type type = mt ? MODEL_SASREC : MODEL_HSTU;
    const char *mname = mt ? "sasrec" : "hstu";
    /* the reference: the whole batch on this rank */
    struct model ref;
    init_model(&ref, type);
    float *out_ref = xmalloc((size_t)(T * D) * sizeof(float));
    float *demb_ref = xmalloc((size_t)(T * D) * sizeof(float));
    const struct batch bref = {.B = NSEQ, .T = T, .offsets = off, .ts = ts, .row_keys = keys,
                               .train = 1};
    model_zero_grads(&ref);
    ref.vt->forward(&ref, &bref, emb, out_ref);
    ref.vt->backward(&ref, &bref, dout, demb_ref);

    for (size_t ci = 0; ci < sizeof cuts / sizeof *cuts; ci++) {
        const struct cut *cu = &cuts[ci];
        /* the step's pieces and their owners */
        struct step_plan pl = {0};
        struct split_pieces *pc = &pl.pieces;
        int np = 0;
        for (int s = 0; s < NSEQ; s++)
            np += cu->k[s];
        pc->n = pc->cap = np;
        pc->pc = xcalloc((size_t)np, sizeof *pc->pc);
        pc->cost = xcalloc((size_t)np, sizeof *pc->cost);
        pl.owner = xmalloc((size_t)np * sizeof *pl.owner);
        for (int s = 0, g = 0; s < NSEQ; s++)
            for (int j = 0; j < cu->k[s]; j++, g++) {
                pc->pc[g] = (struct piece){.seq = s, .p0 = j ? cu->at[s][j - 1] : 0,
                                           .p1 = j + 1 < cu->k[s] ? cu->at[s][j] : lens[s],
                                           .chunk = j, .nchunks = cu->k[s]};
                pc->nsplit += j == 1;
                pl.owner[g] = g % P;
            }
        /* this rank's segments, as batch_train builds them */
        struct seq_batch sb = {0};
        pl.piece = xmalloc((size_t)np * sizeof *pl.piece);
        sb.offsets = xmalloc((size_t)(np + 1) * sizeof *sb.offsets);
        sb.pos0 = xmalloc((size_t)np * sizeof *sb.pos0);
        sb.key_off = xmalloc((size_t)(np + 1) * sizeof *sb.key_off);
        sb.offsets[0] = sb.key_off[0] = 0;
        for (int g = 0; g < np; g++)
            if (pl.owner[g] == c.rank) {
                const struct piece *p = &pc->pc[g];
                pl.piece[pl.n] = g;
                sb.pos0[pl.n] = p->p0;
                sb.offsets[pl.n + 1] = sb.offsets[pl.n] + p->p1 - p->p0;
                sb.key_off[pl.n + 1] = sb.key_off[pl.n] + p->p1;
                pl.n++;
            }
        sb.B = pl.n;
        sb.T = sb.offsets[sb.B];
        const int64_t Tl = sb.T, K = sb.key_off[sb.B];
        float *e = xmalloc((size_t)(Tl * D + 1) * sizeof *e);
        float *dd = xmalloc((size_t)(Tl * D + 1) * sizeof *dd);
        float *out = xmalloc((size_t)(Tl * D + 1) * sizeof *out);
        float *demb = xmalloc((size_t)(Tl * D + 1) * sizeof *demb);
        int64_t *lts = xmalloc((size_t)(Tl + 1) * sizeof *lts);
        uint64_t *lkeys = xmalloc((size_t)(Tl + 1) * sizeof *lkeys);
        int64_t *rows = xmalloc((size_t)(Tl + 1) * sizeof *rows); /* reference row of each token */
        sb.key_ts = xmalloc((size_t)(K + 1) * sizeof *sb.key_ts);
        for (int64_t b = 0; b < sb.B; b++) {
            const struct piece *p = &pc->pc[pl.piece[b]];
            const int64_t s0 = off[p->seq];
            for (int64_t i = 0; i < p->p1 - p->p0; i++)
                rows[sb.offsets[b] + i] = s0 + p->p0 + i;
            memcpy(sb.key_ts + sb.key_off[b], ts + s0, (size_t)p->p1 * sizeof *ts);
        }
        for (int64_t t = 0; t < Tl; t++) {
            memcpy(e + t * D, emb + rows[t] * D, D * sizeof *e);
            memcpy(dd + t * D, dout + rows[t] * D, D * sizeof *dd);
            lts[t] = ts[rows[t]];
            lkeys[t] = keys[rows[t]];
        }
        struct ctx_split *x = ctx_split_new(&c, &pl, &sb, 2, NULL);
        T_CHECK(x != NULL || P > np, "every rank holds a chunk of a cut sequence");
        struct model m;
        init_model(&m, type);
        model_zero_grads(&m);
        const struct batch b = {.B = sb.B, .T = Tl, .offsets = sb.offsets, .ts = lts,
                                .row_keys = lkeys, .train = 1,
                                .split = x ? ctx_split_model(x) : NULL};
        m.vt->forward(&m, &b, e, out);
        m.vt->backward(&m, &b, dd, demb);
        double e_out = 0, e_demb = 0;
        for (int64_t t = 0; t < Tl; t++) {
            double a = rel_err(out + t * D, out_ref + rows[t] * D, D) *
                       max_abs(out_ref + rows[t] * D, D) / max_abs(out_ref, T * D);
            double g = rel_err(demb + t * D, demb_ref + rows[t] * D, D) *
                       max_abs(demb_ref + rows[t] * D, D) / max_abs(demb_ref, T * D);
            e_out = a > e_out ? a : e_out;
            e_demb = g > e_demb ? g : e_demb;
        }
        comm_allreduce_sum_f32(&c, COMM_DP, m.grad, m.ngrad, COMM_PH_DENSE);
        /* each tensor against its own scale, but at least 1% of the largest
         * gradient: some are 0 but for rounding (SASRec's key bias: the
         * softmax does not change when every key moves alike) */
        double e_grad = 0, gmax = 0;
        const char *worst = "";
        for (int k = 0; k < m.nparams; k++) {
            double g = max_abs(ref.params[k].g, ref.params[k].n);
            gmax = g > gmax ? g : gmax;
        }
        for (int k = 0; k < m.nparams; k++) {
            double own = max_abs(ref.params[k].g, ref.params[k].n);
            double ek = rel_err(m.params[k].g, ref.params[k].g, m.params[k].n) * own /
                        (own > 1e-2 * gmax ? own : 1e-2 * gmax);
            if (ek > e_grad) {
                e_grad = ek;
                worst = m.params[k].name;
            }
        }
        e_out = comm_allreduce_max_f64(&c, COMM_DP, e_out);
        e_demb = comm_allreduce_max_f64(&c, COMM_DP, e_demb);
        int ok = e_out <= TOL && e_demb <= TOL && e_grad <= TOL;
        bad += !ok;
        if (c.rank == 0)
            printf("%s %s, %s on %d rank%s: out %.2g, demb %.2g, dense gradients %.2g (%s)\n",
                   ok ? "ok  " : "FAIL", mname, cu->name, P, P > 1 ? "s" : "", e_out, e_demb,
                   e_grad, worst);
        model_free(&m);
        ctx_split_free(x);
        free(e); free(dd); free(out); free(demb); free(lts); free(lkeys); free(rows);
        free(sb.offsets); free(sb.pos0); free(sb.key_off); free(sb.key_ts);
        free(pl.piece); free(pl.owner);
        split_free(pc);
    }
    model_free(&ref);
    free(out_ref); free(demb_ref);
    }
    free(emb); free(dout); free(ts); free(keys);
    comm_free(&c);
    return bad ? 1 : 0;
}
