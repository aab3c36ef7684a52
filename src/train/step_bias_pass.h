/* step_bias_pass: what step_bias.c (the start-up values of the ranking
 * logits' bias rows and history terms) shares with step_bias_search.c (the
 * auto settings chosen on the validation events): the pass over every
 * user's events, chunk by chunk, and the start-up fit at given settings.
 * Internal to the two files. */
#ifndef FREESCALE_TRAIN_STEP_BIAS_PASS_H
#define FREESCALE_TRAIN_STEP_BIAS_PASS_H

#include <stdint.h>

#include "train/train.h"

/* One chunk of users [u0, u1): their events' items and labels. */
struct chunk {
    int64_t *items;
    float *lab;
    int64_t cap;
};

/* What the passes accumulate (step_bias_init). */
struct bias_sums {
    const struct task *task;
    int K;
    double *ni, *si;                      /* [items, K]: counts, sums (then b_i) */
    double cnt[RANK_MAX_TASKS], sum[RANK_MAX_TASKS], mu[RANK_MAX_TASKS];
    double prior, prior_u;                /* the item rows', the user rows' prior */
    const struct rsplit *sp;              /* whose events: each user's first a (rsplit_bounds) */
    int val;                              /* 1: its first b (the validation events too) */
    struct fit_sums *fit;                 /* recency_fit's pass */
    struct val_sums *vs;                  /* val_loss's pass */
    int64_t a, b;                         /* the visited user's bounds (rsplit_bounds) */
    const struct task_conf *tc;
    float *user;                          /* [users, K] */
};

/* Every user's events, read once (bias_events_read): the passes visit them
 * there instead of reading the dataset chunk by chunk, with the same values
 * in the same order. */
struct bias_events {
    struct chunk c;  /* users 0 .. num_users */
};

/* tr->bias_events: every user's events, when they take at most max_bytes
 * (else NULL: the passes read the dataset); bias_events_free drops them.
 * The start-up fit and search (step_bias_init) and a window's choice
 * (step_bias_window) keep them at most BIAS_EVENTS_MAX bytes. */
#define BIAS_EVENTS_MAX ((int64_t)1 << 30)
void bias_events_read(struct trainer *tr, int64_t max_bytes);
void bias_events_free(struct trainer *tr);

typedef void (*bias_visit)(struct bias_sums *s, const struct chunk *c, int64_t u, int64_t o,
                           int64_t n);

/* Every user's training events (s->val: and validation events), chunk by
 * chunk: visit(s, c, u, o, n) with u the user's bias row, his first event
 * at c's index o and n of them; s->a, s->b his bounds (rsplit_bounds). */
void bias_each_user(struct trainer *tr, struct chunk *c, struct bias_sums *s, bias_visit visit);

/* 1 when the history or factor terms take their residuals against the
 * items' centres (model/task_recency.h). */
int bias_centres(const struct task_conf *tc);

/* The start-up values for the priors (the item rows', the user rows') and
 * half-life H (0: no history terms):
 * item [NI, K], user [NU, K] (scaled by uscale [K]), centre [NI, K] (or
 * NULL) and A [K, K]; sets the task's centres and half-life. It is
 * bias_fit_values then bias_fit_terms: the smoothed means at the priors
 * (the task's centres set), then with H > 0 the history terms' fit (the
 * task's half-life set, the user rows scaled; else uscale 1). */
void bias_fit(struct trainer *tr, double prior_i, double prior_u, double H, float *item,
              float *user, float *centre, float *A, float *uscale);
void bias_fit_values(struct trainer *tr, double prior_i, double prior_u, float *item,
                     float *user, float *centre);
void bias_fit_terms(struct trainer *tr, double H, const float *item, float *user, float *A,
                    float *uscale);

/* The user rows' scales (tr->bias_uscale) become uscale [K]: each trained
 * row += (uscale - its scale) x its start-up value (from, unscaled:
 * step_bias_values), as if the row had started from the new scale. */
struct bias_values;
void bias_rescale_users(struct trainer *tr, const struct bias_values *from, const float *uscale);

/* model.bias_prior = auto, model.recency = auto: each chosen on the
 * validation events (step_bias_search.c), logged; the arrays are scratch
 * for the fits (bias_fit's). Nothing when neither is auto. */
void bias_search(struct trainer *tr, float *item, float *user, float *centre, float *A,
                 float *uscale);

#endif
