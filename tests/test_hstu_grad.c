/* test_hstu_grad: the HSTU model (model_hstu.c, backend_cpu_hstu.c) on the
 * CPU backend: forward and backward of a tiny model, gradients checked by
 * central finite differences of L = sum(out * dout), and everything dumped
 * for the PyTorch oracle (tests/torch_hstu.py).
 *
 *   test_hstu_grad [FILE_A [FILE_B]]
 *
 * Case A: 2 layers, d 8, 2 heads, N 16, time bias, no dropout.
 * Case B: 2 layers, d 8, 1 head, N 16, no time bias, dropout 0.25 (train).
 * Cases C, D: A and B with model.last_layer = targets and batch.reads
 * (sequence 0 read nowhere, the others at about half their rows; dout 0
 * elsewhere): also against the full last layer on the same weights (the
 * read rows' outputs, demb and every gradient).
 * Batch: 3 sequences of lengths 1, 5, 9 with timestamps whose gaps reach
 * many time buckets, including the clamped last one. Also the attention
 * op alone against plain double loops on sequences spanning several of its
 * row tiles, and its rows form (hstu_attn_rows_*) against it. Exit 0 pass,
 * 1 fail.
 *
 * File layout (little-endian, native): "HSTUGRAD", int32 version 2, d,
 * layers, heads, N, time_bias, has_ts, train, float dropout, int64 B, T,
 * int64 offsets[B+1], int64 ts[T] (when has_ts), float emb[T d], dout[T d],
 * int32 nreads, int64 reads[nreads] (0: every row's output is read), int32
 * nmasks, then the masks as float 0/1 (input [T d], then per layer
 * [T d]), int32 nparams, per parameter: char name[48], int32 rows, cols,
 * float w[rows cols]; then float out[T d], demb[T d], and every parameter
 * gradient in the same order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/check.h"
#include "model/model.h"
#include "base/rng.h"

#define B_SEQ 3
#define T_TOK 15
#define FD_EPS 1e-3
#define FD_RTOL 1e-2
#define FD_ATOL 2e-4 /* float32 rounding of L (~1e-7 |L|) over 2 eps */

struct tcase {
    const char *name;
    int heads, time_bias, train;
    float dropout;
    int targets; /* model.last_layer = targets, batch.reads = reads[] */
};

#define N_READS 8
static const int64_t reads[N_READS] = {2, 4, 5, 7, 9, 10, 12, 14};

static const int64_t offsets[B_SEQ + 1] = {0, 1, 6, 15};
/* seconds; gaps from 0 s to 1e17 s (beyond the last bucket, e^(128 * 0.301)) */
static const int64_t ts[T_TOK] = {
    1000,
    1000, 1003, 1043, 1743, 31743,
    5, 6, 13, 110, 2110, 102110, 3102110, 1003102110, 100000001003102110LL,
};

struct fixture {
    struct model m;
    struct batch b;
    uint64_t keys[T_TOK];
    float emb[T_TOK * 64], dout[T_TOK * 64], out[T_TOK * 64], demb[T_TOK * 64];
};

/* L = sum(out * dout) in double, after a forward pass */
static double loss(struct fixture *f)
{
    f->m.vt->forward(&f->m, &f->b, f->emb, f->out);
    double s = 0;
    for (int i = 0; i < T_TOK * f->m.conf.d; i++)
        s += (double)f->out[i] * f->dout[i];
    return s;
}

/* central difference of L in *w against the analytic gradient g; returns
 * 1 on mismatch; *worst: the largest |fd - g| / tolerance seen. */
static int fd_check(struct fixture *f, float *w, float g, const char *what, int64_t idx,
                    double *worst)
{
    float w0 = *w;
    *w = (float)(w0 + FD_EPS);
    double lp = loss(f);
    *w = (float)(w0 - FD_EPS);
    double lm = loss(f);
    double h = (double)(float)(w0 + FD_EPS) - (double)(float)(w0 - FD_EPS);
    *w = w0;
    double fd = (lp - lm) / h;
    double diff = fabs(fd - g), tol = FD_RTOL * fmax(fabs(fd), fabs(g)) + FD_ATOL;
    if (diff / tol > *worst)
        *worst = diff / tol;
    if (diff > tol) {
        printf("FAIL fd %s[%lld]: analytic %.6g, finite difference %.6g\n", what,
               (long long)idx, g, fd);
        return 1;
    }
    return 0;
}

/* ~20 entries of tensor t: those with a non-zero gradient first (biases
 * are mostly unused by a short batch), chosen at random. */
static int fd_tensor(struct fixture *f, struct dense_tensor *t, const float *g, int want,
                     struct rng *r)
{
    int64_t *nz = xmalloc((size_t)t->n * sizeof *nz), nnz = 0;
    for (int64_t i = 0; i < t->n; i++)
        if (g[i] != 0.0f)
            nz[nnz++] = i;
    int bad = 0;
    double worst = 0;
    for (int k = 0; k < want; k++) {
        int64_t i = nnz > 0 && k < want - 2 ? nz[rng_below(r, (uint64_t)nnz)]
                                            : (int64_t)rng_below(r, (uint64_t)t->n);
        bad += fd_check(f, &t->w[i], g[i], t->name, i, &worst);
    }
    printf("  fd %-14s %3d entries (%lld of %lld with gradient), worst err/tol %.2f\n", t->name,
           want, (long long)nnz, (long long)t->n, worst);
    free(nz);
    return bad;
}

static void fill(struct rng *r, float *x, int64_t n, float scale)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)((2.0 * rng_uniform(r) - 1.0) * scale);
}

static void put(FILE *fp, const void *p, size_t bytes)
{
    if (fwrite(p, 1, bytes, fp) != bytes)
        fatal("test_hstu_grad: write failed");
}

static void put_i32(FILE *fp, int32_t v) { put(fp, &v, sizeof v); }

static void dump(struct fixture *f, const struct tcase *tc, float **grads, const char *path)
{
    const struct model_conf *c = &f->m.conf;
    int d = c->d, nm = tc->train && tc->dropout > 0 ? c->layers + 1 : 0;
    FILE *fp = fopen(path, "wb");
    if (!fp)
        fatal("test_hstu_grad: cannot write %s", path);
    put(fp, "HSTUGRAD", 8);
    put_i32(fp, 2);
    put_i32(fp, d);
    put_i32(fp, c->layers);
    put_i32(fp, c->heads);
    put_i32(fp, c->max_len);
    put_i32(fp, c->time_bias);
    put_i32(fp, f->b.ts != NULL);
    put_i32(fp, f->b.train);
    put(fp, &c->dropout, sizeof(float));
    put(fp, &f->b.B, sizeof(int64_t));
    put(fp, &f->b.T, sizeof(int64_t));
    put(fp, offsets, sizeof offsets);
    if (f->b.ts)
        put(fp, ts, sizeof ts);
    put(fp, f->emb, sizeof(float) * T_TOK * (size_t)d);
    put(fp, f->dout, sizeof(float) * T_TOK * (size_t)d);
    put_i32(fp, (int32_t)f->b.nreads);
    if (f->b.nreads)
        put(fp, reads, sizeof reads);
    put_i32(fp, nm);
    float ones[T_TOK * 64], y[T_TOK * 64], mf[T_TOK * 64];
    uint8_t mask[T_TOK * 64];
    for (int i = 0; i < T_TOK * d; i++)
        ones[i] = 1.0f;
    for (int s = 0; s < nm; s++) { /* the masks of sites 0 .. layers, as the model draws them */
        backend_cpu.dropout_fwd(T_TOK, d, c->dropout, f->keys, (uint64_t)s, ones, y, mask);
        for (int i = 0; i < T_TOK * d; i++)
            mf[i] = mask[i];
        put(fp, mf, sizeof(float) * T_TOK * (size_t)d);
    }
    put_i32(fp, f->m.nparams);
    for (int p = 0; p < f->m.nparams; p++) {
        struct dense_tensor *t = &f->m.params[p];
        put(fp, t->name, sizeof t->name);
        put_i32(fp, t->rows);
        put_i32(fp, t->cols);
        put(fp, t->w, sizeof(float) * (size_t)t->n);
    }
    put(fp, f->out, sizeof(float) * T_TOK * (size_t)d);
    put(fp, f->demb, sizeof(float) * T_TOK * (size_t)d);
    for (int p = 0; p < f->m.nparams; p++)
        put(fp, grads[p], sizeof(float) * (size_t)f->m.params[p].n);
    if (fclose(fp) != 0)
        fatal("test_hstu_grad: cannot write %s", path);
}

/* the timestamps must not sit on a bucket boundary (float64 log in C and
 * in PyTorch may differ in the last bit) */
static void check_ts(void)
{
    for (int b = 0; b < B_SEQ; b++)
        for (int64_t i = offsets[b]; i < offsets[b + 1]; i++)
            for (int64_t j = offsets[b]; j <= i; j++) {
                double dt = (double)(ts[i] - ts[j]);
                double u = log(dt > 1 ? dt : 1) / 0.301, fr = u - floor(u);
                if (dt > 1 && (fr < 1e-6 || fr > 1 - 1e-6))
                    fatal("test_hstu_grad: ts gap %g on a bucket boundary", dt);
            }
}

/* max |a - b| / max(max |b|, tiny) over n values */
static double max_rel(const float *a, const float *b, int64_t n)
{
    double e = 0, m = 1e-30;
    for (int64_t i = 0; i < n; i++) {
        e = fmax(e, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return e / m;
}

/* The last_layer = targets model of f (forward and backward done, its
 * gradients grads) against the full last layer on the same weights and
 * batch: the read rows' outputs, demb and every gradient to 1e-5 of their
 * largest value (BLAS sums over fewer rows: the order of the additions
 * differs); reports which are bit for bit equal. */
static int vs_full(struct fixture *f, const struct model_conf *conf, float **grads)
{
    struct model_conf fc = *conf;
    fc.last_targets = 0;
    struct model m;
    char err[256];
    const int d = conf->d;
    if (model_init(&m, &fc, &backend_cpu, 42, err, sizeof err) != 0)
        fatal("model_init: %s", err);
    for (int p = 0; p < m.nparams; p++)
        memcpy(m.params[p].w, f->m.params[p].w, (size_t)m.params[p].n * sizeof(float));
    float out[T_TOK * 64], demb[T_TOK * 64], ro[N_READS * 64], rf[N_READS * 64];
    model_zero_grads(&m);
    m.vt->forward(&m, &f->b, f->emb, out);
    m.vt->backward(&m, &f->b, f->dout, demb);
    for (int k = 0; k < N_READS; k++) {
        memcpy(ro + k * d, f->out + reads[k] * d, (size_t)d * sizeof(float));
        memcpy(rf + k * d, out + reads[k] * d, (size_t)d * sizeof(float));
    }
    int bad = 0, same = 0, n = 0;
    double worst = 0;
    for (int p = -2; p < m.nparams; p++, n++) {
        const float *a = p == -2 ? ro : p == -1 ? f->demb : grads[p];
        const float *b = p == -2 ? rf : p == -1 ? demb : m.params[p].g;
        const int64_t len = p == -2 ? N_READS * d : p == -1 ? T_TOK * d : m.params[p].n;
        const double e = max_rel(a, b, len);
        worst = fmax(worst, e);
        same += memcmp(a, b, (size_t)len * sizeof(float)) == 0;
        if (!(e <= 1e-5)) {
            printf("FAIL vs the full last layer: %s differs by %.2e\n",
                   p == -2 ? "out (read rows)" : p == -1 ? "demb" : m.params[p].name, e);
            bad++;
        }
    }
    printf("  vs the full last layer: read outputs, demb, %d gradients: worst %.1e, %d of %d "
           "bit for bit\n", m.nparams, worst, same, n);
    model_free(&m);
    return bad;
}

static int run_case(const struct tcase *tc, const char *path)
{
    struct fixture *f = xcalloc(1, sizeof *f);
    struct model_conf conf = {.type = MODEL_HSTU, .d = 8, .layers = 2, .heads = tc->heads,
                              .max_len = 16, .dropout = tc->dropout, .time_bias = tc->time_bias,
                              .last_targets = tc->targets};
    char err[256];
    int d = conf.d, bad = 0;
    struct rng r;

    printf("case %s: d %d, layers %d, heads %d, N %d, time_bias %d, dropout %g, train %d, "
           "last_layer %s\n", tc->name, d, conf.layers, conf.heads, conf.max_len,
           conf.time_bias, conf.dropout, tc->train, tc->targets ? "targets" : "full");
    if (model_init(&f->m, &conf, &backend_cpu, 42, err, sizeof err) != 0)
        fatal("model_init: %s", err);
    /* larger weights than the initialisation, so that every nonlinearity
     * (SiLU, LayerNorm, the attention's SiLU) is away from its linear part */
    rng_init(&r, rng_key(2024, (uint64_t)tc->heads, 1));
    for (int p = 0; p < f->m.nparams; p++) {
        struct dense_tensor *t = &f->m.params[p];
        float s = strstr(t->name, "bias") ? 1.0f : strstr(t->name, "o.b") ? 0.3f : 0.6f;
        fill(&r, t->w, t->n, s);
    }
    fill(&r, f->emb, T_TOK * d, 0.5f);
    fill(&r, f->dout, T_TOK * d, 1.0f);
    for (int t = 0; t < T_TOK; t++)
        f->keys[t] = rng_key(77, (uint64_t)t, 0);
    f->b = (struct batch){.B = B_SEQ, .T = T_TOK, .offsets = offsets,
                          .ts = tc->time_bias ? ts : NULL, .row_keys = f->keys,
                          .train = tc->train};
    if (tc->targets) { /* the outputs read: dout 0 elsewhere */
        f->b.reads = reads;
        f->b.nreads = N_READS;
        for (int t = 0, k = 0; t < T_TOK; t++)
            if (k < N_READS && reads[k] == t)
                k++;
            else
                memset(f->dout + t * d, 0, (size_t)d * sizeof *f->dout);
    }

    /* forward, backward; gradients accumulate: run backward twice and
     * check that it doubled, then keep half */
    model_zero_grads(&f->m);
    f->m.vt->forward(&f->m, &f->b, f->emb, f->out);
    f->m.vt->backward(&f->m, &f->b, f->dout, f->demb);
    float **grads = xcalloc((size_t)f->m.nparams, sizeof *grads);
    for (int p = 0; p < f->m.nparams; p++) {
        struct dense_tensor *t = &f->m.params[p];
        grads[p] = xmalloc((size_t)t->n * sizeof(float));
        memcpy(grads[p], t->g, (size_t)t->n * sizeof(float));
    }
    f->m.vt->backward(&f->m, &f->b, f->dout, f->demb);
    for (int p = 0; p < f->m.nparams; p++)
        for (int64_t i = 0; i < f->m.params[p].n; i++)
            if (fabsf(f->m.params[p].g[i] - 2 * grads[p][i]) > 1e-6f * (1 + fabsf(grads[p][i]))) {
                printf("FAIL %s[%lld]: gradient not accumulated\n", f->m.params[p].name,
                       (long long)i);
                bad++;
                break;
            }
    for (int i = 0; i < T_TOK * d; i++) /* |out_t| = 1 */
        if (i % d == 0) {
            double s = 0;
            for (int j = 0; j < d; j++)
                s += (double)f->out[i + j] * f->out[i + j];
            if (fabs(s - 1) > 1e-5) {
                printf("FAIL out row %d has norm^2 %g\n", i / d, s);
                bad++;
            }
        }
    if (path)
        dump(f, tc, grads, path);
    if (tc->targets)
        bad += vs_full(f, &conf, grads);

    float demb[T_TOK * 64];
    memcpy(demb, f->demb, sizeof demb);
    rng_init(&r, rng_key(99, (uint64_t)tc->heads, 2));
    for (int p = 0; p < f->m.nparams; p++)
        bad += fd_tensor(f, &f->m.params[p], grads[p], 20, &r);
    double worst = 0;
    for (int k = 0; k < 10; k++) {
        int64_t i = (int64_t)rng_below(&r, T_TOK * (uint64_t)d);
        bad += fd_check(f, &f->emb[i], demb[i], "emb", i, &worst);
    }
    printf("  fd %-14s %3d entries, worst err/tol %.2f\n", "emb", 10, worst);

    for (int p = 0; p < f->m.nparams; p++)
        free(grads[p]);
    free(grads);
    model_free(&f->m);
    free(f);
    return bad;
}

/* ---- the attention op against plain double loops, over several tiles ---- */

static double silu_d(double s) { return s / (1 + exp(-s)); }

static double nrm_err(const float *c, const double *r, int64_t n)
{
    double e = 0, t = 0;
    for (int64_t i = 0; i < n; i++) {
        e += (c[i] - r[i]) * (c[i] - r[i]);
        t += r[i] * r[i];
    }
    return sqrt(e) / fmax(sqrt(t), 1e-30);
}

/* Sequences of lengths 0, 1, 63, 64, 65, 150 (the CPU op tiles 64 rows),
 * H 2, dqk 4, dv 3, N 160: out, dq, dk, dv, and the bias gradients (which
 * must accumulate onto what is there) to 1e-5 norm-wise. */
static int attn_check(void)
{
    enum { NB = 6, H = 2, DQK = 4, DV = 3, N = 160 };
    static const int64_t lens[NB] = {0, 1, 63, 64, 65, 150};
    int64_t off[NB + 1] = {0};
    for (int b = 0; b < NB; b++)
        off[b + 1] = off[b] + lens[b];
    int64_t T = off[NB], nq = T * H * DQK, nv = T * H * DV, np = 2 * N - 1;
    int64_t nt = HSTU_TIME_BUCKETS + 1;
    struct rng r;
    rng_init(&r, rng_key(5, 6, 7));
    float *q = xmalloc((size_t)nq * 4), *k = xmalloc((size_t)nq * 4), *v = xmalloc((size_t)nv * 4);
    float *dout = xmalloc((size_t)nv * 4), *out = xmalloc((size_t)nv * 4);
    float *dq = xmalloc((size_t)nq * 4), *dk = xmalloc((size_t)nq * 4), *dv = xmalloc((size_t)nv * 4);
    float pb[2 * N - 1], tb[HSTU_TIME_BUCKETS + 1], dpb[2 * N - 1], dtb[HSTU_TIME_BUCKETS + 1];
    int64_t *tsv = xmalloc((size_t)T * sizeof *tsv);
    double *ro = xcalloc((size_t)nv, 8), *rdq = xcalloc((size_t)nq, 8), *rdk = xcalloc((size_t)nq, 8);
    double *rdv = xcalloc((size_t)nv, 8), rdpb[2 * N - 1], rdtb[HSTU_TIME_BUCKETS + 1];
    fill(&r, q, nq, 1.0f);
    fill(&r, k, nq, 1.0f);
    fill(&r, v, nv, 1.0f);
    fill(&r, dout, nv, 1.0f);
    fill(&r, pb, np, 1.0f);
    fill(&r, tb, nt, 1.0f);
    fill(&r, dpb, np, 1.0f); /* accumulated onto */
    fill(&r, dtb, nt, 1.0f);
    for (int64_t i = 0; i < np; i++)
        rdpb[i] = dpb[i];
    for (int64_t i = 0; i < nt; i++)
        rdtb[i] = dtb[i];
    for (int64_t t = 0; t < T; t++) /* gaps of 1 s .. ~e^20 s */
        tsv[t] = (t ? tsv[t - 1] : 0) + (int64_t)exp(20.0 * rng_uniform(&r));
    backend_cpu.hstu_attn_fwd(NB, off, H, DQK, DV, N, q, k, v, pb, tb, tsv, out);
    backend_cpu.hstu_attn_bwd(NB, off, H, DQK, DV, N, q, k, v, pb, tb, tsv, dout, dq, dk, dv, dpb,
                              dtb);
    for (int b = 0; b < NB; b++)
        for (int h = 0; h < H; h++)
            for (int64_t i = off[b]; i < off[b + 1]; i++)
                for (int64_t j = off[b]; j <= i; j++) {
                    const float *qi = q + (i * H + h) * DQK, *kj = k + (j * H + h) * DQK;
                    double s = 0, da = 0, adt = fabs((double)(tsv[i] - tsv[j]));
                    for (int c = 0; c < DQK; c++)
                        s += (double)qi[c] * kj[c];
                    int bk = (int)floor(log(fmax(adt, 1)) / 0.301);
                    bk = bk > HSTU_TIME_BUCKETS ? HSTU_TIME_BUCKETS : bk;
                    s += pb[N - 1 + (j - i)] + tb[bk];
                    double a = silu_d(s) / N, sg = 1 / (1 + exp(-s));
                    for (int c = 0; c < DV; c++) {
                        ro[(i * H + h) * DV + c] += a * v[(j * H + h) * DV + c];
                        da += (double)dout[(i * H + h) * DV + c] * v[(j * H + h) * DV + c];
                        rdv[(j * H + h) * DV + c] += a * dout[(i * H + h) * DV + c];
                    }
                    double ds = da * sg * (1 + s * (1 - sg)) / N;
                    for (int c = 0; c < DQK; c++) {
                        rdq[(i * H + h) * DQK + c] += ds * kj[c];
                        rdk[(j * H + h) * DQK + c] += ds * qi[c];
                    }
                    rdpb[N - 1 + (j - i)] += ds;
                    rdtb[bk] += ds;
                }
    double e[6] = {nrm_err(out, ro, nv),   nrm_err(dq, rdq, nq),  nrm_err(dk, rdk, nq),
                   nrm_err(dv, rdv, nv),   nrm_err(dpb, rdpb, np), nrm_err(dtb, rdtb, nt)};
    static const char *names[6] = {"out", "dq", "dk", "dv", "dpos_bias", "dtime_bias"};
    int bad = 0;
    printf("attention op vs double loops (lengths 0 1 63 64 65 150):");
    for (int i = 0; i < 6; i++) {
        printf(" %s %.1e", names[i], e[i]);
        bad += !(e[i] <= 1e-5);
    }
    printf("%s\n", bad ? "  FAIL" : "");
    free(q), free(k), free(v), free(dout), free(out), free(dq), free(dk), free(dv), free(tsv);
    free(ro), free(rdq), free(rdk), free(rdv);
    return bad;
}

/* The rows form against the plain op on the same sequences (lengths 0, 1,
 * 63, 64, 65, 150; time bias): the queries at positions p with p % 3 != 1
 * (a compact tile spans more than one of the plain op's), dout 0 at the
 * others: out and dq at the read rows, dk, dv, the bias gradients, to
 * 1e-6 norm-wise. */
static int attn_rows_check(void)
{
    enum { NB = 6, H = 2, DQK = 4, DV = 3, N = 160 };
    static const int64_t lens[NB] = {0, 1, 63, 64, 65, 150};
    int64_t off[NB + 1] = {0}, qoff[NB + 1] = {0};
    for (int b = 0; b < NB; b++)
        off[b + 1] = off[b] + lens[b];
    const int64_t T = off[NB], nq = T * H * DQK, nv = T * H * DV, np = 2 * N - 1;
    const int64_t nt = HSTU_TIME_BUCKETS + 1, lq = H * DQK, lv = H * DV;
    int64_t *rows = xmalloc((size_t)T * sizeof *rows), *qpos = xmalloc((size_t)T * sizeof *qpos);
    int64_t R = 0;
    for (int b = 0; b < NB; b++) {
        for (int64_t p = 0; p < lens[b]; p++)
            if (p % 3 != 1) {
                rows[R] = off[b] + p;
                qpos[R++] = p;
            }
        qoff[b + 1] = R;
    }
    struct rng r;
    rng_init(&r, rng_key(8, 9, 10));
    float *q = xmalloc((size_t)nq * 4), *k = xmalloc((size_t)nq * 4), *v = xmalloc((size_t)nv * 4);
    float *dout = xcalloc((size_t)nv, 4), *out = xmalloc((size_t)nv * 4);
    float *dq = xmalloc((size_t)nq * 4), *dk = xmalloc((size_t)nq * 4), *dv = xmalloc((size_t)nv * 4);
    float *rq = xmalloc((size_t)nq * 4), *rdout = xmalloc((size_t)nv * 4);
    float *rout = xmalloc((size_t)nv * 4), *rdq = xmalloc((size_t)nq * 4);
    float *rdk = xmalloc((size_t)nq * 4), *rdv = xmalloc((size_t)nv * 4);
    float pb[2 * N - 1], tb[HSTU_TIME_BUCKETS + 1];
    float dpb[2 * N - 1] = {0}, dtb[HSTU_TIME_BUCKETS + 1] = {0};
    float rdpb[2 * N - 1] = {0}, rdtb[HSTU_TIME_BUCKETS + 1] = {0};
    int64_t *tsv = xmalloc((size_t)T * sizeof *tsv);
    fill(&r, q, nq, 1.0f);
    fill(&r, k, nq, 1.0f);
    fill(&r, v, nv, 1.0f);
    fill(&r, pb, np, 1.0f);
    fill(&r, tb, nt, 1.0f);
    for (int64_t t = 0; t < T; t++)
        tsv[t] = (t ? tsv[t - 1] : 0) + (int64_t)exp(20.0 * rng_uniform(&r));
    for (int64_t i = 0; i < R; i++) { /* the read rows: compact q and dout */
        memcpy(rq + i * lq, q + rows[i] * lq, (size_t)lq * 4);
        fill(&r, rdout + i * lv, lv, 1.0f);
        memcpy(dout + rows[i] * lv, rdout + i * lv, (size_t)lv * 4);
    }
    backend_cpu.hstu_attn_fwd(NB, off, H, DQK, DV, N, q, k, v, pb, tb, tsv, out);
    backend_cpu.hstu_attn_bwd(NB, off, H, DQK, DV, N, q, k, v, pb, tb, tsv, dout, dq, dk, dv, dpb,
                              dtb);
    backend_cpu.hstu_attn_rows_fwd(NB, qoff, qpos, off, H, DQK, DV, N, rq, k, v, pb, tb, tsv,
                                   rout);
    backend_cpu.hstu_attn_rows_bwd(NB, qoff, qpos, off, H, DQK, DV, N, rq, k, v, pb, tb, tsv,
                                   rdout, rdq, rdk, rdv, rdpb, rdtb);
    double *fo = xmalloc((size_t)(R * lv) * 8), *fq = xmalloc((size_t)(R * lq) * 8);
    double *fk = xmalloc((size_t)nq * 8), *fv = xmalloc((size_t)nv * 8);
    double fpb[2 * N - 1], ftb[HSTU_TIME_BUCKETS + 1];
    for (int64_t i = 0; i < R; i++) { /* the plain op's, as references */
        for (int c = 0; c < lv; c++)
            fo[i * lv + c] = out[rows[i] * lv + c];
        for (int c = 0; c < lq; c++)
            fq[i * lq + c] = dq[rows[i] * lq + c];
    }
    for (int64_t i = 0; i < nq; i++)
        fk[i] = dk[i];
    for (int64_t i = 0; i < nv; i++)
        fv[i] = dv[i];
    for (int64_t i = 0; i < np; i++)
        fpb[i] = dpb[i];
    for (int64_t i = 0; i < nt; i++)
        ftb[i] = dtb[i];
    double e[6] = {nrm_err(rout, fo, R * lv), nrm_err(rdq, fq, R * lq), nrm_err(rdk, fk, nq),
                   nrm_err(rdv, fv, nv), nrm_err(rdpb, fpb, np), nrm_err(rdtb, ftb, nt)};
    static const char *names[6] = {"out", "dq", "dk", "dv", "dpos_bias", "dtime_bias"};
    int bad = 0;
    printf("rows attention op (%lld of %lld queries) vs the plain op:", (long long)R,
           (long long)T);
    for (int i = 0; i < 6; i++) {
        printf(" %s %.1e", names[i], e[i]);
        bad += !(e[i] <= 1e-6);
    }
    printf("%s\n", bad ? "  FAIL" : "");
    free(q), free(k), free(v), free(dout), free(out), free(dq), free(dk), free(dv), free(tsv);
    free(rq), free(rdout), free(rout), free(rdq), free(rdk), free(rdv), free(rows), free(qpos);
    free(fo), free(fq), free(fk), free(fv);
    return bad;
}

int main(int argc, char **argv)
{
    static const struct tcase cases[] = {
        {"A (2 heads, time bias)", 2, 1, 0, 0.0f, 0},
        {"B (1 head, dropout)", 1, 0, 1, 0.25f, 0},
        {"C (A, last_layer targets)", 2, 1, 0, 0.0f, 1},
        {"D (B, last_layer targets)", 1, 0, 1, 0.25f, 1},
    };
    int bad = 0;
    check_ts();
    bad += attn_check();
    bad += attn_rows_check();
    for (int c = 0; c < 4; c++)
        bad += run_case(&cases[c], argc > 1 + c ? argv[1 + c] : NULL);
    printf("%s: %d failure(s)\n", bad ? "FAIL" : "PASS", bad);
    return bad ? 1 : 0;
}
