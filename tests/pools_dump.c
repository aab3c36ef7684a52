/* pools_dump: the ranking batches of a dataset as the trainer builds them
 * (data/batch_ranking.c), for tests/cli_rank_pools.sh to compare with an
 * independent selection in Python (tests/pools_oracle.py).
 *
 *   tests/pools_dump FILE.h5 N SPLIT TASKS POOLS FEATURE [CROSS]
 *
 * builds, as a ranking run with data.max_seq_len = N, data.split = SPLIT,
 * train.tasks = TASKS and data.pools = POOLS (empty: off) would, the
 * training batch of every training user, then the evaluation batches of
 * the validation and test splits (every candidate; the test's users also
 * with their candidates cut in parts of 2), and prints one line a batch
 * entry:
 *
 *   train|val|test|part USER ITEM:EVENT:LABEL0:..:FEATURE[:CROSS0:..] ...
 *
 * EVENT the token's event (its index among the user's events; -1: none),
 * LABELk task k's label (nan: missing), FEATURE the value of the event
 * column FEATURE as the event features read it (feature/feat_values.c),
 * CROSSk the value of the k-th cross of features.cross = CROSS
 * (feature/feat_cross.c; the batches carry timestamps when the file has
 * them).
 * A candidate's token is prefixed with '*'. Exit 1 with the message of a
 * refused parameter or file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/params.h"
#include "data/batch_ranking.h"
#include "data/dataset.h"
#include "data/split_ranking.h"
#include "feature/feat_cross.h"
#include "feature/feat_values.h"
#include "model/task.h"

static struct feat_schema xs; /* the crosses' schema (xs.ncross = 0: none) */
static struct feat_values xv;

static void print_batch(const char *kind, const struct dataset *ds, const struct seq_batch *b,
                        int K, int df)
{
    int32_t *xo[DATASET_MAX_FEATURES] = {NULL};
    for (int i = 0; i < xs.n; i++)
        xo[i] = malloc((size_t)(b->T ? b->T : 1) * sizeof *xo[i]);
    feat_cross_values(&xs, &xv, ds, b, 0, xo);
    struct feat_schema s;
    memset(&s, 0, sizeof s);
    s.n = 1;
    s.f[0].role = FEAT_EVENT;
    s.f[0].df = df;
    int32_t *fv = malloc((size_t)(b->T ? b->T : 1) * sizeof *fv);
    int32_t *out[1] = {fv};
    feat_values_events(&s, ds, b, out);
    for (int64_t i = 0; i < b->B; i++) {
        const int64_t u = b->users[i], L = b->offsets[i + 1] - b->offsets[i];
        const int64_t nc = b->ncand ? b->ncand[i] : 0, nf = batch_file_events(b, i);
        printf("%s %lld", kind, (long long)u);
        for (int64_t j = 0; j < L; j++) {
            const int64_t t = b->offsets[i] + j;
            const int64_t e = j < nf ? batch_event(b, i, t) - ds->offsets[u] : -1;
            printf(" %s%lld:%lld", j >= L - nc ? "*" : "", (long long)b->items[t], (long long)e);
            for (int k = 0; k < K; k++)
                printf(isnan(b->labels[t * K + k]) ? ":nan" : ":%g", b->labels[t * K + k]);
            printf(":%d", (int)fv[t]);
            for (int c = 0; c < xs.n; c++)
                printf(":%d", (int)xo[c][t]);
        }
        printf("\n");
    }
    free(fv);
    for (int i = 0; i < xs.n; i++)
        free(xo[i]);
}

int main(int argc, char **argv)
{
    if (argc != 7 && argc != 8) {
        fprintf(stderr, "usage: pools_dump FILE.h5 N SPLIT TASKS POOLS FEATURE [CROSS]\n");
        return 2;
    }
    char err[1024];
    struct params *p = malloc(sizeof *p);
    struct dataset ds;
    struct task_conf tc;
    struct rsplit rs;
    params_defaults(p);
    if (params_set(p, "train", "task", "ranking", "pools_dump", err, sizeof err) ||
        params_set(p, "data", "max_seq_len", argv[2], "pools_dump", err, sizeof err) ||
        params_set(p, "data", "split", argv[3], "pools_dump", err, sizeof err) ||
        params_set(p, "train", "tasks", argv[4], "pools_dump", err, sizeof err) ||
        params_set(p, "data", "pools", argv[5], "pools_dump", err, sizeof err) ||
        dataset_open(&ds, argv[1], err, sizeof err) ||
        task_conf_from_params(p, &tc, err, sizeof err) ||
        task_conf_resolve(&tc, &ds, err, sizeof err) ||
        rsplit_init(&rs, &tc.split, &ds, err, sizeof err) ||
        params_set(p, "features", "cross", argc == 8 ? argv[7] : "", "pools_dump", err,
                   sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    struct feat_conf fc;
    struct emb_optim_conf eo;
    memset(&eo, 0, sizeof eo);
    if (feat_conf_from_params(p, &fc, err, sizeof err) ||
        feat_schema_resolve(&xs, &fc, &ds, 8, &eo, 1, 0.1f, err, sizeof err) ||
        feat_values_load(&xv, &xs, &ds, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const struct dataset_feature *f = dataset_feat_find(&ds, DS_EVENTS, argv[6]);
    if (!f || f->is_float) {
        fprintf(stderr, "%s: no categorical /events/%s\n", argv[1], argv[6]);
        return 1;
    }
    const int N = atoi(argv[2]), K = tc.n, df = (int)(f - ds.feat), ts = ds.has_timestamps;
    int64_t *users;
    int64_t n = rsplit_train_users(&rs, &ds, &users);
    struct seq_batch b;
    batch_ranking_train(&ds, &rs, &tc.labels, N, ts, 1, 0, users, NULL, n, &b);
    print_batch("train", &ds, &b, K, df);
    batch_free(&b);
    free(users);
    for (int test = 0; test < 2; test++) {
        n = rsplit_eval_users(&rs, &ds, test, &users);
        batch_ranking_eval(&ds, &rs, &tc.labels, test, N, 0, ts, users, NULL, n, &b);
        print_batch(test ? "test" : "val", &ds, &b, K, df);
        batch_free(&b);
        if (test) { /* each user's first two candidates as a part after the first */
            int64_t *part = malloc((size_t)(2 * (n ? n : 1)) * sizeof *part), m = 0;
            for (int64_t i = 0; i < n; i++) {
                int64_t c0, c1;
                rsplit_candidates(&rs, &ds, 1, users[i], &c0, &c1);
                if (c1 - c0 >= 3) {
                    users[m] = users[i];
                    part[2 * m] = 1;
                    part[2 * m++ + 1] = 2;
                }
            }
            batch_ranking_eval(&ds, &rs, &tc.labels, 1, N, 0, ts, users, part, m, &b);
            print_batch("part", &ds, &b, K, df);
            batch_free(&b);
            free(part);
        }
        free(users);
    }
    feat_values_free(&xv);
    rsplit_free(&rs);
    task_conf_free(&tc);
    dataset_close(&ds);
    free(p);
    return 0;
}
