/* train: 'freescale train FILE.in [section.key=value ...]': the training
 * loop (DESIGN.md §5) and the state it shares with evaluation. */
#ifndef FS_TRAIN_H
#define FS_TRAIN_H

#include <stdint.h>
#include <stdio.h>

#include "backend/backend.h"
#include "comm/comm.h"
#include "data/dataset.h"
#include "comm/dense_ipc.h"
#include "backend/device.h"
#include "embedding/embedding.h"
#include "model/model.h"
#include "base/params.h"
#include "train/steptime.h"
#include "data/batch.h"

enum overlap_mode { OVERLAP_NONE, OVERLAP_PIPELINE, OVERLAP_PRIORITIZED };

/* One step's input: this rank's sequences read, negatives drawn, ids
 * de-duplicated and their exchange posted; with parallel.overlap, the next
 * step's is prepared during the current step (train_step.c). */
struct step_input {
    int ready;
    struct seq_batch sb;
    struct emb_exchange x;
};

#define TRAIN_MAX_BUCKETS (MODEL_MAX_PARAMS + 1)

/* the step's backend buffers (train_step.c) */
enum { BUF_ROWS, BUF_INV, BUF_EMB, BUF_OUT, BUF_DU, BUF_DROWS, BUF_DEMB, BUF_COUNT };

struct trainer {
    struct comm *c;
    struct params *p;
    const struct backend_ops *be;
    struct device_choice dev;
    struct dataset ds;
    enum split_mode split;
    int N, d, R, bce, with_ts, normalize_items;
    uint64_t seed;
    struct model m;
    struct emb_registry reg;
    struct emb_table *items;
    float **adam_m, **adam_v; /* per dense tensor */
    int64_t adam_t;
    float *stage;             /* [m.ngrad] pinned host buffer (staged all-reduce) or NULL */
    int ipc;                  /* parallel.transport copy-engine | kernel in use (dense_ipc) */
    struct dense_ipc dipc;    /* its state when ipc */
    enum overlap_mode overlap;
    struct step_input in[2];  /* this step's and the next step's input */
    int in_cur;
    int bucketed;             /* dense all-reduce in buckets during the backward */
    int nbuckets;
    int64_t bucket_end;       /* arena floats [bucket_end, ngrad) are posted */
    struct comm_request buckets[TRAIN_MAX_BUCKETS];
    /* the step's backend buffers, grown as needed and kept across steps
     * (device allocations synchronise; see train_step.c) */
    struct step_buf {
        void *p;
        size_t cap;
    } buf[BUF_COUNT];
    int64_t n_train, *train_users;
    int64_t step, epoch;
    double best_val;          /* best validation NDCG@10 so far (-1: none) */
    int64_t best_epoch;       /* its epoch (-1: none); both kept in checkpoints */
    FILE *metrics;
    struct steptime st;
    double slow;              /* debug.slow_rank factor on this rank (1 = normal) */
    const char *trace_path;   /* output.trace, "" = none */
};

/* One step over this rank's users[B] of the global batch (epoch tr->epoch);
 * returns the global mean loss and the global token count (train_step.c).
 * With parallel.overlap, next_users[next_B] (of next_epoch) are the next
 * step's, prepared during this one (NULL: none, e.g. the last step). */
double train_step(struct trainer *tr, const int64_t *users, int64_t B,
                  const int64_t *next_users, int64_t next_B, int64_t next_epoch,
                  int64_t *tokens);
/* Complete and drop a next-step input prepared ahead (before stopping);
 * collective like the step. */
void train_step_drain(struct trainer *tr);
/* parallel.overlap and parallel.transport for this backend (setup). */
void train_step_setup(struct trainer *tr);

int train_main(int argc, char **argv);

/* The model's user vectors for a batch without dropout: out[B, d] at each
 * sequence's last position (evaluation). */
void train_user_vectors(struct trainer *tr, const struct seq_batch *b, float *out);

#endif
