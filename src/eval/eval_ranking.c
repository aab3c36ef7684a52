/* eval_ranking: ranking evaluation; see eval_ranking.h. */
#include "eval/eval_ranking.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "train/step_feat.h"

void eval_ranking_names(const struct trainer *tr, const char **names, int *binary)
{
    const struct task_conf *tc = &tr->conf.task;
    for (int k = 0; k < tc->n; k++) {
        names[k] = tc->t[k].name;
        binary[k] = tc->t[k].kind == TASK_BINARY;
    }
}

void rank_predict(struct trainer *tr, const struct seq_batch *b, double *pred)
{
    const struct backend_ops *be = tr->be;
    const int d = tr->conf.d;
    float *emb = xmalloc((size_t)(b->T ? b->T : 1) * (size_t)d * sizeof *emb);
    emb_exchange_free(emb_lookup(tr->items, tr->c, b->items, b->T, emb, NULL));
    const struct batch eb = {.B = b->B, .T = b->T, .offsets = b->offsets, .ts = b->ts,
                             .row_keys = b->keys, .train = 0};
    struct batch mb;
    float *x;
    struct tokens *tk = step_feat_inputs(tr, b, emb, &eb, &mb, &x); /* collective */
    free(emb);
    const size_t xb = (size_t)(mb.T ? mb.T : 1) * (size_t)d * sizeof *x;
    void *own_x, *own_y;
    const float *dx = backend_upload(be, x, xb, &own_x);
    float *y = be->alloc(xb);
    if (mb.T > 0)
        tr->m.vt->forward(&tr->m, &mb, dx, y);
    const float *hy = backend_download(be, y, xb, &own_y);
    int64_t nc = 0;
    for (int64_t q = 0; q < b->B; q++)
        nc += b->ncand[q];
    float *xc = xmalloc((size_t)(nc ? nc : 1) * (size_t)d * sizeof *xc);
    int64_t *ci = xmalloc((size_t)(nc ? nc : 1) * 2 * sizeof *ci), *cu = ci + (nc ? nc : 1);
    for (int64_t q = 0, i = 0; q < b->B; q++)
        for (int64_t t = b->offsets[q + 1] - b->ncand[q]; t < b->offsets[q + 1]; t++, i++) {
            memcpy(xc + i * d, hy + tk->xrow[t] * d, (size_t)d * sizeof *xc);
            ci[i] = b->items[t];
            cu[i] = b->users[q];
        }
    task_ranking_predict(&tr->task, nc, xc, ci, cu, pred);
    free(ci);
    free(xc);
    free(own_y);
    be->free(y);
    be->free(own_x);
    free(x);
    tokens_free(tk);
    free(tk);
}

int64_t rank_chunks(const int64_t *ncand, const int64_t *hx, int64_t n, int64_t **start)
{
    int64_t *s = xmalloc((size_t)(n + 1) * sizeof *s), nch = 0, keys = 0, users = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t k = hx[i] + ncand[i] * (hx[i] + 1); /* tokens_target.c's key rows */
        if (users == 0 || users == RANK_CHUNK_USERS || keys + k > RANK_CHUNK_KEYS) {
            s[nch++] = i;
            keys = users = 0;
        }
        keys += k;
        users++;
    }
    s[nch] = n;
    *start = s;
    return nch;
}

/* The eval users of split test, their candidate counts (data.candidates)
 * and history tokens. */
static int64_t eval_users(struct trainer *tr, int test, int64_t **users, int64_t **ncand,
                          int64_t **hx)
{
    const struct train_conf *cf = &tr->conf;
    const int64_t n = rsplit_eval_users(&tr->rsplit, &tr->ds, test, users);
    *ncand = xmalloc((size_t)(n ? n : 1) * sizeof **ncand);
    *hx = xmalloc((size_t)(n ? n : 1) * sizeof **hx);
    const int m = cf->task.actions == ACT_INTERLEAVE ? 2 : 1, C = tr->feat->s.n_user;
    for (int64_t i = 0; i < n; i++) {
        int64_t c0, c1;
        rsplit_candidates(&tr->rsplit, &tr->ds, test, (*users)[i], &c0, &c1);
        const int64_t K = cf->task.candidates > 0 && c1 - c0 > cf->task.candidates
                              ? cf->task.candidates : c1 - c0;
        (*ncand)[i] = K;
        (*hx)[i] = C + m * (c0 < cf->N - 1 ? c0 : cf->N - 1);
    }
    return n;
}

/* Rank 0: the metrics of all, the dump (debug.rank_dump); then on every rank. */
static void finish(struct trainer *tr, const char *split, struct rank_records *all,
                   struct rank_metrics *out)
{
    const char *names[RANK_MAX_TASKS];
    int binary[RANK_MAX_TASKS];
    eval_ranking_names(tr, names, binary);
    if (tr->c->rank == 0) {
        metrics_rank_compute(all, binary, out);
        if (tr->conf.task.dump[0]) {
            char path[4200];
            snprintf(path, sizeof path, "%s-%s.csv", tr->conf.task.dump, split);
            rank_records_dump(all, names, path);
        }
    }
    comm_bcast_bytes(tr->c, out, sizeof *out, 0);
}

void eval_ranking_split(struct trainer *tr, int test, struct rank_metrics *out)
{
    const struct train_conf *cf = &tr->conf;
    const int K = cf->task.n, P = tr->c->size;
    int64_t *users, *ncand, *hx, *start;
    const int64_t n = eval_users(tr, test, &users, &ncand, &hx);
    const int64_t nch = rank_chunks(ncand, hx, n, &start), rounds = (nch + P - 1) / P;
    struct rank_records local, all;
    rank_records_init(&local, K);
    rank_records_init(&all, K);
    for (int64_t r = 0; r < rounds; r++) {
        const int64_t j = r * P + tr->c->rank;
        const int64_t a = j < nch ? start[j] : 0, z = j < nch ? start[j + 1] : 0;
        struct seq_batch sb;
        batch_rank_eval(&tr->ds, &tr->rsplit, &cf->task.labels, test, cf->N,
                        cf->task.candidates, tr->with_ts, users + a, z - a, &sb);
        int64_t nc = 0;
        for (int64_t q = 0; q < sb.B; q++)
            nc += sb.ncand[q];
        double *pred = xmalloc((size_t)(nc * K > 0 ? nc * K : 1) * sizeof *pred);
        rank_predict(tr, &sb, pred);
        for (int64_t q = 0, i = 0; q < sb.B; q++)
            for (int64_t t = sb.offsets[q + 1] - sb.ncand[q]; t < sb.offsets[q + 1]; t++, i++)
                rank_records_add(&local, sb.users[q], sb.labels + t * K, pred + i * K);
        free(pred);
        batch_free(&sb);
        rank_records_gather(tr->c, &local, &all);
    }
    finish(tr, test ? "test" : "val", &all, out);
    rank_records_free(&local);
    rank_records_free(&all);
    free(start);
    free(users);
    free(ncand);
    free(hx);
}

/* --- baselines -------------------------------------------------------------------- */

#define BASE_USERS 4096

struct base_sums {
    int K;
    double alpha;
    double n[RANK_MAX_TASKS], s[RANK_MAX_TASKS], mu[RANK_MAX_TASKS];
    double *in, *is;         /* [num_items + 1, K] count, sum of y - mu */
    double *un, *us, *ua;    /* [num_users, K] count, sum of y - mu, sum of y - mu - b_i */
};

/* Over the events before split `test` of every user, block by block:
 * pass 0 the global sums, pass 1 the items' and users' deviations, pass 2
 * the users' deviations from mu + b_i. */
static void base_pass(struct trainer *tr, int test, int pass, struct base_sums *bs)
{
    const struct dataset *ds = &tr->ds;
    const int K = bs->K;
    int64_t cap = 0, *items = NULL;
    float *lab = NULL;
    char err[1024];
    for (int64_t u0 = 0; u0 < ds->num_users; u0 += BASE_USERS) {
        const int64_t u1 = u0 + BASE_USERS < ds->num_users ? u0 + BASE_USERS : ds->num_users;
        const int64_t e0 = ds->offsets[u0], ne = ds->offsets[u1] - e0;
        if (ne > cap) {
            cap = ne;
            items = xrealloc(items, (size_t)cap * sizeof *items);
            lab = xrealloc(lab, (size_t)(cap * K) * sizeof *lab);
        }
        if (dataset_read_users(ds, u0, u1, items, NULL, NULL, err, sizeof err))
            fatal("%s", err);
        labels_read_events(ds, &tr->conf.task.labels, e0, ne, lab);
        for (int64_t u = u0; u < u1; u++) {
            int64_t a, b;
            rsplit_bounds(&tr->rsplit, ds, u, &a, &b);
            const int64_t end = test ? b : a, f = ds->offsets[u] - e0;
            for (int64_t e = f; e < f + end; e++)
                for (int k = 0; k < K; k++) {
                    const double y = lab[e * K + k];
                    const int64_t i = items[e] * K + k;
                    if (isnan(y))
                        continue;
                    if (pass == 0) {
                        bs->n[k] += 1;
                        bs->s[k] += y;
                    } else if (pass == 1) {
                        bs->in[i] += 1;
                        bs->is[i] += y - bs->mu[k];
                        bs->un[u * K + k] += 1;
                        bs->us[u * K + k] += y - bs->mu[k];
                    } else {
                        const double bi = bs->is[i] / (bs->in[i] + bs->alpha);
                        bs->ua[u * K + k] += y - bs->mu[k] - bi;
                    }
                }
        }
    }
    free(items);
    free(lab);
}

/* p -> its logit, p clamped to [1e-6, 1 - 1e-6] (binary tasks' scores). */
static double logit(double p)
{
    p = p < 1e-6 ? 1e-6 : p > 1 - 1e-6 ? 1 - 1e-6 : p;
    return log(p / (1 - p));
}

/* Rank 0: the four baselines' records of the split's candidates. */
static void base_records(struct trainer *tr, int test, const struct base_sums *bs,
                         struct rank_records *rec)
{
    const struct train_conf *cf = &tr->conf;
    const int K = bs->K;
    const double al = bs->alpha;
    int64_t *users, *ncand, *hx;
    const int64_t n = eval_users(tr, test, &users, &ncand, &hx);
    int64_t cap = 0, *items = NULL;
    float *lab = NULL;
    char err[1024];
    double score[4][RANK_MAX_TASKS];
    for (int64_t q = 0; q < n; q++) {
        const int64_t u = users[q], L = dataset_length(&tr->ds, u);
        int64_t c0, c1;
        rsplit_candidates(&tr->rsplit, &tr->ds, test, u, &c0, &c1);
        if (L > cap) {
            cap = L;
            items = xrealloc(items, (size_t)cap * sizeof *items);
            lab = xrealloc(lab, (size_t)(cap * K) * sizeof *lab);
        }
        if (dataset_read_users(&tr->ds, u, u + 1, items, NULL, NULL, err, sizeof err))
            fatal("%s", err);
        labels_read_events(&tr->ds, &cf->task.labels, tr->ds.offsets[u], L, lab);
        for (int64_t e = c0; e < c0 + ncand[q]; e++) {
            for (int k = 0; k < K; k++) {
                const int64_t i = items[e] * K + k, uk = u * K + k;
                const double mu = bs->mu[k], bi = bs->is[i] / (bs->in[i] + al);
                const double v[4] = {mu, mu + bi, mu + bs->us[uk] / (bs->un[uk] + al),
                                     mu + bi + bs->ua[uk] / (bs->un[uk] + al)};
                for (int m = 0; m < 4; m++)
                    score[m][k] = cf->task.t[k].kind == TASK_BINARY ? logit(v[m]) : v[m];
            }
            for (int m = 0; m < 4; m++)
                rank_records_add(&rec[m], u, lab + e * K, score[m]);
        }
    }
    free(items);
    free(lab);
    free(users);
    free(ncand);
    free(hx);
}

void eval_ranking_baselines(struct trainer *tr, int test, struct rank_metrics *out)
{
    const int K = tr->conf.task.n;
    if (tr->c->rank == 0) {
        const int64_t I = tr->ds.num_items + 1, U = tr->ds.num_users;
        struct base_sums bs = {.K = K, .alpha = tr->conf.task.prior};
        bs.in = xcalloc((size_t)(I * K), sizeof(double));
        bs.is = xcalloc((size_t)(I * K), sizeof(double));
        bs.un = xcalloc((size_t)(U * K > 0 ? U * K : 1), sizeof(double));
        bs.us = xcalloc((size_t)(U * K > 0 ? U * K : 1), sizeof(double));
        bs.ua = xcalloc((size_t)(U * K > 0 ? U * K : 1), sizeof(double));
        base_pass(tr, test, 0, &bs);
        for (int k = 0; k < K; k++)
            bs.mu[k] = bs.n[k] > 0 ? bs.s[k] / bs.n[k] : 0;
        base_pass(tr, test, 1, &bs);
        base_pass(tr, test, 2, &bs);
        struct rank_records rec[4];
        for (int m = 0; m < 4; m++)
            rank_records_init(&rec[m], K);
        base_records(tr, test, &bs, rec);
        const char *names[RANK_MAX_TASKS];
        int binary[RANK_MAX_TASKS];
        eval_ranking_names(tr, names, binary);
        for (int m = 0; m < 4; m++) {
            metrics_rank_compute(&rec[m], binary, &out[m]);
            rank_records_free(&rec[m]);
        }
        free(bs.in);
        free(bs.is);
        free(bs.un);
        free(bs.us);
        free(bs.ua);
    }
    comm_bcast_bytes(tr->c, out, 4 * sizeof *out, 0);
}
