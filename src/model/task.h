/* task: what the sequence model is trained for (train.task), behind one
 * interface (doc/ranking.md, "Tasks"):
 *
 *   retrieval  the next item, scored against the item table (sampled
 *              softmax, BCE with one negative, or the exact full softmax;
 *              task_retrieval.c, the maths in loss.h, loss_full.h);
 *   ranking    the labels of each event (train.tasks: binary or regression
 *              tasks from per-event columns), predicted at every item
 *              position by an MLP head from the model's output there: BCE
 *              for binary tasks, MSE of the standardised label for
 *              regression, weighted and normalised by the global count of
 *              labelled positions of each task (task_ranking.c).
 *
 * The training step (train/train_step.c) calls, after the model's forward,
 * ops->loss on the outputs of the event tokens, and in its backward, after
 * the dense gradients were zeroed and before the model's backward,
 * ops->backward, which completes du. Configuration: task_conf, resolved
 * once from the parameters (task_conf_from_params) and the dataset
 * (task_conf_resolve, task_conf.c). */
#ifndef FS_MODEL_TASK_H
#define FS_MODEL_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "base/params.h"
#include "comm/comm.h"
#include "data/batch.h"
#include "data/batch_ranking.h"
#include "data/dataset.h"
#include "data/split.h"
#include "data/split_ranking.h"
#include "feature/schema.h"
#include "model/model.h"

#define TASK_NAME 32
#define TASK_MAX_MLP 8

enum task_type { TASK_RETRIEVAL, TASK_RANKING };
/* Retrieval's loss (train.loss): the sampled softmax, BCE with one
 * negative, or the exact softmax over all items. */
enum retrieval_loss { LOSS_SOFTMAX, LOSS_BCE, LOSS_FULL };
enum task_kind { TASK_BINARY, TASK_REGRESSION };
/* The metrics train.select may follow: higher is better for the first
 * three, lower for the rest. */
enum task_metric { TM_AUC, TM_GAUC, TM_ACCURACY, TM_NE, TM_LOGLOSS, TM_MSE, TM_MAE, TM_COUNT };
extern const char *const task_metric_names[TM_COUNT]; /* "auc", "gauc", ... */

/* One ranking task: NAME:binary:COLUMN[OP X][:WEIGHT] or
 * NAME:regression:COLUMN[:WEIGHT]. */
struct task_spec {
    char name[TASK_NAME];
    enum task_kind kind;
    char column[DATASET_FEATURE_NAME];
    enum label_op op;        /* LOP_VALUE for regression */
    double x;
    char word[64];           /* X a word (== and != only): a categorical value's name; x 1 */
    double weight;
};

/* model.calibrate: off, a z + b, a z */
enum calib_mode { CALIB_OFF, CALIB_PLATT, CALIB_TEMPERATURE };

/* model.recency = auto's placeholder half-life until the start-up choice */
#define RECENCY_AUTO_START 16.0

struct task_conf {
    enum task_type type;
    int n;                   /* ranking tasks */
    struct task_spec t[RANK_MAX_TASKS];
    int select;              /* train.select: the task keep_best and patience follow */
    enum task_metric select_metric; /* ... and its validation metric (TASK.METRIC) */
    enum action_mode actions; /* model.actions (feature/schema.h) */
    int nmlp, mlp[TASK_MAX_MLP]; /* model.head: hidden widths */
    int bias;                /* model.bias: per-item and per-user terms of each logit */
    double recency;          /* model.recency: the history terms' half-life (0: off; auto:
                                RECENCY_AUTO_START until train/step_bias.c's choice) */
    int recency_auto;        /* model.recency = auto: chosen on the validation events */
    double bias_prior;       /* model.bias_prior: the item rows' smoothed means' pseudo-counts
                                (train.baseline_prior unless set; auto: chosen as recency) */
    double bias_prior_user;  /* ... the user rows' (model.bias_prior = I,U: U; else the same) */
    int prior_auto;
    int factors;             /* model.factors: the factor terms' width (0: off) */
    double factors_lr;       /* model.factors_lr: their rate (0: train.lr's) */
    double factor_ridge;     /* model.factor_ridge: 0 the shrunk mean, > 0 the ridge fit's lambda */
    const char *factor_feature; /* model.factor_feature: the item feature whose values have
                                   factor rows of their own ("": none; the params' string) */
    int64_t factor_values;   /* its cardinality: bias.ffeat's rows (set with ds; 0: none) */
    int terms_only;          /* debug.terms_only: the logits without the head's output */
    int calibrate;           /* model.calibrate: CALIB_OFF, CALIB_PLATT, CALIB_TEMPERATURE:
                                head.calib maps binary logits (eval/platt.h) */
    int64_t bias_items, bias_users; /* their rows (num_items + 1, num_users; set with ds) */
    int bias_rows;           /* model.bias's rows held outside the model (task_bias.h: the
                              * trainer's, task_ranking_attach_bias), not dense parameters */
    int64_t candidates;      /* data.candidates (0 = all) */
    double prior;            /* train.baseline_prior */
    const char *dump;        /* debug.rank_dump: prefix of the (user, label, score) dumps */
    struct rsplit_conf split;
    /* resolved against the dataset (task_conf_resolve): */
    struct label_conf labels;
    double *decode[RANK_MAX_TASKS]; /* categorical columns: value of each id (heap) */
    struct pool_conf *pools;  /* data.pools (data/pools.h; heap, NULL: off); labels.pools */
};

/* The ranking parameters (train.task, train.tasks, train.select,
 * model.actions, model.head, data.split, data.candidates, ...): 0, or -1 +
 * err naming the parameter. Retrieval: the ranking ones must be unset. */
int task_conf_from_params(const struct params *p, struct task_conf *tc, char *err,
                          size_t errlen);
/* The tasks' columns in ds: present, per event, numeric; regression on a
 * float column. 0, or -1 + err naming the task, the file and the column. */
int task_conf_resolve(struct task_conf *tc, const struct dataset *ds, char *err, size_t errlen);
void task_conf_free(struct task_conf *tc);
/* "like: binary, rating >= 4, weight 1" */
void task_describe(const struct task_spec *t, char *buf, size_t len);
/* The comparison COLUMN OP X (or COLUMN: != 0 for a binary t, the value for
 * a regression one) into t's column, op and x (X a word with == or !=: in
 * t->word, compared with a categorical column's value names): 0, or -1. */
int task_expr_parse(const char *expr, struct task_spec *t);
/* Categorical column f's numeric values: *out [cardinality], decode[id]
 * (id 0: missing); with a word (non-empty), 1 for the value of that name
 * and 0 for the others; `what` names the parameter and entry in an error. */
int task_column_decode(const struct dataset *ds, const struct dataset_feature *f,
                       const char *what, const char *word, double **out, char *err,
                       size_t errlen);
/* "click, rating" (the names of ds's event columns; "none"), for a message. */
void task_event_columns(const struct dataset *ds, char *buf, size_t len);
/* data.pools (task_pools.c): the text into tc->pools (empty: NULL), 0 or -1 +
 * err naming the parameter; then its columns resolved against ds (present,
 * a categorical one's values numbers), 0 or -1 + err naming the pool, the
 * file and the column; "listen_plus: played_ratio >= 50, ..." for the log. */
int task_pools_parse(const char *text, struct task_conf *tc, char *err, size_t errlen);
int task_pools_resolve(struct task_conf *tc, const struct dataset *ds, char *err, size_t errlen);
void task_pools_describe(const struct pool_conf *pc, char *buf, size_t len);

/* --- the interface of the training step ------------------------------------ */

struct loss_full_shard;
struct loss_ws;

/* A step's tensors as a task sees them (backend memory unless noted). */
struct task_step {
    const struct backend_ops *be;
    struct comm *c;          /* NULL: this process alone (tests) */
    int64_t T;               /* event tokens of this rank */
    int d;
    const float *out;        /* [T, d] the model's outputs at the event tokens */
    float *du;               /* [T, d] the loss's gradient w.r.t. out */
    double *acc;             /* [2] the loss's sum and count are added here */
    float scale;             /* retrieval: 1 / the global number of positions */
    /* retrieval: the rows looked up after the inputs (targets, negatives) */
    struct loss_ws *ws;      /* the normalisation's buffers (loss.h), kept across steps */
    int64_t nuniq;
    const float *rows;       /* [nuniq, d] */
    const int64_t *inv;      /* the exchange's inverse index */
    float *drows;            /* [nuniq, d] accumulated */
    const float *logq;       /* [nuniq] backend memory (be's), or NULL */
    const struct loss_full_shard *shard; /* train.loss = full */
    const int64_t *targets;  /* [T] host */
    const uint8_t *no_target; /* [T] host: 1 where a position has no target (the stream
                                 schedule's history; seq_batch.no_target), or NULL */
    /* train.exact_sums (loss.h: loss_exact_acc), or NULL: the rows' gradients
     * [nuniq, d][EXACT_LIMBS] instead of drows, their out of range count,
     * and the loss's sum [EXACT_LIMBS + 1] (host memory) */
    int64_t *xrows, *xbad, *xloss;
    /* ranking */
    const float *labels;     /* [T, K] host (NaN: missing) */
    const float *all_labels; /* [T, K] host: the labels of every event, the inputs' too
                                (the stream schedule's history), or NULL: labels */
    const int64_t *items;    /* [T] host: each token's item (model.bias) */
    int64_t B;               /* sequences; users [B], offsets [B + 1] host (model.bias) */
    const int64_t *users, *offsets;
    const float *rterms;     /* [T, K] host: model.recency's terms of the tokens, made
                                where the batch was read (task_ranking_recency_terms), or
                                NULL: the loss makes them */
};

/* What a task's batches and costs read: the run's data, set once at
 * start-up (train/step_task.c). */
struct task_data {
    const struct dataset *ds;
    enum split_mode split;       /* retrieval: data.split */
    const struct rsplit *rsplit; /* ranking: data.split */
    int N, with_ts;              /* data.max_seq_len; timestamps used */
    uint64_t seed;               /* train.seed: the dropout keys */
    int context;                 /* contextual tokens of a sequence (features.user) */
    int stream;                  /* retrieval in the stream schedule: the window's batches
                                    (data/batch_window.h) over rsplit */
};

struct task;
struct task_ops {
    const char *name;
    /* the loss scores each position against the rows of its target and
     * negatives, which the step's lookup requests after the inputs' (and
     * with train.loss = full this rank's shard); 0: the inputs' rows alone */
    int target_rows;
    /* the loss added to acc[0] is already normalised (see loss below); 0:
     * the step divides the sum by the global number of positions */
    int normalised;
    /* the training batch of users[n] in an epoch (data/batch.h,
     * batch_ranking.h); p0, p1: pieces of their sequences (split_long:
     * positions of train_tokens' sequence), or NULL */
    void (*batch)(const struct task *t, const struct task_data *d, uint64_t epoch,
                  const int64_t *users, const int64_t *p0, const int64_t *p1, int64_t n,
                  struct seq_batch *sb);
    /* the labels of a batch's events (any batch with ev0: recommend's
     * histories; ranking: the actions are event features); NULL: none */
    void (*labels)(const struct task *t, const struct task_data *d, struct seq_batch *sb);
    /* the model tokens of user u's training sequence (the planner's cost):
     * the contextual tokens + the events (ranking: x 2 with interleaved
     * actions) */
    int64_t (*train_tokens)(const struct task *t, const struct task_data *d, int64_t u);
    /* forward of the head and the loss: this rank's part of the loss
     * added to acc[0] (retrieval: the unscaled sum; ranking: already
     * normalised) and its supervised positions to acc[1] (ranking: every
     * position), without a host wait (no read of acc) */
    void (*loss)(struct task *t, struct task_step *st);
    /* the head's parameter gradients (accumulated) and du; retrieval: none */
    void (*backward)(struct task *t, struct task_step *st);
    /* the progress line's loss of each of conf->n tasks, over the steps
     * since the last call (collective; task_ranking_losses); NULL: one
     * loss, the step's */
    int64_t (*losses)(struct task *t, struct comm *c, double *loss);
    void (*free)(struct task *t);
    /* size the head's buffers for n rows now, every page written
     * (model_reserve's companion); NULL: nothing kept per batch */
    void (*reserve)(struct task *t, int64_t n);
};

struct task {
    const struct task_ops *ops;
    const struct task_conf *conf;
    void *priv;
};

/* Retrieval (task_retrieval.c): the loss of train.loss with its settings. */
struct retrieval_conf {
    enum retrieval_loss loss;
    int R, normalize_items;
    float temperature;
    int shared; /* train.shared_negatives > 0: the GEMM form (be->softmax_loss_shared) */
};
void task_retrieval_init(struct task *t, const struct retrieval_conf *rc);

/* Ranking (task_ranking.c). The head's tensors join the model's dense
 * parameters (model_conf.extra, before model_init): head.w0 .. head.wL,
 * head.b0 .. head.bL, head.stats [2, K] (the regression labels' mean and
 * standard deviation: constant, their gradient is 0); with model.bias,
 * bias.item [num_items + 1, K] and bias.user [num_users, K] (task_bias.c),
 * and the head's last layer starts at 0 (the logits start at the biases). */
void task_ranking_params(const struct task_conf *tc, struct model_conf *mc);
/* After model_init: the head in m. */
void task_ranking_init(struct task *t, const struct task_conf *tc, struct model *m);
/* Set head.stats from the training labels' sums s[3K] (count, sum, sum of
 * squares per task). */
void task_ranking_set_stats(struct task *t, const double *sums);
/* The head's forward without gradients: logits [n, K] from x [n, d]
 * (host) of the candidates of items [n] and users [n] (host; the biases)
 * and their history terms rterms [n, K] (host; model.recency, else NULL:
 * task_ranking_recency_terms) and factor terms fterms [n, K] (host;
 * model.factors, else NULL: task_ranking_factor_terms); predictions: binary tasks their logit,
 * regression tasks mean + std z (double). */
void task_ranking_predict(struct task *t, int64_t n, const float *x, const int64_t *items,
                          const int64_t *users, const float *rterms, const float *fterms,
                          double *pred);
/* model.calibrate: head.calib's a [K] then b [K] (a binary task's
 * calibrated logit a z + b; a regression task's 1, 0) into ab [2K] (as
 * stored: floats), 1; or 0 when off. Set stores ab (as floats; refused
 * when off): eval/platt.h fits them. */
int task_ranking_calibration(const struct task *t, double *ab);
void task_ranking_set_calibration(struct task *t, const double *ab);
/* model.recency (model/task_recency.h): 1 when on; the history terms out
 * [T, K] of B sequences (offsets [B + 1], items [T], labels [T, K]; ncand
 * [B] or NULL: each sequence's last ncand[b] tokens are candidates and
 * take the terms of the tokens before them); A [K, K] (host) into
 * bias.recency; the items' centres [nitems, K] (host, copied; NULL: none)
 * and the current ones (NULL: none). */
int task_ranking_recency_on(const struct task *t);
void task_ranking_recency_terms(const struct task *t, int64_t B, const int64_t *offsets,
                                const int64_t *ncand, const int64_t *items, const float *labels,
                                float *out);
/* model.factor_feature: item i's value (i = 1 .. nitems) is value[i - 1]
 * (0 .. tc->factor_values - 1); item 0 (padding) takes value 0. */
void task_ranking_set_factor_values(struct task *t, const int32_t *value, int64_t nitems);
void task_ranking_set_centres(struct task *t, const float *centre, int64_t nitems);
const float *task_ranking_centres(const struct task *t);
void task_ranking_set_recency(struct task *t, const float *A);
/* The history terms' half-life H > 0 in events (model.recency = auto: the
 * start-up choice, train/step_bias.c). */
void task_ranking_set_halflife(struct task *t, double H);
/* model.factors (model/task_factor.h): 1 when on; the factor terms out
 * [T, K] of B sequences, as task_ranking_recency_terms's (the items'
 * current centres). */
int task_ranking_factor_on(const struct task *t);
void task_ranking_factor_terms(const struct task *t, int64_t B, const int64_t *offsets,
                               const int64_t *ncand, const int64_t *items, const float *labels,
                               float *out);
/* model.bias: set bias.item and bias.user from their initial values
 * (host, [rows, K] each: task_bias_init in train/step_bias.c). */
void task_ranking_set_bias(struct task *t, const float *item, const float *user);
/* Their current values, into host arrays of the same shapes. */
void task_ranking_get_bias(const struct task *t, float *item, float *user);
/* With bias_rows: the rows held outside the model (kept by the caller). */
struct rank_bias_rows;
void task_ranking_attach_bias(struct task *t, const struct rank_bias_rows *ext);
/* Each task's loss (unweighted: BCE, or the squared error of the
 * standardised label) per step, over the steps since the last call (their
 * number returned), summed over the ranks of c (NULL: this process);
 * collective over COMM_DP. loss [K]. */
int64_t task_ranking_losses(struct task *t, struct comm *c, double *loss);
/* The regression label's z-score: (y - mean) / std of task k. */
float task_ranking_z(const struct task *t, int k, float y);

/* --- start-up (task_setup.c; train/step_task.c calls them in this order) --- */

/* Ranking, once the dataset is open: the retrieval parameters set in vain
 * warned of, the tasks' columns resolved in ds (task_conf_resolve), the
 * split rs (data.split), the log lines, the biases' rows. 0, or -1 with
 * the reason in err (every rank meets the same: the caller agrees on it). */
int task_setup_ranking_conf(struct task_conf *tc, const struct params *p,
                            const struct dataset *ds, struct rsplit *rs, char *err,
                            size_t errlen);
/* Ranking, after model_init: the head bound to m (task_ranking_init) and
 * head.stats from the training labels (sums [3K]: count, sum, sum of
 * squares per task, returned). 0, or -1 with err naming data_path and
 * data.split (split) when no training event is left. */
int task_setup_ranking(struct task *t, const struct task_conf *tc, struct model *m,
                       const struct task_data *d, const char *data_path, const char *split,
                       double *sums, char *err, size_t errlen);
/* Each task's training labels said; 0, or -1 with err naming data_path
 * when a task has none. */
int task_setup_ranking_labels(const struct task_conf *tc, const char *data_path,
                              const double *sums, char *err, size_t errlen);

#endif
