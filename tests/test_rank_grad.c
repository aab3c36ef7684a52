/* test_rank_grad: a ranking step through the real modules on the CPU
 * backend, for the PyTorch oracle tests/torch_rank.py: the token assembly
 * with actions (model.actions = sum | interleave: the tasks' labels and an
 * event feature), a hashed cross (features.cross: an event feature on its
 * own item token, history and candidates), a contextual token (a user
 * feature), candidates under the
 * target mask (tokens_target.c), HSTU with the time bias, the MLP head and
 * the loss (model/task_ranking.c: BCE and MSE of the standardised label,
 * weighted, normalised by the labelled counts), then the whole backward:
 * the head's and the model's parameters, the item rows and every table.
 *
 *   sequence 0: 1 history event, 2 candidates
 *   sequence 1: 5 history events, no candidate (training's causal attention)
 *   sequence 2: 6 history events, 3 candidates
 * Some labels are missing (NaN), some event feature values too (0). The
 * loss covers every item position, candidates included, so that the target
 * mask's gradient is checked. Case 0: sum, case 1: interleave, case 2: sum
 * with model.bias (per-item and per-user logit terms, set to random values,
 * as is the head's last layer, which model.bias starts at 0), case 3: case
 * 2 with model.recency (the history terms, model/task_recency.h: random
 * per-item centres and a random matrix; the prediction's terms those of
 * the loss, each token's over the tokens before it), case 4: case 3 with
 * model.factors = 3 (the factor terms, model/task_factor.h: random factors
 * and a random mix matrix), case 5: case 4 with model.factor_ridge = 0.5
 * (the user's factor a ridge fit: the backward through the solve), case 6:
 * case 4 with model.factor_feature (bias.factor's 3 rows the values',
 * value 0 among them: an item's factors its value's row). Written as oracle
 * records (tests/oracle_records.h), prefix "cK.".
 *
 *   test_rank_grad FILE    exit 0 (written), 1 on failure */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/check.h"
#include "base/rng.h"
#include "model/model.h"
#include "model/task.h"
#include "model/task_factor.h"
#include "model/task_recency.h"
#include "model/tokens.h"
#include "oracle_records.h"

#define D 8
#define B_SEQ 3
#define T_TOK 17
#define N_ITEMS 7
#define K_TASKS 2
#define NFEAT 5 /* act (event), age (user), like, rating (labels), xr (a cross) */

static const int64_t offsets[B_SEQ + 1] = {0, 3, 8, 17};
static const int64_t ncand[B_SEQ] = {2, 0, 3};
static const int64_t items[T_TOK] = {3, 1, 4, 2, 5, 5, 7, 1, 6, 2, 3, 4, 1, 7, 5, 2, 6};
static const int64_t ts[T_TOK] = {100, 200, 250, 10, 11, 50, 3000, 3001,
                                  7, 9, 100, 1000, 1001, 90000, 90500, 91000, 200000};
static const int32_t act[T_TOK] = {1, 2, 3, 3, 0, 1, 2, 3, 2, 2, 1, 0, 3, 1, 2, 3, 1};
static const int32_t age[B_SEQ] = {2, 0, 4};
/* a hashed cross's values (features.cross: on its own item token) */
static const int32_t xr[T_TOK] = {4, 1, 0, 2, 3, 3, 1, 0, 2, 4, 4, 1, 2, 0, 3, 1, 2};
static const float nan_ = NAN;

static void fill(struct rng *r, float *x, int64_t n, float scale)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)((2.0 * rng_uniform(r) - 1.0) * scale);
}

static void schema_init(struct feat_schema *s, enum action_mode mode)
{
    memset(s, 0, sizeof *s);
    s->d = D;
    s->actions = mode;
    static const char *names[NFEAT] = {"act", "age", "like", "rating", "xr"};
    static const enum feat_role roles[NFEAT] = {FEAT_EVENT, FEAT_USER, FEAT_EVENT, FEAT_EVENT,
                                                FEAT_EVENT};
    static const int64_t rows[NFEAT] = {3, 5, 2, 1, 4};
    static const int label[NFEAT] = {0, 0, 1, 2, 0};
    for (int i = 0; i < NFEAT; i++) {
        struct feat_spec *f = &s->f[i];
        snprintf(f->name, sizeof f->name, "%s", names[i]);
        f->role = roles[i];
        f->rows = rows[i];
        f->width = D;
        f->replicated = 1;
        f->table = i;
        f->proj = -1;
        f->label = label[i];
        f->cross = i == 4;
        s->n_event += roles[i] == FEAT_EVENT;
        s->n_user += roles[i] == FEAT_USER;
    }
    s->n = NFEAT;
    s->ntables = NFEAT;
}

static void task_init(struct task_conf *tc)
{
    memset(tc, 0, sizeof *tc);
    tc->type = TASK_RANKING;
    tc->n = K_TASKS;
    snprintf(tc->t[0].name, sizeof tc->t[0].name, "like");
    tc->t[0].kind = TASK_BINARY;
    tc->t[0].weight = 1.0;
    snprintf(tc->t[1].name, sizeof tc->t[1].name, "rating");
    tc->t[1].kind = TASK_REGRESSION;
    tc->t[1].weight = 0.5;
    tc->nmlp = 1;
    tc->mlp[0] = 6;
}

static int run_case(FILE *fp, int k, enum action_mode mode, int bias, double recency,
                    int factors, double ridge, int fvals)
{
    char pre[8];
    snprintf(pre, sizeof pre, "c%d", k);
    struct rng r;
    rng_init(&r, rng_key(13, (uint64_t)k, 1));
    /* labels: like (0/1, some missing), rating (values, some missing) */
    float labels[T_TOK * K_TASKS];
    for (int t = 0; t < T_TOK; t++) {
        labels[t * K_TASKS] = t % 5 == 3 ? nan_ : (float)((t * 7 + k) % 3 == 0);
        labels[t * K_TASKS + 1] = t % 6 == 4 ? nan_ : 0.5f * (float)(1 + (t * 5 + 2) % 10);
    }
    struct feat_schema s;
    schema_init(&s, mode);
    struct feat_values v;
    memset(&v, 0, sizeof v);
    v.col[1].n = B_SEQ;
    v.col[1].val = (int32_t *)age;
    struct task_conf tc;
    task_init(&tc);
    tc.bias = bias;
    tc.recency = recency;
    tc.factors = factors;
    tc.factor_ridge = ridge;
    tc.factor_feature = fvals > 0 ? "grp" : "";
    tc.factor_values = fvals;
    tc.bias_items = N_ITEMS + 1;
    tc.bias_users = B_SEQ;

    /* the model with the head's tensors, the task */
    struct model_conf mc = {.type = MODEL_HSTU, .d = D, .layers = 2, .heads = 2,
                            .max_len = 2 * 8 + 1, .dropout = 0, .time_bias = 1};
    task_ranking_params(&tc, &mc);
    struct model m;
    char err[256];
    if (model_init(&m, &mc, &backend_cpu, 11, err, sizeof err))
        fatal("%s", err);
    struct task task;
    task_ranking_init(&task, &tc, &m);
    const double sums[3 * K_TASKS] = {0, 0, 0, 40, 130, 480}; /* rating: mean 3.25 */
    task_ranking_set_stats(&task, sums);
    if (bias) { /* random biases, and the head's last layer (model.bias starts it at 0) */
        float bi[(N_ITEMS + 1) * K_TASKS], bu[B_SEQ * K_TASKS];
        fill(&r, bi, (N_ITEMS + 1) * K_TASKS, 0.8f);
        fill(&r, bu, B_SEQ * K_TASKS, 0.8f);
        task_ranking_set_bias(&task, bi, bu);
        struct dense_tensor *w1 = model_param(&m, "head.w1"), *b1 = model_param(&m, "head.b1");
        fill(&r, w1->w, w1->n, 0.4f);
        fill(&r, b1->w, b1->n, 0.4f);
    }
    float centre[(N_ITEMS + 1) * K_TASKS], A[K_TASKS * K_TASKS];
    if (recency > 0) { /* random centres and history matrix */
        fill(&r, centre, (N_ITEMS + 1) * K_TASKS, 0.5f);
        fill(&r, A, K_TASKS * K_TASKS, 1.5f);
        task_ranking_set_centres(&task, centre, N_ITEMS + 1);
        task_ranking_set_recency(&task, A);
    }
    if (factors > 0) { /* a random mix (the factors: random at model_init) */
        struct dense_tensor *mix = model_param(&m, "bias.fmix");
        fill(&r, mix->w, mix->n, 1.0f);
    }
    int64_t fvalue[N_ITEMS + 1] = {0};
    if (fvals > 0) { /* each item's value (item 2's and 5's 0, as item 0's) */
        int32_t v[N_ITEMS];
        for (int i = 0; i < N_ITEMS; i++)
            fvalue[i + 1] = v[i] = (i * 2 + 1) % fvals;
        task_ranking_set_factor_values(&task, v, N_ITEMS);
    }

    /* the tokens: event values of act and of the labels */
    int64_t users[B_SEQ] = {0, 1, 2}, nc[B_SEQ];
    memcpy(nc, ncand, sizeof nc);
    uint64_t keys[T_TOK] = {0};
    struct seq_batch b = {.B = B_SEQ, .T = T_TOK, .users = users, .offsets = (int64_t *)offsets,
                          .items = (int64_t *)items, .ts = (int64_t *)ts, .keys = keys,
                          .ncand = nc, .cand_events = 1, .nlab = K_TASKS, .labels = labels};
    int32_t ev_act[T_TOK], ev_like[T_TOK], ev_rating[T_TOK];
    float w_rating[T_TOK];
    memcpy(ev_act, act, sizeof act);
    for (int t = 0; t < T_TOK; t++) {
        const float y = labels[t * K_TASKS], z = labels[t * K_TASKS + 1];
        ev_like[t] = isnan(y) ? 0 : y != 0 ? 2 : 1;
        ev_rating[t] = isnan(z) ? 0 : 1;
        w_rating[t] = isnan(z) ? 0 : task_ranking_z(&task, 1, z);
    }
    int32_t ev_xr[T_TOK];
    memcpy(ev_xr, xr, sizeof xr);
    int32_t *evv[DATASET_MAX_FEATURES] = {ev_act, NULL, ev_like, ev_rating, ev_xr};
    float *evw[DATASET_MAX_FEATURES] = {NULL, NULL, NULL, w_rating};
    int64_t ids[N_ITEMS];
    for (int i = 0; i < N_ITEMS; i++)
        ids[i] = i + 1;
    struct tokens tk;
    tokens_plan(&tk, &s, &v, ids, N_ITEMS, &b, evv, evw);

    /* the tables (row 0 unused) and their lookups, de-duplicated locally */
    float *W[NFEAT], *G[NFEAT], *rows[NFEAT], *gu[NFEAT];
    int64_t *uniq[NFEAT], *inv[NFEAT], nuniq[NFEAT], wrows[NFEAT];
    for (int t = 0; t < NFEAT; t++) {
        const int64_t n = tk.nreq[t];
        wrows[t] = s.f[t].rows + 1;
        W[t] = xcalloc((size_t)(wrows[t] * D), sizeof(float));
        G[t] = xcalloc((size_t)(wrows[t] * D), sizeof(float));
        fill(&r, W[t] + D, (wrows[t] - 1) * D, 0.5f);
        uniq[t] = xmalloc((size_t)(n ? n : 1) * sizeof(int64_t));
        inv[t] = xmalloc((size_t)(n ? n : 1) * sizeof(int64_t));
        int64_t counts[2];
        nuniq[t] = backend_cpu.emb_dedup(n, tk.req[t], n, 1, uniq[t], inv[t], counts, 0);
        rows[t] = xmalloc((size_t)(nuniq[t] ? nuniq[t] : 1) * D * sizeof(float));
        gu[t] = xmalloc((size_t)(nuniq[t] ? nuniq[t] : 1) * D * sizeof(float));
        for (int64_t u = 0; u < nuniq[t]; u++)
            memcpy(rows[t] + u * D, W[t] + uniq[t][u] * D, D * sizeof(float));
    }
    float R[N_ITEMS * D], emb[T_TOK * D], out[T_TOK * D], du[T_TOK * D], demb[T_TOK * D];
    float gR[N_ITEMS * D] = {0};
    fill(&r, R, N_ITEMS * D, 0.5f);
    for (int t = 0; t < T_TOK; t++)
        memcpy(emb + t * D, R + (items[t] - 1) * D, sizeof(float) * D);

    /* forward: features (actions), tokens, the model with the target mask, the loss */
    tokens_features_fwd(&tk, (const float *const *)rows, (const int64_t *const *)inv);
    const int64_t Tx = tk.Tx;
    float *x = xmalloc((size_t)(Tx * D) * 4), *out_x = xmalloc((size_t)(Tx * D) * 4);
    float *du_x = xmalloc((size_t)(Tx * D) * 4), *dx = xmalloc((size_t)(Tx * D) * 4);
    tokens_inputs(&tk, emb, x);
    const struct batch eb = {.B = B_SEQ, .T = T_TOK, .offsets = offsets, .ts = ts,
                             .row_keys = keys, .train = 0};
    struct batch mb;
    tokens_batch(&tk, &eb, &mb);
    m.vt->forward(&m, &mb, x, out_x);
    tokens_outputs(&tk, out_x, out);
    double acc[2] = {0, 0};
    struct task_step st = {.be = &backend_cpu, .c = NULL, .T = T_TOK, .d = D, .out = out,
                           .du = du, .acc = acc, .labels = labels, .items = items,
                           .B = B_SEQ, .users = users, .offsets = offsets};
    task.ops->loss(&task, &st);
    const double loss = acc[0];

    /* backward */
    model_zero_grads(&m);
    task.ops->backward(&task, &st);
    tokens_dout(&tk, du, du_x);
    m.vt->backward(&m, &mb, du_x, dx);
    tokens_inputs_bwd(&tk, dx, demb);
    for (int t = 0; t < T_TOK; t++)
        for (int j = 0; j < D; j++)
            gR[(items[t] - 1) * D + j] += demb[t * D + j];
    tokens_features_bwd(&tk, (const float *const *)rows, (const int64_t *const *)inv, nuniq, gu);
    for (int t = 0; t < NFEAT; t++)
        for (int64_t u = 0; u < nuniq[t]; u++)
            for (int j = 0; j < D; j++)
                G[t][uniq[t][u] * D + j] += gu[t][u * D + j];
    double pred[T_TOK * K_TASKS];
    int64_t tok_user[T_TOK];
    for (int q = 0; q < B_SEQ; q++)
        for (int64_t t = offsets[q]; t < offsets[q + 1]; t++)
            tok_user[t] = users[q];
    float rterm[T_TOK * K_TASKS], fterm[T_TOK * K_TASKS];
    if (recency > 0)
        task_ranking_recency_terms(&task, B_SEQ, offsets, NULL, items, labels, rterm);
    if (factors > 0)
        task_ranking_factor_terms(&task, B_SEQ, offsets, NULL, items, labels, fterm);
    task_ranking_predict(&task, T_TOK, out, items, tok_user, recency > 0 ? rterm : NULL,
                         factors > 0 ? fterm : NULL, pred);

    /* the records */
    int64_t cfg[10] = {mode == ACT_INTERLEAVE, D, mc.layers, mc.heads, mc.max_len, B_SEQ, T_TOK,
                       K_TASKS, N_ITEMS, NFEAT};
    oracle_put(fp, pre, "cfg", 'q', 10, cfg);
    int64_t tmp[T_TOK];
    oracle_put(fp, pre, "offsets", 'q', B_SEQ + 1, offsets);
    oracle_put(fp, pre, "ncand", 'q', B_SEQ, ncand);
    oracle_put(fp, pre, "items", 'q', T_TOK, items);
    oracle_put(fp, pre, "ts", 'q', T_TOK, ts);
    for (int i = 0; i < T_TOK; i++)
        tmp[i] = act[i];
    oracle_put(fp, pre, "act", 'q', T_TOK, tmp);
    for (int i = 0; i < B_SEQ; i++)
        tmp[i] = age[i];
    oracle_put(fp, pre, "age", 'q', B_SEQ, tmp);
    for (int i = 0; i < T_TOK; i++)
        tmp[i] = xr[i];
    oracle_put(fp, pre, "xr", 'q', T_TOK, tmp);
    oracle_put(fp, pre, "labels", 'f', T_TOK * K_TASKS, labels);
    const double head[4] = {tc.t[0].weight, tc.t[1].weight, 3.25, sqrt(480.0 / 40 - 3.25 * 3.25)};
    oracle_put(fp, pre, "task", 'd', 4, head);
    if (recency > 0) {
        const double rc[2] = {pow(2.0, -1.0 / recency), RECENCY_PRIOR};
        oracle_put(fp, pre, "recency", 'd', 2, rc);
        oracle_put(fp, pre, "centre", 'f', (N_ITEMS + 1) * K_TASKS, centre);
    }
    if (factors > 0) {
        const double fc[3] = {FACTOR_GAIN, RECENCY_PRIOR, ridge};
        oracle_put(fp, pre, "factors", 'd', 3, fc);
        if (fvals > 0)
            oracle_put(fp, pre, "fvalue", 'q', N_ITEMS + 1, fvalue);
    }
    char name[40];
    for (int t = 0; t < NFEAT; t++) {
        snprintf(name, sizeof name, "table%d", t);
        oracle_put(fp, pre, name, 'f', wrows[t] * D, W[t]);
        snprintf(name, sizeof name, "gtable%d", t);
        oracle_put(fp, pre, name, 'f', wrows[t] * D, G[t]);
    }
    oracle_put(fp, pre, "R", 'f', N_ITEMS * D, R);
    oracle_put(fp, pre, "gR", 'f', N_ITEMS * D, gR);
    oracle_put(fp, pre, "out", 'f', T_TOK * D, out);
    oracle_put(fp, pre, "pred", 'd', T_TOK * K_TASKS, pred);
    oracle_put(fp, pre, "loss", 'd', 1, &loss);
    int64_t np = m.nparams;
    oracle_put(fp, pre, "nparams", 'q', 1, &np);
    for (int i = 0; i < m.nparams; i++) {
        struct dense_tensor *p = &m.params[i];
        int64_t shape[2] = {p->rows, p->cols}, nm[12] = {0};
        memcpy(nm, p->name, strlen(p->name) < 95 ? strlen(p->name) : 95);
        snprintf(name, sizeof name, "pname%d", i);
        oracle_put(fp, pre, name, 'q', 12, nm);
        snprintf(name, sizeof name, "pshape%d", i);
        oracle_put(fp, pre, name, 'q', 2, shape);
        snprintf(name, sizeof name, "param%d", i);
        oracle_put(fp, pre, name, 'f', p->n, p->w);
        snprintf(name, sizeof name, "pgrad%d", i);
        oracle_put(fp, pre, name, 'f', p->n, p->g);
    }
    int finite = isfinite(loss);
    for (int i = 0; i < T_TOK * D; i++)
        finite &= isfinite(out[i]) && isfinite(demb[i]);
    printf("case %d (%s%s%s%s%s): %lld model tokens (%lld contextual), %d candidates, loss %.6f\n",
           k, mode == ACT_INTERLEAVE ? "interleave" : "sum", bias ? ", model.bias" : "",
           recency > 0 ? ", model.recency" : "", factors > 0 ? ", model.factors" : "",
           fvals > 0 ? ", model.factor_feature" : "",
           (long long)Tx, (long long)B_SEQ,
           (int)(ncand[0] + ncand[1] + ncand[2]), loss);
    task.ops->free(&task);
    model_free(&m);
    tokens_free(&tk);
    for (int t = 0; t < NFEAT; t++) {
        free(W[t]);
        free(G[t]);
        free(rows[t]);
        free(gu[t]);
        free(uniq[t]);
        free(inv[t]);
    }
    free(x);
    free(out_x);
    free(du_x);
    free(dx);
    return finite ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_rank_grad FILE\n");
        return 1;
    }
    FILE *fp = fopen(argv[1], "wb");
    if (!fp)
        fatal("test_rank_grad: cannot write %s", argv[1]);
    int bad = run_case(fp, 0, ACT_SUM, 0, 0, 0, 0, 0) +
              run_case(fp, 1, ACT_INTERLEAVE, 0, 0, 0, 0, 0) + run_case(fp, 2, ACT_SUM, 1, 0, 0, 0, 0) +
              run_case(fp, 3, ACT_SUM, 1, 10, 0, 0, 0) + run_case(fp, 4, ACT_SUM, 1, 10, 3, 0, 0) +
              run_case(fp, 5, ACT_SUM, 1, 10, 3, 0.5, 0) + run_case(fp, 6, ACT_SUM, 1, 10, 3, 0, 3);
    if (fclose(fp) != 0)
        fatal("test_rank_grad: write to %s failed", argv[1]);
    return bad ? 1 : 0;
}
