/* batch_ranking: the batches of ranking (train.task = ranking; split_ranking.h)
 * and their labels.
 *
 *   training    a user's most recent N = data.max_seq_len training events;
 *               every one is a target (its labels known), predicted from
 *               the causal prefix;
 *   evaluation  the most recent N - 1 events before the split's first one
 *               (the history), then the split's events as candidates (at
 *               most data.candidates, the earliest; 0 = all), which see the
 *               history but not each other (the target mask, model/tokens.h);
 *   pairs       (score) the most recent N - 1 events of the whole history,
 *               then the given items as candidates (not events of the file).
 * seq_batch.ncand[i] counts entry i's candidates (its last tokens);
 * seq_batch.labels [T, K] holds the labels of the tokens that are events of
 * the file (NaN: missing, and at candidates that are not events).
 *
 * A label comes from a per-event column /events/NAME: a float column's
 * value, or a categorical column's original value (its /feature_maps
 * entry read as a number: decode[id]; id 0 is missing). A binary label is
 * the comparison of that value with x (or value != 0), a regression label
 * the value itself.
 *
 * With data.pools (lc->pools, data/pools.h) a training sequence is the
 * pooled selection of the training events (room N), an evaluation's or
 * score's history that of the events before the first candidate (room
 * N - 1); seq_batch.ev then holds each token's event. */
#ifndef FS_DATA_BATCH_RANKING_H
#define FS_DATA_BATCH_RANKING_H

#include <stdint.h>

#include "data/batch.h"
#include "data/dataset.h"
#include "data/split_ranking.h"

#define RANK_MAX_TASKS 16

enum label_op { LOP_VALUE, LOP_NONZERO, LOP_GE, LOP_GT, LOP_LE, LOP_LT, LOP_EQ, LOP_NE };

struct label_col {
    const struct dataset_feature *f; /* /events/NAME */
    enum label_op op;                /* LOP_VALUE: regression (the value) */
    double x;                        /* the comparison's operand */
    const double *decode;            /* categorical: [cardinality] value of id k (NaN: none) */
};

struct pool_conf;

struct label_conf {
    int n;
    struct label_col c[RANK_MAX_TASKS];
    struct pool_conf *pools; /* data.pools (data/pools.h): the histories' events; NULL: the
                                most recent ones */
};

/* The label of value v (NaN: missing). */
double label_of(const struct label_col *c, double v);

/* Labels of the file's events [e0, e0 + n): out [n, lc->n] (NaN: missing). */
void labels_read_events(const struct dataset *ds, const struct label_conf *lc, int64_t e0,
                        int64_t n, float *out);
/* b->labels [T, lc->n] of b's file events (any batch with ev0). */
void batch_ranking_read_labels(const struct dataset *ds, const struct label_conf *lc,
                               struct seq_batch *b);
/* Pieces of training sequences (parallel.split_long): entry i is the
 * model positions [p0[i], p1[i]) of its user's sequence, whose model
 * tokens are head contextual tokens, then step tokens per event (the item,
 * and its action token when interleaved); a boundary lies at 0, at the
 * end or on an event's first token after the contextual ones. */
struct rank_pieces {
    const int64_t *p0, *p1;
    int64_t head;
    int step;
};
/* users[B]: the training batch (keys from seed, epoch, user, position).
 * With pc (else NULL): entry i holds the events of its piece (keys,
 * labels and event indexes as in the whole sequence), and pos0, key_off,
 * key_ts are filled in model positions (key_ts: a contextual token at its
 * sequence's first event's time, an event's tokens at its time), and the
 * leads (seq_batch.lead: the event before a piece that starts after its
 * sequence's first, with its labels). */
void batch_ranking_train(const struct dataset *ds, const struct rsplit *rs,
                         const struct label_conf *lc, int N, int with_ts, uint64_t seed,
                         uint64_t epoch, const int64_t *users, const struct rank_pieces *pc,
                         int64_t B, struct seq_batch *b);
/* users[B] (each with a candidate in the split): the evaluation batch.
 * part [B, 2] (NULL: every candidate, at most max_cand): entry i's
 * candidates are its user's part[2i + 1] candidates from the part[2i]-th
 * (of those max_cand leaves), each seeing the same history: a user with
 * more candidates than one batch should hold is cut into several entries
 * (eval_ranking.c), whose predictions are the whole user's. */
void batch_ranking_eval(const struct dataset *ds, const struct rsplit *rs,
                        const struct label_conf *lc, int test, int N, int64_t max_cand,
                        int with_ts, const int64_t *users, const int64_t *part, int64_t B,
                        struct seq_batch *b);
/* users[B] (each with events) and their candidates items[coff[i] .. coff[i + 1])
 * at times ts (NULL: the time of the user's last event). */
void batch_ranking_pairs(const struct dataset *ds, const struct label_conf *lc, int N, int with_ts,
                         const int64_t *users, int64_t B, const int64_t *coff, const int64_t *items,
                         const int64_t *ts, struct seq_batch *b);
/* The file's event of token t (of entry i, whose first token is t0) that is
 * a file event: b->ev[t], else consecutive from ev0 (b->cskip's gap
 * before the candidates). */
static inline int64_t batch_event(const struct seq_batch *b, int64_t i, int64_t t)
{
    if (b->ev)
        return b->ev[t];
    const int64_t j = t - b->offsets[i];
    if (!b->cskip)
        return b->ev0[i] + j;
    const int64_t n = b->offsets[i + 1] - b->offsets[i] - (b->cand_events ? 0 : b->ncand[i]);
    return b->ev0[i] + j + (j >= n - b->ncand[i] ? b->cskip[i] : 0);
}
/* Events of entry i read from the file at b->ev0[i] (all of its tokens but
 * candidates that are not events). */
static inline int64_t batch_file_events(const struct seq_batch *b, int64_t i)
{
    const int64_t L = b->offsets[i + 1] - b->offsets[i];
    return b->ncand && !b->cand_events ? L - b->ncand[i] : L;
}
/* Entry i's file events as runs of consecutive events: the first run's
 * length (all of them, or the history when the candidates are a part,
 * b->cskip) and where the second begins (its length: the rest). */
static inline int64_t batch_file_run(const struct seq_batch *b, int64_t i, int64_t *e1)
{
    const int64_t n = batch_file_events(b, i);
    const int64_t h = b->cskip ? n - b->ncand[i] : n;
    *e1 = b->ev0[i] + h + (b->cskip ? b->cskip[i] : 0);
    return h;
}

#endif
