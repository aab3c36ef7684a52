/* task_ranking: the ranking task's head and losses; see task.h.
 *
 * Head (L = model.head's widths + 1 layers), on the outputs x [T, d] of the
 * event tokens (every item position; the candidates in evaluation):
 *   h_0 = x,  h_{l+1} = ReLU(h_l W_l + b_l) (l < L - 1),  z = h_{L-1} W_{L-1} + b_{L-1}
 * z [T, K]: one logit per task. Losses per labelled position t and task k:
 *   binary      BCE with logits: softplus(z) - y z
 *   regression  (z - u)^2 with u = (y - mean_k) / std_k, the label
 *               standardised by the training labels' mean and standard
 *               deviation (head.stats); the prediction is mean_k + std_k z
 * loss = sum_k w_k (sum_t loss_tk) / N_k, N_k = the labelled positions of
 * task k over all ranks (one all-reduce), so the loss and its gradients are
 * the same on any number of ranks. The CPU backend (host memory); sums in
 * double, in token order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "model/task.h"

#define HEAD_MAX (TASK_MAX_MLP + 1)

struct rank_priv {
    struct model *m;
    int K, L;
    int width[HEAD_MAX + 1];          /* width[0] = d, width[L] = K */
    struct dense_tensor *W[HEAD_MAX], *b[HEAD_MAX], *stats;
    int64_t cap;                      /* rows the buffers hold */
    float *h[HEAD_MAX + 1];           /* h[1 .. L]: [cap, width[l]] (h[0]: the input) */
    float *dh[2];                     /* [cap, max width] work */
    float *dz;                        /* [cap, K] d loss / d z */
    int64_t T;                        /* rows of the last forward */
    float mean[RANK_MAX_TASKS], std[RANK_MAX_TASKS];
};

static void reserve(struct rank_priv *r, int64_t n)
{
    if (n <= r->cap)
        return;
    r->cap = n + n / 2;
    int wmax = 0;
    for (int l = 0; l <= r->L; l++)
        wmax = r->width[l] > wmax ? r->width[l] : wmax;
    for (int l = 1; l <= r->L; l++) {
        free(r->h[l]);
        r->h[l] = xmalloc((size_t)(r->cap * r->width[l]) * sizeof(float));
    }
    for (int k = 0; k < 2; k++) {
        free(r->dh[k]);
        r->dh[k] = xmalloc((size_t)(r->cap * wmax) * sizeof(float));
    }
    free(r->dz);
    r->dz = xmalloc((size_t)(r->cap * r->K) * sizeof(float));
}

/* z = the head on x [n, d]: r->h[L] [n, K] (activations kept). */
static void head_fwd(const struct backend_ops *be, struct rank_priv *r, int64_t n,
                     const float *x)
{
    reserve(r, n);
    r->T = n;
    const float *in = x;
    for (int l = 0; l < r->L; l++) {
        const int a = r->width[l], o = r->width[l + 1];
        float *y = r->h[l + 1];
        for (int64_t t = 0; t < n; t++)
            memcpy(y + t * o, r->b[l]->w, (size_t)o * sizeof *y);
        if (n > 0)
            be->gemm(0, 0, n, o, a, 1.0f, in, a, r->W[l]->w, o, 1.0f, y, o);
        if (l + 1 < r->L)
            for (int64_t i = 0; i < n * o; i++)
                y[i] = y[i] > 0 ? y[i] : 0.0f;
        in = y;
    }
}

static void read_stats(struct rank_priv *r, const struct backend_ops *be)
{
    float s[2 * RANK_MAX_TASKS];
    be->to_host(s, r->stats->w, (size_t)(2 * r->K) * sizeof *s);
    for (int k = 0; k < r->K; k++) {
        r->mean[k] = s[k];
        r->std[k] = s[r->K + k];
    }
}

float task_ranking_z(const struct task *t, int k, float y)
{
    const struct rank_priv *r = t->priv; /* host memory (task_ranking_init) */
    return (y - r->stats->w[k]) / r->stats->w[r->K + k];
}

/* softplus(z) - y z, stably. */
static double bce(double z, double y) { return (z > 0 ? z : 0) - y * z + log1p(exp(-fabs(z))); }

static void rank_loss(struct task *t, struct task_step *st)
{
    struct rank_priv *r = t->priv;
    const struct task_conf *tc = t->conf;
    const int K = r->K;
    read_stats(r, st->be);
    head_fwd(st->be, r, st->T, st->out);
    const float *z = r->h[r->L];
    int64_t cnt[RANK_MAX_TASKS] = {0};
    for (int64_t i = 0; i < st->T * K; i++)
        cnt[i % K] += !isnan(st->labels[i]);
    if (st->c) /* NULL: this process alone (tests) */
        comm_allreduce_sum_i64v(st->c, COMM_DP, cnt, K);
    double sum = 0;
    for (int k = 0; k < K; k++) {
        const double wn = cnt[k] > 0 ? tc->t[k].weight / (double)cnt[k] : 0;
        const int bin = tc->t[k].kind == TASK_BINARY;
        double s = 0;
        for (int64_t i = 0; i < st->T; i++) {
            const float y = st->labels[i * K + k], zi = z[i * K + k];
            float g = 0;
            if (!isnan(y) && bin) {
                s += bce(zi, y);
                g = (float)(1.0 / (1.0 + exp(-(double)zi)) - y);
            } else if (!isnan(y)) {
                const double u = (y - r->mean[k]) / r->std[k], e = zi - u;
                s += e * e;
                g = (float)(2 * e);
            }
            r->dz[i * K + k] = (float)(wn * g);
        }
        sum += wn * s;
    }
    st->acc[0] += sum; /* host memory: the head runs on the CPU backend (task_ranking_init) */
    st->acc[1] += (double)st->T;
}

static void rank_backward(struct task *t, struct task_step *st)
{
    struct rank_priv *r = t->priv;
    const struct backend_ops *be = st->be;
    const int64_t n = r->T;
    if (n != st->T)
        fatal("task_ranking: backward of %lld rows after a forward of %lld", (long long)st->T,
              (long long)n);
    const float *dy = r->dz;
    for (int l = r->L - 1; l >= 0; l--) {
        const int a = r->width[l], o = r->width[l + 1];
        const float *in = l ? r->h[l] : st->out;
        float *dx = l ? r->dh[l & 1] : st->du;
        for (int j = 0; j < o; j++) { /* db = column sums of dy, in row order */
            double s = 0;
            for (int64_t i = 0; i < n; i++)
                s += dy[i * o + j];
            r->b[l]->g[j] += (float)s;
        }
        if (n > 0) {
            be->gemm(1, 0, a, o, n, 1.0f, in, a, dy, o, 1.0f, r->W[l]->g, o);
            be->gemm(0, 1, n, a, o, 1.0f, dy, o, r->W[l]->w, o, 0.0f, dx, a);
        }
        if (l > 0) /* through the ReLU of h_l (h_l > 0 iff its input was) */
            for (int64_t i = 0; i < n * a; i++)
                dx[i] = in[i] > 0 ? dx[i] : 0.0f;
        dy = dx;
    }
}

static void rank_free(struct task *t)
{
    struct rank_priv *r = t->priv;
    if (!r)
        return;
    for (int l = 1; l <= r->L; l++)
        free(r->h[l]);
    free(r->dh[0]);
    free(r->dh[1]);
    free(r->dz);
    free(r);
    t->priv = NULL;
}

static const struct task_ops ranking_ops = {
    .name = "ranking",
    .loss = rank_loss,
    .backward = rank_backward,
    .free = rank_free,
};

static void add_extra(struct model_conf *mc, const char *name, int rows, int cols, float scale,
                      int decay)
{
    if (mc->nextra == MODEL_MAX_EXTRA)
        fatal("model.head: more than %d head tensors", MODEL_MAX_EXTRA);
    struct model_extra *x = &mc->extra[mc->nextra++];
    snprintf(x->name, sizeof x->name, "%s", name);
    x->rows = rows;
    x->cols = cols;
    x->scale = scale;
    x->decay = decay;
}

void task_ranking_params(const struct task_conf *tc, struct model_conf *mc)
{
    char name[48];
    int in = mc->d;
    for (int l = 0; l <= tc->nmlp; l++) { /* torch's Linear initialisation */
        const int out = l < tc->nmlp ? tc->mlp[l] : tc->n;
        const float s = 1.0f / sqrtf((float)in);
        snprintf(name, sizeof name, "head.w%d", l);
        add_extra(mc, name, in, out, s, 1);
        snprintf(name, sizeof name, "head.b%d", l);
        add_extra(mc, name, 1, out, s, 0);
        in = out;
    }
    add_extra(mc, "head.stats", 2, tc->n, 0.0f, 0);
}

void task_ranking_init(struct task *t, const struct task_conf *tc, struct model *m)
{
    struct rank_priv *r = xcalloc(1, sizeof *r);
    r->m = m;
    r->K = tc->n;
    r->L = tc->nmlp + 1;
    r->width[0] = m->conf.d;
    char name[48];
    for (int l = 0; l < r->L; l++) {
        r->width[l + 1] = l < tc->nmlp ? tc->mlp[l] : tc->n;
        snprintf(name, sizeof name, "head.w%d", l);
        r->W[l] = model_param(m, name);
        snprintf(name, sizeof name, "head.b%d", l);
        r->b[l] = model_param(m, name);
        if (!r->W[l] || !r->b[l])
            fatal("task_ranking: the model has no %s (task_ranking_params before model_init)",
                  name);
    }
    r->stats = model_param(m, "head.stats");
    if (!r->stats || !backend_is_host(m->be))
        fatal("task_ranking: no head.stats, or the head on a device backend (%s)", m->be->name);
    for (int k = 0; k < r->K; k++)
        r->std[k] = 1;
    t->ops = &ranking_ops;
    t->conf = tc;
    t->priv = r;
}

void task_ranking_set_stats(struct task *t, const double *sums)
{
    struct rank_priv *r = t->priv;
    const struct task_conf *tc = t->conf;
    float s[2 * RANK_MAX_TASKS];
    for (int k = 0; k < r->K; k++) {
        const double n = sums[3 * k], mean = n > 0 ? sums[3 * k + 1] / n : 0;
        const double var = n > 0 ? sums[3 * k + 2] / n - mean * mean : 1;
        const int reg = tc->t[k].kind == TASK_REGRESSION;
        s[k] = reg ? (float)mean : 0.0f;
        s[r->K + k] = reg && var > 1e-12 ? (float)sqrt(var) : 1.0f;
    }
    r->m->be->to_device(r->stats->w, s, (size_t)(2 * r->K) * sizeof *s);
    read_stats(r, r->m->be);
}

void task_ranking_predict(struct task *t, int64_t n, const float *x, double *pred)
{
    struct rank_priv *r = t->priv;
    const struct task_conf *tc = t->conf;
    read_stats(r, r->m->be);
    head_fwd(r->m->be, r, n, x);
    const float *z = r->h[r->L];
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < r->K; k++)
            pred[i * r->K + k] = tc->t[k].kind == TASK_BINARY
                                     ? (double)z[i * r->K + k]
                                     : (double)r->mean[k] + (double)r->std[k] * z[i * r->K + k];
}
