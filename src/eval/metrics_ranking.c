/* metrics_ranking: exact ranking metrics; see metrics_ranking.h. */
#include "eval/metrics_ranking.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"

void rank_records_init(struct rank_records *r, int K)
{
    memset(r, 0, sizeof *r);
    r->K = K;
}

void rank_records_free(struct rank_records *r)
{
    free(r->user);
    free(r->label);
    free(r->score);
    rank_records_init(r, r->K);
}

static void reserve(struct rank_records *r, int64_t n)
{
    if (n <= r->cap)
        return;
    r->cap = n > 2 * r->cap ? n : 2 * r->cap;
    r->user = xrealloc(r->user, (size_t)r->cap * sizeof *r->user);
    r->label = xrealloc(r->label, (size_t)(r->cap * r->K) * sizeof *r->label);
    r->score = xrealloc(r->score, (size_t)(r->cap * r->K) * sizeof *r->score);
}

void rank_records_add(struct rank_records *r, int64_t user, const float *label,
                      const double *score)
{
    reserve(r, r->n + 1);
    r->user[r->n] = user;
    memcpy(r->label + r->n * r->K, label, (size_t)r->K * sizeof *label);
    memcpy(r->score + r->n * r->K, score, (size_t)r->K * sizeof *score);
    r->n++;
}

void rank_records_gather(struct comm *c, struct rank_records *local, struct rank_records *all)
{
    const int P = c->g[COMM_DP].size, root = c->g[COMM_DP].rank == 0, K = local->K;
    int64_t *cnt = xmalloc((size_t)P * sizeof *cnt), total = 0;
    comm_gather_i64(c, COMM_DP, local->n, cnt, 0);
    if (root)
        for (int p = 0; p < P; p++)
            total += cnt[p];
    if (root)
        reserve(all, all->n + total);
    comm_gatherv(c, COMM_DP, COMM_I64, local->user, local->n, root ? all->user + all->n : NULL,
                 cnt, 0);
    for (int p = 0; root && p < P; p++)
        cnt[p] *= K;
    comm_gatherv(c, COMM_DP, COMM_F64, local->score, local->n * K,
                 root ? all->score + all->n * K : NULL, cnt, 0);
    comm_gatherv(c, COMM_DP, COMM_F32, local->label, local->n * K,
                 root ? all->label + all->n * K : NULL, cnt, 0);
    if (root)
        all->n += total;
    free(cnt);
    local->n = 0;
}

/* --- AUC ------------------------------------------------------------------------ */

struct scored {
    double s;
    int y;
};

static int by_score(const void *a, const void *b)
{
    const struct scored *x = a, *y = b;
    return (x->s > y->s) - (x->s < y->s);
}

/* Twice the pairs won (a tie half) over v[n] sorted by score: in int64. */
static double auc_sorted(const struct scored *v, int64_t n)
{
    int64_t pos = 0, neg = 0, won2 = 0;
    for (int64_t i = 0; i < n;) {
        int64_t j = i, p = 0, q = 0;
        while (j < n && v[j].s == v[i].s) {
            p += v[j].y;
            q += !v[j].y;
            j++;
        }
        won2 += 2 * p * neg + p * q; /* below: neg negatives; tied: half of p q */
        pos += p;
        neg += q;
        i = j;
    }
    if (pos == 0 || neg == 0)
        return NAN;
    return (double)won2 / (2.0 * (double)pos * (double)neg);
}

double metrics_auc(int64_t n, const double *score, const float *label)
{
    struct scored *v = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = (struct scored){.s = score[i], .y = label[i] != 0};
    qsort(v, (size_t)n, sizeof *v, by_score);
    double a = auc_sorted(v, n);
    free(v);
    return a;
}

/* --- the metrics of one task --------------------------------------------------------- */

static double softplus(double z) { return (z > 0 ? z : 0) + log1p(exp(-fabs(z))); }

static void binary_task(const struct rank_records *r, int k, struct task_metrics *m,
                        struct scored *v)
{
    const int K = r->K;
    int64_t n = 0, hit = 0;
    double ll = 0, gw = 0, gsum = 0;
    for (int64_t i = 0; i < r->n;) { /* user by user: GAUC; the rest in record order */
        int64_t j = i, nu = 0;
        while (j < r->n && r->user[j] == r->user[i]) {
            const float y = r->label[j * K + k];
            const double z = r->score[j * K + k];
            if (!isnan(y)) {
                v[n + nu++] = (struct scored){.s = z, .y = y != 0};
                ll += softplus(z) - (y != 0) * z;
                hit += (z >= 0) == (y != 0);
            }
            j++;
        }
        qsort(v + n, (size_t)nu, sizeof *v, by_score);
        const double a = auc_sorted(v + n, nu);
        if (!isnan(a)) {
            gsum += (double)nu * a;
            gw += (double)nu;
            m->gauc_users++;
        }
        n += nu;
        i = j;
    }
    m->n = n;
    for (int64_t i = 0; i < n; i++)
        m->pos += v[i].y;
    qsort(v, (size_t)n, sizeof *v, by_score);
    m->auc = auc_sorted(v, n);
    m->gauc = gw > 0 ? gsum / gw : NAN;
    m->logloss = n ? ll / (double)n : NAN;
    const double p = n ? (double)m->pos / (double)n : NAN;
    const double h = -(p * log(p) + (1 - p) * log(1 - p));
    m->ne = p > 0 && p < 1 ? m->logloss / h : NAN;
    m->accuracy = n ? (double)hit / (double)n : NAN;
    m->mse = m->mae = NAN;
}

static void regression_task(const struct rank_records *r, int k, struct task_metrics *m)
{
    const int K = r->K;
    double se = 0, ae = 0;
    for (int64_t i = 0; i < r->n; i++) {
        const float y = r->label[i * K + k];
        if (isnan(y))
            continue;
        const double e = r->score[i * K + k] - (double)y;
        se += e * e;
        ae += fabs(e);
        m->n++;
    }
    m->mse = m->n ? se / (double)m->n : NAN;
    m->mae = m->n ? ae / (double)m->n : NAN;
    m->auc = m->gauc = m->logloss = m->ne = m->accuracy = NAN;
}

void metrics_ranking_compute(const struct rank_records *r, const int *binary,
                             struct rank_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->K = r->K;
    m->candidates = r->n;
    for (int64_t i = 0; i < r->n; i++)
        m->users += i == 0 || r->user[i] != r->user[i - 1];
    struct scored *v = xmalloc((size_t)(r->n > 0 ? r->n : 1) * sizeof *v);
    for (int k = 0; k < r->K; k++) {
        if (binary[k])
            binary_task(r, k, &m->t[k], v);
        else
            regression_task(r, k, &m->t[k]);
    }
    free(v);
}

/* --- output ------------------------------------------------------------------------ */

void rank_metrics_format(const struct rank_metrics *m, const char *const *names,
                         const int *binary, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int k = 0; k < m->K && at < len; k++) {
        const struct task_metrics *t = &m->t[k];
        if (binary[k])
            at += (size_t)snprintf(buf + at, len - at, "%s%s AUC %.4f GAUC %.4f NE %.4f "
                                   "logloss %.4f acc %.4f", k ? " | " : "", names[k], t->auc,
                                   t->gauc, t->ne, t->logloss, t->accuracy);
        else
            at += (size_t)snprintf(buf + at, len - at, "%s%s MSE %.4f MAE %.4f",
                                   k ? " | " : "", names[k], t->mse, t->mae);
    }
    if (at < len)
        snprintf(buf + at, len - at, " (%lld candidates, %lld users)",
                 (long long)m->candidates, (long long)m->users);
}

void rank_metrics_json(const struct rank_metrics *m, const char *const *names,
                       const int *binary, struct metrics_line *l)
{
    char key[64];
    for (int k = 0; k < m->K; k++) {
        const struct task_metrics *t = &m->t[k];
#define FIELD(f)                                                   \
    do {                                                           \
        snprintf(key, sizeof key, "%s." #f, names[k]);             \
        metrics_num_exact(l, key, t->f);                           \
    } while (0)
        if (binary[k]) {
            FIELD(auc);
            FIELD(gauc);
            FIELD(ne);
            FIELD(logloss);
            FIELD(accuracy);
        } else {
            FIELD(mse);
            FIELD(mae);
        }
#undef FIELD
    }
    metrics_int(l, "candidates", m->candidates);
    metrics_int(l, "eval_users", m->users);
}

void rank_records_dump(const struct rank_records *r, const char *const *names,
                       const char *path)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        fatal("debug.rank_dump: cannot write %s: %s", tmp, strerror(errno));
    fprintf(f, "task,user,label,score\n");
    for (int k = 0; k < r->K; k++)
        for (int64_t i = 0; i < r->n; i++) {
            const float y = r->label[i * r->K + k];
            if (!isnan(y))
                fprintf(f, "%s,%lld,%.9g,%.17g\n", names[k], (long long)r->user[i], y,
                        r->score[i * r->K + k]);
        }
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        fatal("debug.rank_dump: cannot write %s: %s", path, strerror(errno));
}
