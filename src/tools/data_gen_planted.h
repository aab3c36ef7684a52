/* data_gen_planted: 'data gen --labels planted[:K]': event labels drawn
 * from a known model, for a ranking test that fails if the trainer cannot
 * learn what is there (doc/ranking.md). Per user u and item i (factors of
 * PLANTED_F values, all keyed by the seed):
 *   p_u ~ N(0, 1), a_u ~ N(0, 0.5^2)      q_i ~ N(0, 1), c_i ~ N(0, 0.7^2)
 *   s_t = -0.2 + a_u + c_i + 0.6 p_u.q_i / sqrt(F) + 0.6 q_prev.q_i / F
 * (q_prev: the item of the user's previous event; none for the first),
 *   /events/click   Bernoulli(sigmoid(s_t)), stored as 0 or 1 (float)
 *   /events/rating  3 + 0.8 s_t + N(0, 0.5^2) (float)
 * On every user's last K events (the test split of data.split = last:K)
 * the true probabilities' AUC (ties half), logloss, NE (logloss over the
 * entropy of those events' positive rate) and the true means' MSE are
 * recorded as attributes of / : planted_auc, planted_ne, planted_logloss,
 * planted_mse, planted_test_events (K), planted_tasks (the train.tasks
 * that learn them). An evaluation scores the K test events after the
 * history without their predecessors among them, so test events 2..K
 * cannot show their previous item: the optimum of what it shows takes
 * for them the probability averaged over that item (drawn by popularity:
 * sum_i pop_i sigmoid(s_t with q_prev = q_i)) and the mean 3 + 0.8 E s_t,
 * recorded as planted_visible_auc, _ne, _logloss, _mse; their cost is
 * O(items F) per such event. Both know the user's p_u, a_u, which no
 * predictor can: the optimum of what the history shows, planted_posterior_
 * auc, _ne, _logloss, _mse, knows the model, the priors and the item
 * factors but takes the user's (p_u, a_u) from their posterior given the
 * clicks and ratings of the events before the K test events (a rating is
 * a Gaussian observation of s_t): its Laplace approximation (the mode by
 * Newton's method, tools/gen_posterior.h) and a test event's probability
 * E[sigmoid(s_t)] under it by the probit approximation, averaged over the
 * unseen previous item as above; the rating's mean 3 + 0.8 E s_t.
 * With --planted-scores, for an oracle: /planted_items [items + 1, 5]
 * (q_i, c_i; row 0 unused) and /planted_pop [items + 1, 1] (pop_i). */
#ifndef FS_DATA_GEN_PLANTED_H
#define FS_DATA_GEN_PLANTED_H

#include <stdint.h>

#include "data/dataset.h"

#define PLANTED_F 4

/* A test event: its label and rating; the true probability and mean, those
 * of what the evaluation shows and those of the posterior optimum. */
struct planted_row {
    double p, pv, pp, mean, meanv, meanp;
    float y, r;
};

struct planted {
    int64_t k;                 /* test events per user */
    uint64_t seed;
    int64_t items, users;
    float *q, *c;              /* [items + 1, F], [items + 1] */
    double *pop;               /* [items + 1] each item's probability */
    double qbar[PLANTED_F];    /* sum_i pop_i q_i */
    int slot_click, slot_rating;
    int scores;                /* --planted-scores: /planted_items, /planted_pop */
    /* the test events */
    int64_t n, cap;
    struct planted_row *rows;
};

/* "planted" or "planted:K" -> K (fatal otherwise). */
int64_t planted_parse(const char *text);
/* Draw the item factors; declare the event columns on w. pop [items + 1]:
 * each item's probability (taken, freed by planted_finish). */
void planted_init(struct planted *pl, struct dataset_writer *w, int64_t k, uint64_t seed,
                  int64_t users, int64_t items, double *pop);
/* The labels of users [u0, u0 + nu) with lengths [nu] and their events'
 * items (in user order), appended to w. */
void planted_events(struct planted *pl, struct dataset_writer *w, int64_t u0, int64_t nu,
                    const int64_t *lengths, const int64_t *items);
/* After the writer closed path: the optimum's attributes (fatal, removing
 * path, on a failure). Frees pl. */
void planted_finish(struct planted *pl, const char *path);

#endif
