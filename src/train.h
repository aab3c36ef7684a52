/* train: 'freescale train FILE.in [section.key=value ...]': the training
 * loop (DESIGN.md §5) and the state it shares with evaluation. */
#ifndef FS_TRAIN_H
#define FS_TRAIN_H

#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "comm.h"
#include "dataset.h"
#include "device.h"
#include "embedding.h"
#include "model.h"
#include "params.h"
#include "steptime.h"
#include "train_data.h"

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
    int64_t n_train, *train_users;
    int64_t step, epoch;
    double best_val;          /* best validation NDCG@10 so far (-1: none) */
    int64_t best_epoch;       /* its epoch (-1: none); both kept in checkpoints */
    FILE *metrics;
    struct steptime st;
    double slow;              /* debug.slow_rank factor on this rank (1 = normal) */
    const char *trace_path;   /* output.trace, "" = none */
};

/* One step over this rank's users[B] of the global batch; returns the
 * global mean loss and the global token count (train_step.c). */
double train_step(struct trainer *tr, const int64_t *users, int64_t B, int64_t *tokens);

int train_main(int argc, char **argv);

/* The model's user vectors for a batch without dropout: out[B, d] at each
 * sequence's last position (evaluation). */
void train_user_vectors(struct trainer *tr, const struct seq_batch *b, float *out);

#endif
