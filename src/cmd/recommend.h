/* recommend: 'freescale recommend' (the top-K items of every user after the
 * user's whole history, under the dataset's original ids) and what it
 * shares with 'freescale export' (cmd/export.c): the start-up from a
 * checkpoint and the user vectors in rounds.
 *
 * Start-up: the parameters are FILE.in with the overrides or, without
 * FILE.in, those stored in the checkpoint (attribute "params") with the
 * overrides; then the trainer (train.h) and the checkpoint's weights.
 *
 * User vectors: the model's output at the last position of the user's most
 * recent data.max_seq_len events (all of them: no event is held out), no
 * dropout, as evaluation computes them. A list of n users is cut into
 * chunks of `batch` consecutive positions, one forward pass each; in round
 * k rank r takes the chunks k P C + r C .. k P C + (r + 1) C - 1 (C chunks
 * per rank and round: about `round` users per round over all ranks, and no
 * more than spreads the chunks evenly). What a position gets depends only
 * on the list and the batch, never on P, and gathering a round in rank
 * order gives it in list order. Every function here is collective over
 * all ranks. */
#ifndef FS_RECOMMEND_H
#define FS_RECOMMEND_H

#include <stdint.h>

#include "base/params.h"
#include "comm/comm.h"
#include "train/train.h"

#define REC_BATCH 64     /* default users per forward pass */
#define REC_ROUND 65536  /* default users per round, all ranks (rank 0 gathers a round) */

/* The command line of recommend and export:
 *   TOOL CKPT.h5 [FILE.in] [section.key=value ...] OPTIONS */
struct rec_cmd {
    const char *tool;        /* "recommend" | "export" */
    const char *ckpt, *file; /* file: NULL = the checkpoint's parameters */
    int noverrides;
    char **overrides;        /* [noverrides] (argv strings) */
};

/* A word of the command line that is not one of the tool's options: the
 * checkpoint first, then the parameter file or an override; an unknown
 * option ('-...') ends the job naming it. */
void rec_cmd_word(struct rec_cmd *cmd, char *word);

/* MPI, the banner, the parameters, the trainer and the checkpoint's weights
 * (tr->c, tr->p set here). A checkpoint that is missing, unreadable, not a
 * checkpoint or made for another model or dataset ends the job naming it,
 * once (comm_fail_agree). What it prints is held (log_hold) until the
 * command has done its own set-up and calls log_release, so that an error
 * of the set-up is the first and only line (doc/robustness.md). */
void rec_start(const struct rec_cmd *cmd, int *argc, char ***argv, struct comm *c,
               struct params *p, struct trainer *tr);

struct rec_plan {
    int P;              /* ranks */
    int64_t n;          /* users in the list */
    int64_t batch;      /* users per chunk (forward pass) */
    int64_t per_rank;   /* chunks per rank and round (C) */
    int64_t rounds;
};

/* batch >= 1, round >= 1 (users per round over all ranks). */
void rec_plan_init(struct rec_plan *pl, int64_t n, int P, int64_t batch, int64_t round);
/* The first list position of round k. */
int64_t rec_plan_first(const struct rec_plan *pl, int64_t k);
/* This rank's positions [*lo, *lo + *cnt) of the list in round k. */
void rec_plan_span(const struct rec_plan *pl, int64_t k, int rank, int64_t *lo, int64_t *cnt);

/* User vectors u[cnt, d] of users[lo .. lo + cnt) (this rank's span of a
 * round; every user with at least one event), one forward pass per chunk,
 * and, if hist_off is not NULL, their whole histories as CSR: *hist_off
 * [cnt + 1], *hist [sum of lengths] (heap). */
void rec_user_vectors(struct trainer *tr, const struct rec_plan *pl, const int64_t *users,
                      int64_t lo, int64_t cnt, float *u, int64_t **hist_off, int64_t **hist);

/* Users with at least one event, in dataset order: their count, the list
 * (heap). */
int64_t rec_users_with_events(const struct dataset *ds, int64_t **users);

int recommend_main(int argc, char **argv);

#endif
