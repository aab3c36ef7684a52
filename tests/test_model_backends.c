/* test_model_backends: whole models (src/model/model.h) on a device backend
 * against the same models on the CPU backend: forward output, the gradient
 * of the input rows and every dense parameter gradient, for HSTU (with and
 * without the time bias) and SASRec, without and with dropout (masks are
 * keyed, so both backends drop the same values), on jagged batches with
 * empty sequences, L = 1 and L = max_len.
 *
 *   test_model_backends [BACKEND]   (default "cuda"; "cpu" checks the harness)
 *
 * Per model: both backends build it from the same seed (the initial weights
 * must be bit-identical), then
 *   step 1: zero grads, forward (train) and backward on batch A;
 *   step 2: forward and backward on the larger batch B (B, T and max L grow,
 *           so the model's buffers grow), gradients accumulating onto step 1's;
 *   step 3: an all-empty batch (T = 0): nothing may change;
 *   eval:   forward without dropout (train = 0) on batch A.
 * emb and dout go to each backend with to_device; out, demb and the
 * gradients come back with to_host. Pass: norm-wise relative error
 * ||got - want|| / max(||want||, floor) <= 1e-4 per tensor, where the floor
 * is 1e-6 for out and demb and, for a parameter gradient, 1e-2 of the norm
 * of the model's whole gradient: a gradient that is zero up to rounding
 * (SASRec's key bias: the softmax ignores a shift common to all keys) is
 * held to an absolute bound rather than compared digit by digit. Each
 * mismatch prints "FAIL model [step] tensor: ...". Then the same cases with
 * device.precision = bf16 on both backends (gemm_bf16), to 3e-3. Exit 0
 * pass, 1 fail, 77 skip (the backend is not built in, or no device is
 * visible). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/precision.h"
#include "backend_test.h"
#include "base/check.h"
#include "model/model.h"
#include "base/rng.h"

#define TOL 1e-4
/* device.precision = bf16 on both backends: a last-bit difference upstream
 * can carry a GEMM operand across a bf16 rounding boundary (2^-8 of that
 * element), so the models drift apart more than in fp32 */
#define TOL_BF16 3e-3
static double tol = TOL;
#define TINY 1e-6        /* floor of the reference norm: out, demb */
#define GRAD_FLOOR 1e-2  /* of the whole gradient's norm: parameter gradients */
#define SEED 20241129u

static const struct backend_ops *cpu = &backend_cpu, *dev;
static struct rng G;
static int failures;
static double worst_seen; /* largest error of the current model */

/* ||got - want|| / max(||want||, floor, TINY); *at: index of the largest |diff| */
static double rel_err(const float *got, const float *want, int64_t n, double floor, int64_t *at)
{
    return backend_test_rel_err(got, want, n, fmax(floor, TINY), at);
}

/* n floats: g in device memory against c in host (CPU backend) memory */
static void expect(const char *model, const char *step, const char *what, const float *g,
                   const float *c, int64_t n, double floor, double tol)
{
    float *h = xmalloc((size_t)(n > 0 ? n : 0) * sizeof *h + sizeof *h);
    if (n > 0)
        dev->to_host(h, g, (size_t)n * sizeof *h);
    int64_t at;
    double e = rel_err(h, c, n, floor, &at);
    if (e > worst_seen || isnan(e))
        worst_seen = e;
    if (!(e <= tol)) {
        printf("FAIL %s [%s] %s: rel err %.3e > %.0e (at %lld: got %.9g, want %.9g)\n", model,
               step, what, e, tol, (long long)at, n ? (double)h[at] : 0.0,
               n ? (double)c[at] : 0.0);
        failures++;
    }
    free(h);
}

/* -- batches -------------------------------------------------------------- */

struct hbatch {
    int64_t B, T;
    int64_t *offsets, *ts;
    uint64_t *keys;
    float *emb, *dout; /* [T, d] */
};

/* A batch of the given lengths with random timestamps (gaps from 0 to past
 * the last time bucket), dropout keys, input rows and output gradients. */
static struct hbatch make_batch(int nseq, const int64_t *lens, int d)
{
    struct hbatch h = {.B = nseq};
    h.offsets = xmalloc((size_t)(nseq + 1) * sizeof *h.offsets);
    h.offsets[0] = 0;
    for (int b = 0; b < nseq; b++)
        h.offsets[b + 1] = h.offsets[b] + lens[b];
    h.T = h.offsets[nseq];
    size_t T1 = (size_t)h.T + 1;
    h.ts = xmalloc(T1 * sizeof *h.ts);
    h.keys = xmalloc(T1 * sizeof *h.keys);
    h.emb = xmalloc(T1 * (size_t)d * sizeof *h.emb);
    h.dout = xmalloc(T1 * (size_t)d * sizeof *h.dout);
    for (int b = 0; b < nseq; b++) {
        int64_t t = (int64_t)rng_below(&G, 1000000000ull);
        for (int64_t i = h.offsets[b]; i < h.offsets[b + 1]; i++) {
            switch (rng_below(&G, 4)) {
            case 0: t += (int64_t)rng_below(&G, 3); break;
            case 1: t += (int64_t)rng_below(&G, 100000); break;
            case 2: t += (int64_t)rng_below(&G, 10000000000ull); break;
            default: t = (int64_t)rng_below(&G, 4000000000000000000ull); break;
            }
            h.ts[i] = t;
        }
    }
    for (int64_t i = 0; i < h.T; i++)
        h.keys[i] = rng_u64(&G);
    for (int64_t i = 0; i < h.T * d; i++) {
        h.emb[i] = (float)(0.2 * rng_uniform(&G) - 0.1); /* item rows, scaled by sqrt(d) */
        h.dout[i] = (float)(2.0 * rng_uniform(&G) - 1.0);
    }
    return h;
}

static void free_batch(struct hbatch *h)
{
    free(h->offsets);
    free(h->ts);
    free(h->keys);
    free(h->emb);
    free(h->dout);
}

/* -- one model ------------------------------------------------------------ */

struct mcase {
    const char *name;
    struct model_conf conf;
};

/* forward (and backward unless eval) of batch h on both models; compares
 * out, demb and every parameter gradient. */
static void step(const char *name, const char *stepname, struct model *mc, struct model *md,
                 const struct hbatch *h, int train, int backward)
{
    const int d = mc->conf.d;
    const size_t bytes = (size_t)h->T * (size_t)d * sizeof(float);
    struct batch b = {.B = h->B, .T = h->T, .offsets = h->offsets,
                      .ts = mc->conf.time_bias ? h->ts : NULL, .row_keys = h->keys,
                      .train = train};
    /* inputs in each backend's memory; outputs start from junk */
    float *junk = xmalloc(bytes + sizeof(float));
    for (int64_t i = 0; i < h->T * d; i++)
        junk[i] = 1e3f;
    float *emb_c = cpu->alloc(bytes), *out_c = cpu->alloc(bytes), *dout_c = cpu->alloc(bytes),
          *demb_c = cpu->alloc(bytes);
    float *emb_g = dev->alloc(bytes), *out_g = dev->alloc(bytes), *dout_g = dev->alloc(bytes),
          *demb_g = dev->alloc(bytes);
    if (bytes) {
        cpu->to_device(emb_c, h->emb, bytes);
        dev->to_device(emb_g, h->emb, bytes);
        cpu->to_device(dout_c, h->dout, bytes);
        dev->to_device(dout_g, h->dout, bytes);
        cpu->to_device(out_c, junk, bytes);
        dev->to_device(out_g, junk, bytes);
        cpu->to_device(demb_c, junk, bytes);
        dev->to_device(demb_g, junk, bytes);
    }
    free(junk);

    mc->vt->forward(mc, &b, emb_c, out_c);
    md->vt->forward(md, &b, emb_g, out_g);
    expect(name, stepname, "out", out_g, out_c, h->T * d, TINY, tol);
    if (backward) {
        mc->vt->backward(mc, &b, dout_c, demb_c);
        md->vt->backward(md, &b, dout_g, demb_g);
        expect(name, stepname, "demb", demb_g, demb_c, h->T * d, TINY, tol);
        double all = 0; /* norm of the whole (CPU) gradient */
        for (int i = 0; i < mc->nparams; i++)
            for (int64_t j = 0; j < mc->params[i].n; j++)
                all += (double)mc->params[i].g[j] * mc->params[i].g[j];
        for (int i = 0; i < mc->nparams; i++) {
            char what[80];
            snprintf(what, sizeof what, "grad %s", mc->params[i].name);
            expect(name, stepname, what, md->params[i].g, mc->params[i].g, mc->params[i].n,
                   GRAD_FLOOR * sqrt(all), tol);
        }
    }
    cpu->free(emb_c);
    cpu->free(out_c);
    cpu->free(dout_c);
    cpu->free(demb_c);
    dev->free(emb_g);
    dev->free(out_g);
    dev->free(dout_g);
    dev->free(demb_g);
}

static void run_case(const struct mcase *mc)
{
    const struct model_conf *c = &mc->conf;
    const int N = c->max_len;
    char err[256];
    struct model m_c, m_g;
    if (model_init(&m_c, c, cpu, SEED, err, sizeof err) != 0) {
        printf("FAIL %s: model_init on cpu: %s\n", mc->name, err);
        failures++;
        return;
    }
    if (model_init(&m_g, c, dev, SEED, err, sizeof err) != 0) {
        printf("FAIL %s: model_init on %s: %s\n", mc->name, dev->name, err);
        failures++;
        model_free(&m_c);
        return;
    }
    if (m_c.nparams != m_g.nparams) {
        printf("FAIL %s: %d parameter tensors on cpu, %d on %s\n", mc->name, m_c.nparams,
               m_g.nparams, dev->name);
        failures++;
        goto out;
    }
    for (int i = 0; i < m_c.nparams; i++) {
        if (strcmp(m_c.params[i].name, m_g.params[i].name) || m_c.params[i].n != m_g.params[i].n) {
            printf("FAIL %s: parameter %d is %s [%lld] on cpu, %s [%lld] on %s\n", mc->name, i,
                   m_c.params[i].name, (long long)m_c.params[i].n, m_g.params[i].name,
                   (long long)m_g.params[i].n, dev->name);
            failures++;
            goto out;
        }
        char what[80];
        snprintf(what, sizeof what, "initial %s", m_c.params[i].name);
        expect(mc->name, "init", what, m_g.params[i].w, m_c.params[i].w, m_c.params[i].n, TINY,
               0.0);
    }

    /* A: empty, L = 1 and L = N sequences; B: more and longer ones */
    const int64_t lens_a[] = {7, 0, 1, N, 13 < N ? 13 : N};
    const int64_t lens_b[] = {N, N, 0, 3, 1, N - 1, N, 5, 0, N / 2 + 1};
    const int64_t lens_e[] = {0, 0};
    struct hbatch a = make_batch(5, lens_a, c->d), b = make_batch(10, lens_b, c->d),
                  e = make_batch(2, lens_e, c->d);
    model_zero_grads(&m_c);
    model_zero_grads(&m_g);
    step(mc->name, "step 1, batch A", &m_c, &m_g, &a, 1, 1);
    step(mc->name, "step 2, batch B, grads accumulate", &m_c, &m_g, &b, 1, 1);
    step(mc->name, "step 3, empty batch", &m_c, &m_g, &e, 1, 1);
    step(mc->name, "eval, batch A", &m_c, &m_g, &a, 0, 0);
    free_batch(&a);
    free_batch(&b);
    free_batch(&e);
out:
    model_free(&m_c);
    model_free(&m_g);
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "cuda";
    dev = backend_test_open(name, 0);
    rng_init(&G, rng_key(0x6d6f64656cull, 2024, 12));

    static const struct mcase cases[] = {
        {"hstu d50 h2 time", {.type = MODEL_HSTU, .d = 50, .layers = 2, .heads = 2,
                              .max_len = 20, .dropout = 0.0f, .time_bias = 1}},
        {"hstu d50 h2 time dropout 0.2", {.type = MODEL_HSTU, .d = 50, .layers = 2, .heads = 2,
                                          .max_len = 20, .dropout = 0.2f, .time_bias = 1}},
        {"hstu d64 h4 no time dropout 0.1", {.type = MODEL_HSTU, .d = 64, .layers = 1,
                                             .heads = 4, .max_len = 33, .dropout = 0.1f,
                                             .time_bias = 0}},
        {"sasrec d50 h2", {.type = MODEL_SASREC, .d = 50, .layers = 2, .heads = 2,
                           .max_len = 20, .dropout = 0.0f}},
        {"sasrec d50 h2 dropout 0.2", {.type = MODEL_SASREC, .d = 50, .layers = 2, .heads = 2,
                                       .max_len = 20, .dropout = 0.2f}},
        {"sasrec d64 h4 dropout 0.1", {.type = MODEL_SASREC, .d = 64, .layers = 3, .heads = 4,
                                       .max_len = 33, .dropout = 0.1f}},
    };
    for (int bf16 = 0; bf16 < 2; bf16++) {
        if (bf16) { /* the same cases with device.precision = bf16 (precision.h) */
            char err[256];
            cpu = backend_at_precision(cpu, PRECISION_BF16, err, sizeof err);
            dev = cpu ? backend_at_precision(dev, PRECISION_BF16, err, sizeof err) : NULL;
            if (!cpu || !dev) {
                printf("FAIL: bf16: %s\n", err);
                return 1;
            }
            tol = TOL_BF16;
        }
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            int f0 = failures;
            worst_seen = 0;
            run_case(&cases[i]);
            printf("# %s%-34s %s (worst rel err %.3e)\n", bf16 ? "bf16 " : "", cases[i].name,
                   failures == f0 ? "ok" : "FAILED", worst_seen);
        }
    }
    if (failures) {
        printf("%d check(s) failed (backend %s against cpu)\n", failures, name);
        return 1;
    }
    printf("all models agree (backend %s against cpu)\n", name);
    return 0;
}
