/* test_sasrec_grad: the SASRec model's backward against central finite
 * differences, and a dump of every case for tests/torch_sasrec.py.
 *
 * Cases: tiny models (d = 8, 2 layers, N = 16) with 2 and 1 heads on
 * sequences of lengths 1, 5, 9; one with dropout 0.3 in training mode (the
 * keyed masks are fixed, so the loss stays differentiable); one with
 * sequences longer than the attention's 64-row query block. For each:
 * random emb and dout (fixed seeds), LayerNorm and bias parameters moved off
 * their 1 / 0 initial values, forward + backward, then
 *   - backward twice: demb identical, parameter gradients doubled (+=);
 *   - L = sum(out * dout): central differences (eps 1e-3) on a sample of
 *     entries of emb and of every parameter, norm-wise relative error per
 *     tensor below 1e-2 (relative to max(|g|, 1), see FD_FLOOR).
 * Usage: test_sasrec_grad FILE (FILE receives the cases; see write_case).
 * Exit 0 when every check passes, 1 otherwise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/check.h"
#include "model/model.h"
#include "base/rng.h"

#define FD_EPS 1e-3f
#define FD_TOL 1e-2
#define FD_SAMPLES 12
/* gradients of norm below FD_FLOOR are compared absolutely: the float
 * forward makes the differences noisy at ~1e-3, and the key biases' gradient
 * is exactly zero (softmax is invariant to q . bk, the same for every key) */
#define FD_FLOOR 1.0

struct gcase {
    const char *name;
    int d, layers, heads, max_len, train;
    float dropout;
    int B;
    int64_t lens[4];
};

static const struct gcase cases[] = {
    {"H2", 8, 2, 2, 16, 0, 0.0f, 3, {1, 5, 9}},
    {"H1", 8, 2, 1, 16, 0, 0.0f, 3, {1, 5, 9}},
    {"H2 dropout 0.3", 8, 2, 2, 16, 1, 0.3f, 3, {1, 5, 9}},
    {"H2 long", 8, 2, 2, 140, 0, 0.0f, 3, {3, 70, 130}},
};

struct run {
    struct model m;
    struct batch b;
    int64_t offsets[5];
    uint64_t *keys;
    float *emb, *dout, *out, *demb;
};

static float uniform(struct rng *r, float a) { return (float)((2.0 * rng_uniform(r) - 1.0) * a); }

static double loss(struct run *R)
{
    R->m.vt->forward(&R->m, &R->b, R->emb, R->out);
    double s = 0;
    for (int64_t i = 0; i < R->b.T * R->m.conf.d; i++)
        s += (double)R->out[i] * R->dout[i];
    return s;
}

static void setup(struct run *R, const struct gcase *c, uint64_t seed)
{
    struct model_conf conf = {.type = MODEL_SASREC, .d = c->d, .layers = c->layers,
                              .heads = c->heads, .max_len = c->max_len, .dropout = c->dropout};
    char err[256];
    memset(R, 0, sizeof *R);
    if (model_init(&R->m, &conf, &backend_cpu, seed, err, sizeof err) != 0)
        fatal("model_init: %s", err);
    struct rng r;
    rng_init(&r, rng_key(seed, 1, 0));
    for (int i = 0; i < R->m.nparams; i++) { /* LayerNorm and biases off 1 / 0 */
        struct dense_tensor *t = &R->m.params[i];
        if (t->rows != 1)
            continue;
        int gamma = strstr(t->name, "ln.g") != NULL;
        for (int64_t j = 0; j < t->n; j++)
            t->w[j] = gamma ? 1.0f + uniform(&r, 0.3f) : uniform(&r, 0.2f);
    }
    R->offsets[0] = 0;
    for (int i = 0; i < c->B; i++)
        R->offsets[i + 1] = R->offsets[i] + c->lens[i];
    const int64_t T = R->offsets[c->B], n = T * c->d;
    R->keys = xmalloc((size_t)T * sizeof *R->keys);
    for (int64_t t = 0; t < T; t++)
        R->keys[t] = rng_key(seed, 2, (uint64_t)t);
    R->b = (struct batch){.B = c->B, .T = T, .offsets = R->offsets, .row_keys = R->keys,
                          .train = c->train};
    float **bufs[] = {&R->emb, &R->dout, &R->out, &R->demb};
    for (int i = 0; i < 4; i++)
        *bufs[i] = xmalloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) {
        R->emb[i] = uniform(&r, 0.5f);
        R->dout[i] = uniform(&r, 1.0f);
    }
}

static void teardown(struct run *R)
{
    model_free(&R->m);
    free(R->keys);
    free(R->emb);
    free(R->dout);
    free(R->out);
    free(R->demb);
}

/* Norm-wise relative error of the analytic gradient g over a sample of the
 * entries of w (n values), by central differences of L. */
static double fd_check(struct run *R, const char *name, float *w, const float *g, int64_t n,
                       uint64_t seed)
{
    struct rng r;
    rng_init(&r, rng_key(seed, 3, (uint64_t)n));
    double num = 0, den = 0, worst = 0;
    int k = n < FD_SAMPLES ? (int)n : FD_SAMPLES;
    for (int s = 0; s < k; s++) {
        int64_t i = n <= FD_SAMPLES ? s : (int64_t)rng_below(&r, (uint64_t)n);
        float w0 = w[i];
        w[i] = w0 + FD_EPS;
        double lp = loss(R);
        w[i] = w0 - FD_EPS;
        double lm = loss(R);
        w[i] = w0;
        double fd = (lp - lm) / (2.0 * (double)FD_EPS);
        num += (fd - g[i]) * (fd - g[i]);
        den += (double)g[i] * g[i];
        if (fabs(fd - g[i]) > worst)
            worst = fabs(fd - g[i]);
    }
    double rel = sqrt(num) / fmax(sqrt(den), FD_FLOOR);
    printf("  %-14s fd rel %.2e (max abs %.1e, |g| %.2e)%s\n", name, rel, worst, sqrt(den),
           rel > FD_TOL ? "  FAIL" : "");
    return rel;
}

static void put(FILE *f, const void *p, size_t bytes)
{
    if (fwrite(p, 1, bytes, f) != bytes)
        fatal("test_sasrec_grad: write failed");
}

static void put_i32(FILE *f, int32_t v) { put(f, &v, sizeof v); }

/* Case layout (little-endian): int32 d, layers, heads, max_len, train, B, T,
 * nparams; float32 dropout; int64 offsets[B + 1]; uint64 row_keys[T];
 * float32 emb[T d], dout[T d]; per parameter: char name[48], int32 rows,
 * cols, float32 w[rows cols]; float32 out[T d], demb[T d]; per parameter:
 * float32 grad[rows cols]. The file: "SASG", int32 ncases, the cases. */
static void write_case(FILE *f, const struct run *R, const float *grads0)
{
    const struct model *m = &R->m;
    const int64_t T = R->b.T, n = T * m->conf.d;
    int32_t hdr[] = {m->conf.d, m->conf.layers, m->conf.heads, m->conf.max_len, R->b.train,
                     (int32_t)R->b.B, (int32_t)T, m->nparams};
    put(f, hdr, sizeof hdr);
    put(f, &m->conf.dropout, sizeof(float));
    put(f, R->offsets, (size_t)(R->b.B + 1) * sizeof(int64_t));
    put(f, R->keys, (size_t)T * sizeof(uint64_t));
    put(f, R->emb, (size_t)n * sizeof(float));
    put(f, R->dout, (size_t)n * sizeof(float));
    for (int i = 0; i < m->nparams; i++) {
        const struct dense_tensor *t = &m->params[i];
        put(f, t->name, sizeof t->name);
        put_i32(f, t->rows);
        put_i32(f, t->cols);
        put(f, t->w, (size_t)t->n * sizeof(float));
    }
    put(f, R->out, (size_t)n * sizeof(float));
    put(f, R->demb, (size_t)n * sizeof(float));
    for (int i = 0, off = 0; i < m->nparams; off += (int)m->params[i].n, i++)
        put(f, grads0 + off, (size_t)m->params[i].n * sizeof(float));
}

static int run_case(FILE *f, const struct gcase *c, uint64_t seed)
{
    struct run R;
    setup(&R, c, seed);
    struct model *m = &R.m;
    const int64_t n = R.b.T * c->d;
    int64_t total = 0;
    for (int i = 0; i < m->nparams; i++)
        total += m->params[i].n;
    printf("case %s: T = %lld, %d tensors, %lld parameters\n", c->name, (long long)R.b.T,
           m->nparams, (long long)total);

    model_zero_grads(m);
    loss(&R);
    m->vt->backward(m, &R.b, R.dout, R.demb);
    float *g0 = xmalloc((size_t)total * sizeof *g0), *demb0 = xmalloc((size_t)n * sizeof *demb0);
    for (int i = 0, off = 0; i < m->nparams; off += (int)m->params[i].n, i++)
        memcpy(g0 + off, m->params[i].g, (size_t)m->params[i].n * sizeof(float));
    memcpy(demb0, R.demb, (size_t)n * sizeof(float));
    write_case(f, &R, g0);

    int fails = 0;
    /* a second backward: demb written again, parameter gradients accumulated */
    m->vt->backward(m, &R.b, R.dout, R.demb);
    double acc = 0, demb_diff = 0;
    for (int i = 0, off = 0; i < m->nparams; off += (int)m->params[i].n, i++)
        for (int64_t j = 0; j < m->params[i].n; j++)
            acc = fmax(acc, fabs(m->params[i].g[j] - 2.0 * g0[off + j]) /
                                (1.0 + fabs(g0[off + j])));
    for (int64_t i = 0; i < n; i++)
        demb_diff = fmax(demb_diff, fabs(R.demb[i] - demb0[i]));
    printf("  backward twice: max |g2 - 2 g1| / (1 + |g1|) %.1e, max |demb2 - demb1| %.1e\n", acc,
           demb_diff);
    if (acc > 1e-5 || demb_diff != 0) {
        printf("  FAIL: gradients not accumulated / demb not rewritten\n");
        fails++;
    }

    fails += fd_check(&R, "emb", R.emb, demb0, n, seed) > FD_TOL;
    for (int i = 0, off = 0; i < m->nparams; off += (int)m->params[i].n, i++)
        fails += fd_check(&R, m->params[i].name, m->params[i].w, g0 + off, m->params[i].n,
                          seed + (uint64_t)i) > FD_TOL;
    free(g0);
    free(demb0);
    teardown(&R);
    return fails;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 1;
    }
    FILE *f = fopen(argv[1], "wb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    const int ncases = (int)(sizeof cases / sizeof cases[0]);
    put(f, "SASG", 4);
    put_i32(f, ncases);
    int fails = 0;
    for (int i = 0; i < ncases; i++)
        fails += run_case(f, &cases[i], 1234 + (uint64_t)i);
    if (fclose(f) != 0) {
        perror(argv[1]);
        return 1;
    }
    printf("%s: %d failure(s)\n", fails ? "FAIL" : "ok", fails);
    return fails ? 1 : 0;
}
