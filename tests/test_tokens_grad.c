/* test_tokens_grad: the token assembly (model/tokens.c) with every kind of
 * feature, through HSTU and SASRec on the CPU backend, for the PyTorch
 * oracle tests/torch_tokens.py:
 *
 *   items   a multi-valued feature (width 4, projected to d; a value 0
 *           among its values, an item without values) and a single-valued
 *           one (width d);
 *   events  one feature (width d; some events missing, value 0);
 *   users   two contextual tokens: a single-valued feature and a
 *           multi-valued one of width 3 (projected).
 * L = sum(out_ev * dout) + sum(rep * drep): the event tokens' outputs and
 * the item representations (what the loss scores), so every path gets a
 * gradient. Case 0: HSTU with time bias, sum pooling; case 1: SASRec, mean
 * pooling. Written as oracle records (tests/oracle_records.h), prefix
 * "cK.": the inputs, every table, the dense parameters, the outputs and
 * all gradients.
 *
 *   test_tokens_grad FILE    exit 0 (written), 1 on failure */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/check.h"
#include "base/rng.h"
#include "model/model.h"
#include "model/tokens.h"
#include "oracle_records.h"

#define D 8
#define B_SEQ 3
#define T_TOK 15
#define N_ITEMS 7
#define NFEAT 5
#define NTAB 7

static const int64_t offsets[B_SEQ + 1] = {0, 1, 6, 15};
static const int64_t ts[T_TOK] = {1000, 1000, 1003, 1043, 1743, 31743,
                                  5, 6, 13, 110, 2110, 102110, 3102110, 1003102110, 1003102999};
static const int64_t items[T_TOK] = {3, 1, 2, 2, 7, 5, 4, 6, 1, 3, 3, 7, 2, 5, 6};
static const int32_t act[T_TOK] = {1, 2, 0, 3, 3, 1, 2, 2, 0, 1, 3, 3, 2, 1, 2};
/* items 1..7: genres (multi; item 4 none, item 6 a 0 among its values), year */
static const int64_t g_off[N_ITEMS + 1] = {0, 2, 3, 6, 6, 7, 10, 11};
static const int32_t g_val[11] = {1, 3, 2, 1, 4, 6, 5, 2, 0, 6, 3};
static const int32_t year[N_ITEMS] = {1, 2, 2, 5, 0, 3, 4};
/* users 0..2: age (user 1 missing), occ (multi) */
static const int32_t age[B_SEQ] = {3, 0, 7};
static const int64_t o_off[B_SEQ + 1] = {0, 2, 3, 6};
static const int32_t o_val[6] = {2, 9, 4, 1, 1, 8};

static void fill(struct rng *r, float *x, int64_t n, float scale)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)((2.0 * rng_uniform(r) - 1.0) * scale);
}

static void schema_init(struct feat_schema *s, int mean)
{
    memset(s, 0, sizeof *s);
    s->d = D;
    s->mean = mean;
    static const char *names[NFEAT] = {"genres", "year", "act", "age", "occ"};
    static const enum feat_role roles[NFEAT] = {FEAT_ITEM, FEAT_ITEM, FEAT_EVENT, FEAT_USER,
                                                FEAT_USER};
    static const int64_t rows[NFEAT] = {6, 5, 3, 7, 9};
    static const int widths[NFEAT] = {4, D, D, D, 3}, multi[NFEAT] = {1, 0, 0, 0, 1};
    int table = 0, ctx = 0;
    for (int i = 0; i < NFEAT; i++) {
        struct feat_spec *f = &s->f[i];
        snprintf(f->name, sizeof f->name, "%s", names[i]);
        f->role = roles[i];
        f->multi = multi[i];
        f->rows = rows[i];
        f->width = widths[i];
        f->replicated = 1;
        f->table = table++;
        f->proj = widths[i] != D ? table++ : -1;
        if (roles[i] == FEAT_USER)
            f->ctx = ctx++;
        s->n_item += roles[i] == FEAT_ITEM;
        s->n_event += roles[i] == FEAT_EVENT;
        s->n_user += roles[i] == FEAT_USER;
    }
    s->n = NFEAT;
    s->ntables = table;
    if (table != NTAB)
        fatal("test_tokens_grad: %d tables", table);
}

/* The column of a feature whose values are static arrays (not freed). */
static void column(struct feat_values *v, int i, int64_t n, const int64_t *off, const int32_t *val)
{
    v->col[i].n = n;
    v->col[i].off = (int64_t *)off;
    v->col[i].val = (int32_t *)val;
}

static int run_case(FILE *fp, int k, enum model_type type, int mean, int time_bias)
{
    char pre[8];
    snprintf(pre, sizeof pre, "c%d", k);
    struct feat_schema s;
    schema_init(&s, mean);
    struct feat_values v;
    memset(&v, 0, sizeof v);
    column(&v, 0, N_ITEMS, g_off, g_val);
    column(&v, 1, N_ITEMS, NULL, year);
    column(&v, 3, B_SEQ, NULL, age);
    column(&v, 4, B_SEQ, o_off, o_val);
    int64_t users[B_SEQ] = {0, 1, 2}, ids[N_ITEMS];
    uint64_t keys[T_TOK] = {0};
    for (int i = 0; i < N_ITEMS; i++)
        ids[i] = i + 1;
    struct seq_batch b = {.B = B_SEQ, .T = T_TOK, .users = users, .offsets = (int64_t *)offsets,
                          .items = (int64_t *)items, .ts = time_bias ? (int64_t *)ts : NULL,
                          .keys = keys};
    int32_t evv_act[T_TOK];
    memcpy(evv_act, act, sizeof act);
    int32_t *evv[DATASET_MAX_FEATURES] = {NULL, NULL, evv_act};
    struct tokens tk;
    tokens_plan(&tk, &s, &v, ids, N_ITEMS, &b, evv, NULL);

    /* the tables (row 0 unused) and the lookups, de-duplicated locally */
    struct rng r;
    rng_init(&r, rng_key(7, (uint64_t)k, 1));
    float *W[NTAB], *G[NTAB], *rows[NTAB], *gu[NTAB];
    int64_t *uniq[NTAB], *inv[NTAB], nuniq[NTAB], wrows[NTAB];
    int wid[NTAB];
    for (int i = 0; i < NFEAT; i++) {
        wrows[s.f[i].table] = s.f[i].rows + 1, wid[s.f[i].table] = s.f[i].width;
        if (s.f[i].proj >= 0)
            wrows[s.f[i].proj] = s.f[i].width + 1, wid[s.f[i].proj] = D;
    }
    for (int t = 0; t < NTAB; t++) {
        const int64_t n = tk.nreq[t], w = wid[t];
        W[t] = xcalloc((size_t)(wrows[t] * w), sizeof(float));
        G[t] = xcalloc((size_t)(wrows[t] * w), sizeof(float));
        fill(&r, W[t] + w, (wrows[t] - 1) * w, 0.5f);
        uniq[t] = xmalloc((size_t)(n ? n : 1) * sizeof(int64_t));
        inv[t] = xmalloc((size_t)(n ? n : 1) * sizeof(int64_t));
        int64_t counts[2];
        nuniq[t] = backend_cpu.emb_dedup(n, tk.req[t], n, 1, uniq[t], inv[t], counts, 0);
        rows[t] = xmalloc((size_t)(nuniq[t] ? nuniq[t] : 1) * (size_t)w * sizeof(float));
        gu[t] = xmalloc((size_t)(nuniq[t] ? nuniq[t] : 1) * (size_t)w * sizeof(float));
        for (int64_t u = 0; u < nuniq[t]; u++)
            memcpy(rows[t] + u * w, W[t] + uniq[t][u] * w, (size_t)w * sizeof(float));
    }
    float R[N_ITEMS * D], rep[N_ITEMS * D], drep[N_ITEMS * D], emb[T_TOK * D], dout[T_TOK * D];
    fill(&r, R, N_ITEMS * D, 0.5f);
    fill(&r, drep, N_ITEMS * D, 1.0f);
    fill(&r, dout, T_TOK * D, 1.0f);

    /* forward: features, item representations, tokens, the model */
    tokens_features_fwd(&tk, (const float *const *)rows, (const int64_t *const *)inv);
    tokens_items_add(&tk, R, rep, 0, N_ITEMS);
    for (int t = 0; t < T_TOK; t++)
        memcpy(emb + t * D, rep + (items[t] - 1) * D, sizeof(float) * D);
    const int64_t Tx = tk.Tx;
    float *x = xmalloc((size_t)(Tx * D) * sizeof *x), *out_x = xmalloc((size_t)(Tx * D) * 4);
    float *du_x = xmalloc((size_t)(Tx * D) * 4), *dx = xmalloc((size_t)(Tx * D) * 4);
    tokens_inputs(&tk, emb, x);
    struct model m;
    const struct model_conf mc = {.type = type, .d = D, .layers = 2, .heads = 2,
                                  .max_len = 16 + s.n_user, .dropout = 0,
                                  .time_bias = time_bias};
    char err[256];
    if (model_init(&m, &mc, &backend_cpu, 11, err, sizeof err))
        fatal("%s", err);
    const struct batch eb = {.B = B_SEQ, .T = T_TOK, .offsets = offsets, .ts = b.ts,
                             .row_keys = keys, .train = 0};
    struct batch mb;
    tokens_batch(&tk, &eb, &mb);
    m.vt->forward(&m, &mb, x, out_x);
    float out[T_TOK * D], demb[T_TOK * D], gR[N_ITEMS * D];
    tokens_outputs(&tk, out_x, out);

    /* backward */
    model_zero_grads(&m);
    tokens_dout(&tk, dout, du_x);
    m.vt->backward(&m, &mb, du_x, dx);
    tokens_inputs_bwd(&tk, dx, demb);
    memcpy(gR, drep, sizeof gR);
    for (int t = 0; t < T_TOK; t++)
        for (int j = 0; j < D; j++)
            gR[(items[t] - 1) * D + j] += demb[t * D + j];
    tokens_items_bwd(&tk, gR);
    tokens_features_bwd(&tk, (const float *const *)rows, (const int64_t *const *)inv, nuniq, gu);
    for (int t = 0; t < NTAB; t++)
        for (int64_t u = 0; u < nuniq[t]; u++)
            for (int j = 0; j < wid[t]; j++)
                G[t][uniq[t][u] * wid[t] + j] += gu[t][u * wid[t] + j];

    /* the records */
    int64_t cfg[12] = {type == MODEL_HSTU ? 0 : 1, D, mc.layers, mc.heads, mc.max_len, time_bias,
                       mean, B_SEQ, T_TOK, s.n_user, N_ITEMS, NTAB};
    oracle_put(fp, pre, "cfg", 'q', 12, cfg);
    int64_t spec[NFEAT * 5];
    for (int i = 0; i < NFEAT; i++) {
        spec[i * 5] = s.f[i].role, spec[i * 5 + 1] = s.f[i].width;
        spec[i * 5 + 2] = s.f[i].table, spec[i * 5 + 3] = s.f[i].proj, spec[i * 5 + 4] = s.f[i].ctx;
    }
    oracle_put(fp, pre, "spec", 'q', NFEAT * 5, spec);
    int64_t tmp[32];
    oracle_put(fp, pre, "offsets", 'q', B_SEQ + 1, offsets);
    oracle_put(fp, pre, "ts", 'q', T_TOK, ts);
    oracle_put(fp, pre, "items", 'q', T_TOK, items);
    oracle_put(fp, pre, "g_off", 'q', N_ITEMS + 1, g_off);
    for (int i = 0; i < 11; i++) tmp[i] = g_val[i];
    oracle_put(fp, pre, "g_val", 'q', 11, tmp);
    for (int i = 0; i < N_ITEMS; i++) tmp[i] = year[i];
    oracle_put(fp, pre, "year", 'q', N_ITEMS, tmp);
    for (int i = 0; i < T_TOK; i++) tmp[i] = act[i];
    oracle_put(fp, pre, "act", 'q', T_TOK, tmp);
    for (int i = 0; i < B_SEQ; i++) tmp[i] = age[i];
    oracle_put(fp, pre, "age", 'q', B_SEQ, tmp);
    oracle_put(fp, pre, "o_off", 'q', B_SEQ + 1, o_off);
    for (int i = 0; i < 6; i++) tmp[i] = o_val[i];
    oracle_put(fp, pre, "o_val", 'q', 6, tmp);
    char name[64];
    for (int t = 0; t < NTAB; t++) {
        int64_t shape[2] = {wrows[t], wid[t]};
        snprintf(name, sizeof name, "tshape%d", t);
        oracle_put(fp, pre, name, 'q', 2, shape);
        snprintf(name, sizeof name, "table%d", t);
        oracle_put(fp, pre, name, 'f', wrows[t] * wid[t], W[t]);
        snprintf(name, sizeof name, "gtable%d", t);
        oracle_put(fp, pre, name, 'f', wrows[t] * wid[t], G[t]);
    }
    oracle_put(fp, pre, "R", 'f', N_ITEMS * D, R);
    oracle_put(fp, pre, "drep", 'f', N_ITEMS * D, drep);
    oracle_put(fp, pre, "dout", 'f', T_TOK * D, dout);
    oracle_put(fp, pre, "out", 'f', T_TOK * D, out);
    oracle_put(fp, pre, "rep", 'f', N_ITEMS * D, rep);
    oracle_put(fp, pre, "gR", 'f', N_ITEMS * D, gR);
    int64_t np = m.nparams;
    oracle_put(fp, pre, "nparams", 'q', 1, &np);
    for (int i = 0; i < m.nparams; i++) {
        struct dense_tensor *p = &m.params[i];
        int64_t shape[2] = {p->rows, p->cols};
        snprintf(name, sizeof name, "pname%d", i);
        int64_t nm[12] = {0};
        memcpy(nm, p->name, strlen(p->name) < 95 ? strlen(p->name) : 95);
        oracle_put(fp, pre, name, 'q', 12, nm);
        snprintf(name, sizeof name, "pshape%d", i);
        oracle_put(fp, pre, name, 'q', 2, shape);
        snprintf(name, sizeof name, "param%d", i);
        oracle_put(fp, pre, name, 'f', p->n, p->w);
        snprintf(name, sizeof name, "pgrad%d", i);
        oracle_put(fp, pre, name, 'f', p->n, p->g);
    }
    int finite = 1;
    for (int i = 0; i < T_TOK * D; i++)
        finite &= isfinite(out[i]) && isfinite(demb[i]);
    printf("case %d (%s, %s pooling): %lld tokens (%lld contextual), %d tables\n", k,
           type == MODEL_HSTU ? "hstu" : "sasrec", mean ? "mean" : "sum", (long long)Tx,
           (long long)(Tx - T_TOK), NTAB);
    model_free(&m);
    tokens_free(&tk);
    for (int t = 0; t < NTAB; t++) {
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
        fprintf(stderr, "usage: test_tokens_grad FILE\n");
        return 1;
    }
    FILE *fp = fopen(argv[1], "wb");
    if (!fp)
        fatal("test_tokens_grad: cannot write %s", argv[1]);
    int bad = run_case(fp, 0, MODEL_HSTU, 0, 1) + run_case(fp, 1, MODEL_SASREC, 1, 0);
    if (fclose(fp) != 0)
        fatal("test_tokens_grad: write to %s failed", argv[1]);
    return bad ? 1 : 0;
}
