/* batch: jagged batches of sequences read from a dataset, for training
 * (every position predicts the next event, histories truncated to the most
 * recent N inputs, each token carrying its random key) and for evaluation
 * (history before the split's target, with the whole history kept for
 * exclusion). */
#ifndef FS_DATA_BATCH_H
#define FS_DATA_BATCH_H

#include <stdint.h>

#include "data/dataset.h"
#include "data/split.h"

/* A jagged batch of sequences: inputs with their next-item targets. */
struct seq_batch {
    int64_t B, T;
    int64_t *users;     /* [B] dataset user index */
    int64_t *offsets;   /* [B + 1] */
    int64_t *items;     /* [T] input item ids */
    int64_t *targets;   /* [T] next item (train) or 0; eval: target at the last position */
    int64_t *ts;        /* [T] timestamps, or NULL */
    uint64_t *keys;     /* [T] per-token random key */
    int64_t *ev0;       /* [B] the file's index of entry i's first token's event (its
                           tokens are consecutive events): event features */
    int64_t *ev;        /* [T] or NULL: each token's event in the file, where they are not
                           consecutive (ranking's data.pools: data/pools.h); -1: none */
    int64_t *hist_off;  /* eval only: [B + 1] CSR of the whole history to exclude */
    int64_t *hist;      /* eval only */
    /* train with pieces (parallel.split_long), else NULL: */
    int64_t *pos0;      /* [B] position of each segment's first token */
    int64_t *key_off;   /* [B + 1] CSR: positions [0, pos0 + L) of each segment */
    int64_t *key_ts;    /* [key_off[B]] their timestamps (with_ts) */
    /* ranking's pieces (batch_ranking.h), else NULL: the leads, the events
     * just before the pieces that start after their sequence's first event
     * (model.actions = sum adds a lead's action to its piece's first) */
    int64_t *lead;      /* [B] entry i's lead (index into the two below), -1: none */
    int64_t nlead;
    int64_t *lead_ev;   /* [nlead] the file's index of each lead event */
    float *lead_labels; /* [nlead, nlab] their labels (NaN: missing) */
    /* ranking (batch_ranking.h), else NULL: */
    int64_t *ncand;     /* [B] the last ncand[i] tokens of entry i are candidates */
    int cand_events;    /* the candidates are the file's events after the history */
    int64_t *cskip;     /* [B] or NULL: entry i's candidates start cskip[i] events after its
                           history (a part of a user's candidates, batch_ranking_eval) */
    int nlab;           /* labels per token */
    float *labels;      /* [T, nlab] (NaN: missing) */
    float *target_labels; /* [T, nlab] the loss's, where some labelled events are inputs
                             only (the stream schedule's history: NaN there); else NULL */
    /* retrieval in the stream schedule (batch_window.h), else NULL: */
    uint8_t *no_target; /* [T] 1: an input whose next event is history (no loss there) */
    int64_t n_target;   /* positions with a target (T less those) */
};

/* Read and assemble the training batch of users[B]. With p0, p1 (else
 * NULL) entry i is positions [p0[i], p1[i]) of the user's training inputs
 * (a chunk of a split sequence; keys, targets and positions as in the
 * whole sequence), and pos0, key_off, key_ts are filled. */
void batch_train(const struct dataset *ds, enum split_mode mode, int N, int with_ts,
                 uint64_t seed, uint64_t epoch, const int64_t *users, const int64_t *p0,
                 const int64_t *p1, int64_t B, struct seq_batch *b);
/* Read and assemble an evaluation batch: history before the target of the
 * split (test or validation), truncated to N; targets[last] = the target;
 * the whole history is kept in hist for exclusion. The items of a raw
 * dataset are their numbers 1 .. num_items (dataset_raw_numbers). */
void batch_eval(const struct dataset *ds, enum split_mode mode, int test, int N, int with_ts,
                const int64_t *users, int64_t B, struct seq_batch *b);
/* The evaluation batch of B queries: query i predicts event target[i] of
 * user users[i] from its first hist[i] events (the most recent N of them
 * the inputs, all of them in hist for exclusion); batch_eval's and the
 * stream windows' (batch_window.h). */
void batch_eval_queries(const struct dataset *ds, int N, int with_ts, const int64_t *users,
                        const int64_t *hist, const int64_t *target, int64_t B,
                        struct seq_batch *b);
/* Tokens [j, end) of ev[n] (ascending file events) read as one span of the
 * file from ev[j]: a run whose gaps are at most BATCH_EV_GAP events. */
#define BATCH_EV_GAP 1024 /* a gap costs less to read than another read call */
static inline int64_t batch_ev_run(const int64_t *ev, int64_t j, int64_t n)
{
    int64_t k = j + 1;
    while (k < n && ev[k] > ev[k - 1] && ev[k] - ev[k - 1] <= BATCH_EV_GAP)
        k++;
    return k;
}
/* The values of the file events ev[0 .. n) (ascending) into out[n], each
 * `width` bytes: runs of nearby events (batch_ev_run) read as one span by
 * read(ctx, first, span, buf) into a scratch buffer, then picked. */
typedef void (*batch_span_reader)(void *ctx, int64_t first, int64_t span, void *buf);
void batch_ev_picked(const int64_t *ev, int64_t n, size_t width, batch_span_reader read,
                     void *ctx, void *out);
/* Allocate b's arrays for B sequences of T tokens in all (contents
 * undefined but targets, zeroed; ts only with_ts; hist_off only for eval:
 * the caller allocates hist). */
void batch_alloc(struct seq_batch *b, int64_t B, int64_t T, int with_ts, int eval);
void batch_free(struct seq_batch *b);
/* The dropout key of user u's token at position pos in an epoch (the same
 * on any number of ranks: a function of the seed, epoch, user, position). */
uint64_t batch_token_key(uint64_t seed, uint64_t epoch, int64_t user, int64_t pos);
/* The user part of user u's keys: ds->user_keys[u], else u. */
static inline int64_t batch_user_key(const struct dataset *ds, int64_t u)
{
    return ds->user_keys ? ds->user_keys[u] : u;
}
/* User u's events (with timestamps when with_ts) into growable buffers of
 * capacity *cap; fatal() naming the dataset on a read error. */
void batch_read_user(const struct dataset *ds, int64_t u, int with_ts, int64_t **items,
                     int64_t **ts, int64_t *cap);

#endif
