/* eval_ranking: ranking evaluation; see eval_ranking.h. */
#include "eval/eval_ranking.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "eval/platt.h"
#include "eval/eval.h"

void eval_ranking_names(const struct eval_ctx *ev, const char **names, int *binary)
{
    const struct task_conf *tc = ev->task;
    for (int k = 0; k < tc->n; k++) {
        names[k] = tc->t[k].name;
        binary[k] = tc->t[k].kind == TASK_BINARY;
    }
}

int64_t rank_chunks(const int64_t *ncand, const int64_t *hx, int64_t n, int64_t **start)
{
    int64_t *s = xmalloc((size_t)(n + 1) * sizeof *s), nch = 0, keys = 0, toks = 0, users = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t k = hx[i] + ncand[i] * (hx[i] + 1); /* tokens_target.c's key rows */
        if (users == 0 || users == RANK_CHUNK_USERS || keys + k > RANK_CHUNK_KEYS ||
            toks + hx[i] + ncand[i] > RANK_CHUNK_TOKENS) {
            s[nch++] = i;
            keys = toks = users = 0;
        }
        keys += k;
        toks += hx[i] + ncand[i];
        users++;
    }
    s[nch] = n;
    *start = s;
    return nch;
}

/* The eval users of split test, their candidate counts (data.candidates)
 * and history tokens. */
static int64_t eval_users(const struct eval_ctx *ev, int test, int64_t **users, int64_t **ncand,
                          int64_t **hx)
{
    const int64_t n = rsplit_eval_users(ev->rsplit, ev->ds, test, users);
    *ncand = xmalloc((size_t)(n ? n : 1) * sizeof **ncand);
    *hx = xmalloc((size_t)(n ? n : 1) * sizeof **hx);
    for (int64_t i = 0; i < n; i++) {
        int64_t c0, c1;
        rsplit_candidates(ev->rsplit, ev->ds, test, (*users)[i], &c0, &c1);
        const int64_t K = ev->task->candidates > 0 && c1 - c0 > ev->task->candidates
                              ? ev->task->candidates : c1 - c0;
        (*ncand)[i] = K;
        (*hx)[i] = ev->history_tokens(ev->inf, c0);
    }
    return n;
}

/* The entries of the evaluation batches: users[n] with ncand[i]
 * candidates and hx[i] history tokens, a user whose target-masked
 * attention alone passes RANK_CHUNK_KEYS key rows (hx + K (hx + 1)) or
 * RANK_CHUNK_TOKENS tokens cut into parts within them (candidates see the
 * history, not each other: the same predictions, in the same order; each
 * part computes the history again). Without the cut, one
 * user's batch held them all: a stream window of a thousand events of one
 * user after a history of a thousand, 1M key rows, 1.2 GB of key buffers
 * that the model then kept. *eu [m] the entries' users, *part [m, 2] their
 * first candidate and count (batch_ranking_eval), *en, *ex [m] their
 * candidates and history tokens; returns m. */
static int64_t eval_parts(const int64_t *users, const int64_t *ncand, const int64_t *hx, int64_t n,
                          int64_t **eu, int64_t **part, int64_t **en, int64_t **ex)
{
    int64_t m = 0;
    for (int64_t pass = 0; pass < 2; pass++) {
        int64_t j = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t per = (RANK_CHUNK_KEYS - hx[i]) / (hx[i] + 1);
            per = per < RANK_CHUNK_TOKENS - hx[i] ? per : RANK_CHUNK_TOKENS - hx[i];
            per = per < 1 ? 1 : per;
            for (int64_t c = 0; c < ncand[i]; c += per, j++)
                if (pass) {
                    (*eu)[j] = users[i];
                    (*part)[2 * j] = c;
                    (*part)[2 * j + 1] = (*en)[j] = ncand[i] - c < per ? ncand[i] - c : per;
                    (*ex)[j] = hx[i];
                }
        }
        if (!pass) {
            m = j;
            *eu = xmalloc((size_t)(m ? m : 1) * sizeof **eu);
            *part = xmalloc((size_t)(m ? m : 1) * 2 * sizeof **part);
            *en = xmalloc((size_t)(m ? m : 1) * sizeof **en);
            *ex = xmalloc((size_t)(m ? m : 1) * sizeof **ex);
        }
    }
    return m;
}

void rank_chunk_bound(int64_t hmax, int64_t *T, int64_t *K)
{
    /* a chunk stays within both bounds unless its one entry alone passes
     * them: a part of one candidate after the longest history */
    *T = RANK_CHUNK_TOKENS > hmax + 1 ? RANK_CHUNK_TOKENS : hmax + 1;
    *K = RANK_CHUNK_KEYS > 2 * hmax + 1 ? RANK_CHUNK_KEYS : 2 * hmax + 1;
}

/* Rank 0: the metrics of all, the dump (debug.rank_dump); then on every
 * rank. With model.calibrate the test's logits are calibrated first, and
 * a validation's (the logits as they are) fit the calibration, which every
 * rank stores. */
static void finish(const struct eval_ctx *ev, int test, struct rank_records *all,
                   struct rank_metrics *out)
{
    const char *names[RANK_MAX_TASKS];
    int binary[RANK_MAX_TASKS];
    double ab[2 * RANK_MAX_TASKS];
    eval_ranking_names(ev, names, binary);
    const int cal = ev->calibration && ev->calibration(ev->inf, ab);
    if (ev->c->rank == 0) {
        if (cal && test)
            calib_apply(all->K, binary, ab, all->n, all->score);
        metrics_ranking_compute(all, binary, out);
        if (ev->task->dump[0]) {
            char path[4200];
            snprintf(path, sizeof path, "%s-%s.csv", ev->task->dump, test ? "test" : "val");
            rank_records_dump(all, names, path);
        }
        if (cal && !test)
            calib_fit_records(all, binary, names, ev->task->calibrate == CALIB_PLATT, ab);
    }
    comm_bcast_bytes(ev->c, out, sizeof *out, 0);
    if (cal && !test) {
        comm_bcast_bytes(ev->c, ab, sizeof ab, 0);
        ev->set_calibration(ev->inf, ab);
    }
}

void eval_ranking_split(const struct eval_ctx *ev, int test, struct rank_metrics *out)
{
    const int K = ev->task->n, P = ev->c->size;
    int64_t *users, *ncand, *hx, *start, *eu, *part, *en, *ex;
    const int64_t n = eval_users(ev, test, &users, &ncand, &hx);
    const int64_t m = eval_parts(users, ncand, hx, n, &eu, &part, &en, &ex);
    const int64_t nch = rank_chunks(en, ex, m, &start), rounds = (nch + P - 1) / P;
    struct rank_records local, all;
    rank_records_init(&local, K);
    rank_records_init(&all, K);
    for (int64_t r = 0; r < rounds; r++) {
        const int64_t j = r * P + ev->c->rank;
        const int64_t a = j < nch ? start[j] : 0, z = j < nch ? start[j + 1] : 0;
        struct seq_batch sb;
        batch_ranking_eval(ev->ds, ev->rsplit, &ev->task->labels, test, ev->N,
                           ev->task->candidates, ev->with_ts, eu + a, part + 2 * a, z - a, &sb);
        int64_t nc = 0;
        for (int64_t q = 0; q < sb.B; q++)
            nc += sb.ncand[q];
        double *pred = xmalloc((size_t)(nc * K > 0 ? nc * K : 1) * sizeof *pred);
        ev->predict(ev->inf, &sb, pred);
        for (int64_t q = 0, i = 0; q < sb.B; q++)
            for (int64_t t = sb.offsets[q + 1] - sb.ncand[q]; t < sb.offsets[q + 1]; t++, i++)
                rank_records_add(&local, sb.users[q], sb.labels + t * K, pred + i * K);
        free(pred);
        batch_free(&sb);
        rank_records_gather(ev->c, &local, &all);
    }
    finish(ev, test, &all, out);
    rank_records_free(&local);
    rank_records_free(&all);
    free(start);
    free(users);
    free(ncand);
    free(hx);
    free(eu);
    free(part);
    free(en);
    free(ex);
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
static void base_pass(const struct eval_ctx *ev, int test, int pass, struct base_sums *bs)
{
    const struct dataset *ds = ev->ds;
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
        dataset_raw_numbers(ds, items, ne); /* a raw dataset: item numbers */
        labels_read_events(ds, &ev->task->labels, e0, ne, lab);
        for (int64_t u = u0; u < u1; u++) {
            int64_t a, b;
            rsplit_bounds(ev->rsplit, ds, u, &a, &b);
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
static void base_records(const struct eval_ctx *ev, int test, const struct base_sums *bs,
                         struct rank_records *rec)
{
    const int K = bs->K;
    const double al = bs->alpha;
    int64_t *users, *ncand, *hx;
    const int64_t n = eval_users(ev, test, &users, &ncand, &hx);
    int64_t cap = 0, *items = NULL;
    float *lab = NULL;
    char err[1024];
    double score[4][RANK_MAX_TASKS];
    for (int64_t q = 0; q < n; q++) {
        const int64_t u = users[q], L = dataset_length(ev->ds, u);
        int64_t c0, c1;
        rsplit_candidates(ev->rsplit, ev->ds, test, u, &c0, &c1);
        if (L > cap) {
            cap = L;
            items = xrealloc(items, (size_t)cap * sizeof *items);
            lab = xrealloc(lab, (size_t)(cap * K) * sizeof *lab);
        }
        if (dataset_read_users(ev->ds, u, u + 1, items, NULL, NULL, err, sizeof err))
            fatal("%s", err);
        dataset_raw_numbers(ev->ds, items, L); /* a raw dataset: item numbers */
        labels_read_events(ev->ds, &ev->task->labels, ev->ds->offsets[u], L, lab);
        for (int64_t e = c0; e < c0 + ncand[q]; e++) {
            for (int k = 0; k < K; k++) {
                const int64_t i = items[e] * K + k, uk = u * K + k;
                const double mu = bs->mu[k], bi = bs->is[i] / (bs->in[i] + al);
                const double v[4] = {mu, mu + bi, mu + bs->us[uk] / (bs->un[uk] + al),
                                     mu + bi + bs->ua[uk] / (bs->un[uk] + al)};
                for (int m = 0; m < 4; m++)
                    score[m][k] = ev->task->t[k].kind == TASK_BINARY ? logit(v[m]) : v[m];
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

void eval_ranking_baselines(const struct eval_ctx *ev, int test, struct rank_metrics *out)
{
    const int K = ev->task->n;
    if (ev->c->rank == 0) {
        const int64_t I = ev->ds->num_items + 1, U = ev->ds->num_users;
        struct base_sums bs = {.K = K, .alpha = ev->task->prior};
        bs.in = xcalloc((size_t)(I * K), sizeof(double));
        bs.is = xcalloc((size_t)(I * K), sizeof(double));
        bs.un = xcalloc((size_t)(U * K > 0 ? U * K : 1), sizeof(double));
        bs.us = xcalloc((size_t)(U * K > 0 ? U * K : 1), sizeof(double));
        bs.ua = xcalloc((size_t)(U * K > 0 ? U * K : 1), sizeof(double));
        base_pass(ev, test, 0, &bs);
        for (int k = 0; k < K; k++)
            bs.mu[k] = bs.n[k] > 0 ? bs.s[k] / bs.n[k] : 0;
        base_pass(ev, test, 1, &bs);
        base_pass(ev, test, 2, &bs);
        struct rank_records rec[4];
        for (int m = 0; m < 4; m++)
            rank_records_init(&rec[m], K);
        base_records(ev, test, &bs, rec);
        const char *names[RANK_MAX_TASKS];
        int binary[RANK_MAX_TASKS];
        eval_ranking_names(ev, names, binary);
        for (int m = 0; m < 4; m++) {
            metrics_ranking_compute(&rec[m], binary, &out[m]);
            rank_records_free(&rec[m]);
        }
        free(bs.in);
        free(bs.is);
        free(bs.un);
        free(bs.us);
        free(bs.ua);
    }
    comm_bcast_bytes(ev->c, out, 4 * sizeof *out, 0);
}

/* --- ranking's evaluation ops ------------------------------------------------------ */

static void ranking_run(const struct eval_ctx *ev, int test, struct eval_result *out)
{
    eval_ranking_split(ev, test, &out->k);
}

/* A metric where lower is better maps to 1 / (1 + value): higher is better
 * and the score stays in [0, 1] (checkpoints' best_val). */
static double ranking_select(const struct eval_ctx *ev, const struct eval_result *e)
{
    const struct task_metrics *m = &e->k.t[ev->task->select];
    const enum task_metric w = ev->task->select_metric;
    const double v = w == TM_AUC ? m->auc : w == TM_GAUC ? m->gauc : w == TM_ACCURACY
                     ? m->accuracy : w == TM_NE ? m->ne : w == TM_LOGLOSS ? m->logloss
                     : w == TM_MSE ? m->mse : m->mae;
    if (isnan(v) || v < 0)
        return -1;
    return w < TM_NE ? v : 1.0 / (1.0 + v);
}

static double ranking_select_value(const struct eval_ctx *ev, double score)
{
    if (ev->task->select_metric < TM_NE || score <= 0)
        return score;
    return 1.0 / score - 1.0;
}

static const char *ranking_select_name(const struct eval_ctx *ev)
{
    static char name[64];
    static const char *const shown[TM_COUNT] = {"AUC", "GAUC", "accuracy", "NE", "logloss",
                                                "MSE", "MAE"};
    snprintf(name, sizeof name, "%s %s", ev->task->t[ev->task->select].name,
             shown[ev->task->select_metric]);
    return name;
}

static void ranking_format(const struct eval_ctx *ev, const struct eval_result *e, char *buf,
                           size_t len)
{
    const char *names[RANK_MAX_TASKS];
    int binary[RANK_MAX_TASKS];
    eval_ranking_names(ev, names, binary);
    rank_metrics_format(&e->k, names, binary, buf, len);
}

static void ranking_json(const struct eval_ctx *ev, const struct eval_result *e,
                         struct metrics_line *l)
{
    const char *names[RANK_MAX_TASKS];
    int binary[RANK_MAX_TASKS];
    eval_ranking_names(ev, names, binary);
    rank_metrics_json(&e->k, names, binary, l);
}

/* global, item, user and user+item means (eval_ranking_baselines) */
static int ranking_baselines(const struct eval_ctx *ev, int test, struct eval_result *out,
                             const char **names)
{
    static const char *const split[2][4] = {
        {"val-baseline-global", "val-baseline-item", "val-baseline-user",
         "val-baseline-user+item"},
        {"test-baseline-global", "test-baseline-item", "test-baseline-user",
         "test-baseline-user+item"}};
    struct rank_metrics base[4];
    eval_ranking_baselines(ev, test, base);
    for (int m = 0; m < 4; m++) {
        memset(&out[m], 0, sizeof out[m]);
        out[m].k = base[m];
        names[m] = split[test != 0][m];
    }
    return 4;
}

const struct eval_ops eval_ranking_ops = {
    .run = ranking_run,
    .select = ranking_select,
    .select_value = ranking_select_value,
    .select_name = ranking_select_name,
    .format = ranking_format,
    .json = ranking_json,
    .baselines = ranking_baselines,
};
