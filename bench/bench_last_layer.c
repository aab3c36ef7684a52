/* bench_last_layer: the HSTU model's forward + backward on the CPU backend
 * with model.last_layer = full and = targets, at the shape of a ranking
 * step with interleaved actions (B sequences of 2E tokens, item, action,
 * item, action, ...: the outputs read are the E item tokens'), with the
 * time bias and dropout of training: CPU milliseconds of the process, the
 * minimum of REPS calls each, modes alternating, BLAS on one thread.
 *   layers = 1:      the last layer alone (with the input layer's sum and
 *                    the final L2 norm, a few per cent of it)
 *   layers = LAYERS: the whole model
 * Also the largest difference of the read rows' outputs between the two
 * modes (a check that both computed the same model).
 *   build: make bench/bench_last_layer
 *   run:   bench/bench_last_layer [REPS [B [E [D [HEADS [LAYERS]]]]]]
 *          (defaults 5, 16, 250, 64, 2, 3); bench/last_layer.sh runs it. */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/blas.h"
#include "base/check.h"
#include "base/rng.h"
#include "model/model.h"

static double cpu_seconds(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t))
        fatal("clock_gettime: %s", strerror(errno));
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

struct bench {
    struct batch b;
    float *emb, *dout, *out, *demb;
    int64_t T;
    int d;
};

/* One model of conf (last_targets as asked): its best forward + backward in
 * CPU ms over reps; out keeps the last forward's outputs. */
static double time_model(const struct model_conf *conf, struct bench *k, int reps)
{
    struct model m;
    char err[256];
    if (model_init(&m, conf, &backend_cpu, 7, err, sizeof err) != 0)
        fatal("bench_last_layer: %s", err);
    model_reserve(&m, k->b.B, k->T, 0);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        model_zero_grads(&m);
        const double t0 = cpu_seconds();
        m.vt->forward(&m, &k->b, k->emb, k->out);
        m.vt->backward(&m, &k->b, k->dout, k->demb);
        const double t = cpu_seconds() - t0;
        best = t < best ? t : best;
    }
    model_free(&m);
    return best * 1e3;
}

static float *randf(struct rng *g, int64_t n, float a)
{
    float *x = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *x);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(rng_uniform(g) * 2 - 1) * a;
    return x;
}

int main(int argc, char **argv)
{
    blas_select(argv);
    openblas_set_num_threads(1);
    const int reps = argc > 1 ? atoi(argv[1]) : 5;
    const int64_t B = argc > 2 ? atoll(argv[2]) : 16, E = argc > 3 ? atoll(argv[3]) : 250;
    const int d = argc > 4 ? atoi(argv[4]) : 64, H = argc > 5 ? atoi(argv[5]) : 2;
    const int layers = argc > 6 ? atoi(argv[6]) : 3;
    if (reps < 1 || B < 1 || E < 1 || d < 1 || H < 1 || d % H || layers < 1)
        fatal("usage: bench_last_layer [REPS [B [E [D [HEADS [LAYERS]]]]]] (HEADS dividing D)");
    struct rng g;
    rng_init(&g, rng_key(3, 1, 4));
    struct bench k = {.d = d, .T = B * 2 * E};
    const int64_t T = k.T, R = B * E;
    int64_t *off = xmalloc((size_t)(B + 1) * sizeof *off), *ts = xmalloc((size_t)T * sizeof *ts);
    int64_t *reads = xmalloc((size_t)R * sizeof *reads);
    uint64_t *keys = xmalloc((size_t)T * sizeof *keys);
    for (int64_t s = 0; s <= B; s++)
        off[s] = s * 2 * E;
    for (int64_t t = 0, now = 0; t < T; t++) {
        now = t % (2 * E) == 0 ? 1000000000 : now + (t % 2 ? 0 : (int64_t)rng_below(&g, 200000));
        ts[t] = now; /* an action token: its item's time */
        keys[t] = rng_u64(&g);
    }
    for (int64_t r = 0; r < R; r++)
        reads[r] = 2 * r; /* the item tokens */
    k.emb = randf(&g, T * d, 0.5f);
    k.dout = randf(&g, T * d, 1.0f);
    for (int64_t t = 1; t < T; t += 2) /* the loss reads the items alone */
        memset(k.dout + t * d, 0, (size_t)d * sizeof *k.dout);
    k.out = xmalloc((size_t)(T * d) * sizeof *k.out);
    k.demb = xmalloc((size_t)(T * d) * sizeof *k.demb);
    float *full_out = xmalloc((size_t)(T * d) * sizeof *full_out);
    k.b = (struct batch){.B = B, .T = T, .offsets = off, .ts = ts, .row_keys = keys, .train = 1,
                         .reads = reads, .nreads = R};
    printf("bench_last_layer: %lld sequences x %lld tokens (interleaved: %lld outputs read), "
           "d %d, %d heads, time bias, dropout 0.2; CPU ms of forward + backward, min of %d\n",
           (long long)B, (long long)(2 * E), (long long)R, d, H, reps);
    printf("%-26s %10s %10s %9s\n", "", "full ms", "targets ms", "speed-up");
    const int nl[2] = {1, layers};
    for (int i = 0; i < 2; i++) {
        struct model_conf c = {.type = MODEL_HSTU, .d = d, .layers = nl[i], .heads = H,
                               .max_len = (int)(2 * E), .dropout = 0.2f, .time_bias = 1};
        double full = 0, tgt = 0;
        for (int round = 0; round < 2; round++) { /* alternating: full, targets, full, ... */
            c.last_targets = 0;
            const double f = time_model(&c, &k, reps);
            memcpy(full_out, k.out, (size_t)(T * d) * sizeof *full_out);
            c.last_targets = 1;
            const double t = time_model(&c, &k, reps);
            full = round == 0 || f < full ? f : full;
            tgt = round == 0 || t < tgt ? t : tgt;
        }
        double diff = 0;
        for (int64_t r = 0; r < R; r++)
            for (int64_t j = reads[r] * d; j < (reads[r] + 1) * d; j++)
                diff = fmax(diff, fabs((double)k.out[j] - full_out[j]));
        char name[64];
        snprintf(name, sizeof name, i ? "model (layers = %d)" : "last layer (layers = %d)", nl[i]);
        printf("%-26s %10.1f %10.1f %8.2fx   (read outputs differ by %.1e at most)\n", name,
               full, tgt, full / tgt, diff);
    }
    free(off), free(ts), free(reads), free(keys), free(k.emb), free(k.dout), free(k.out);
    free(k.demb), free(full_out);
    return 0;
}
