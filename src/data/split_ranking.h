/* split_ranking: which events of a user train, validate and test in ranking
 * (train.task = ranking; data.split):
 *
 *   loo        the last event tests, the second last validates, the rest
 *              trains (one candidate per user and split);
 *   last:K     the last K events test, the K before them validate, the rest
 *              trains; last:P% takes K = floor(P/100 x the user's events),
 *              at least 1;
 *   time:T     events at or after time T (seconds) test, those in the
 *              window of the same length just before T validate
 *              ([2T - t_max, T), t_max the dataset's last timestamp), the
 *              earlier ones train; time:V,T names the validation start V.
 * Validation always comes before test in time, and training before both.
 * A user's events are then [0, a) training, [a, b) validation, [b, L)
 * test (each possibly empty). Candidates of a split are its events; their
 * history is every event before the split's first one. */
#ifndef FS_DATA_SPLIT_RANKING_H
#define FS_DATA_SPLIT_RANKING_H

#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"

enum rsplit_mode { RSPLIT_LOO, RSPLIT_LAST, RSPLIT_LAST_PCT, RSPLIT_TIME };

struct rsplit_conf {
    enum rsplit_mode mode;
    int64_t k;           /* last:K */
    double pct;          /* last:P% (0 < P < 50) */
    int64_t t_val, t_test; /* time: [t_val, t_test) validates, >= t_test tests */
    int mirrored;        /* time:T: t_val from the dataset (2T - t_max) */
};

/* data.split text -> conf: loo | last:K | last:P% | time:T | time:V,T (hstu
 * is refused: it is the retrieval protocol). 0, or -1 + err naming the
 * parameter. */
int rsplit_parse(const char *text, struct rsplit_conf *c, char *err, size_t errlen);

/* A split resolved against a dataset. */
struct rsplit {
    struct rsplit_conf conf;
    int64_t *bound;      /* time: [num_users, 2] a, b of every user; else NULL */
    int64_t *from;       /* the stream schedule's training (train/stream.h): [num_users]
                            training events before from[u] are history, not targets (their
                            labels missing); else NULL */
};

/* Resolve c against ds: the time split reads every timestamp (streamed;
 * refused without /timestamps). 0, or -1 + err. */
int rsplit_init(struct rsplit *s, const struct rsplit_conf *c, const struct dataset *ds,
                char *err, size_t errlen);
void rsplit_free(struct rsplit *s);

/* User u's boundaries: training [0, *a), validation [*a, *b), test [*b, L). */
void rsplit_bounds(const struct rsplit *s, const struct dataset *ds, int64_t u, int64_t *a,
                   int64_t *b);
/* The candidates of split `test` (1 test, 0 validation) of user u: events
 * [*c0, *c1). */
void rsplit_candidates(const struct rsplit *s, const struct dataset *ds, int test, int64_t u,
                       int64_t *c0, int64_t *c1);
/* Users with at least one training event; count and list (heap). */
int64_t rsplit_train_users(const struct rsplit *s, const struct dataset *ds, int64_t **users);
/* Users with at least one candidate in split `test`; count and list (heap). */
int64_t rsplit_eval_users(const struct rsplit *s, const struct dataset *ds, int test,
                          int64_t **users);
/* "last:10% (test: the last 10% of each user's events, at least 1; validation: as many
 * before them)" for the log. */
void rsplit_describe(const struct rsplit *s, char *buf, size_t len);

#endif
