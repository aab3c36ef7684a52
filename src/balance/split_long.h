/* split_long: pieces of a global batch for context-parallel attention
 * (parallel.split_long, doc/balance.md).
 *
 * Balancing moves whole sequences; a sequence that alone outweighs a
 * rank's share of the step cannot be balanced that way. With split_long on,
 * a sequence whose predicted cost exceeds the threshold theta is cut into k
 * chunks, contiguous runs of positions [p0, p1), which the balancer then
 * assigns like whole sequences (a whole sequence is the piece [0, L)).
 *
 * Cost of a piece (cost model c(L) = c0 + a L + b L^2 of balance.h, which
 * counts L (L + 1) / 2 causal attention pairs as b L^2 + b L): its tokens'
 * work plus its attention pairs, plus kv_cost per key/value row it receives
 * from the earlier chunks (p0 rows):
 *   c(p0, p1) = c0 + (a - b) (p1 - p0) + b (p1 (p1 + 1) - p0 (p0 + 1)) + kv_cost p0
 * so c(0, L) = c(L). The chunk boundaries split G(p) = a p + b p^2 (the work
 * of positions [0, p)) into k equal parts: later positions attend to more
 * keys, so later chunks are shorter.
 *
 * theta = threshold when > 0, else fraction x (the step's total cost / P).
 * k = ceil(c(L) / theta), at most P, and reduced until the shortest chunk
 * has min_chunk positions (one attention tile). force (debug.split_chunks)
 * splits every sequence into min(force, L) chunks instead, whatever their
 * length (tests). A boundary lies on the grid head + step j (j >= 1) of
 * the conf, the nearest to its equal-work position (ranking's model
 * tokens: the contextual tokens in front, two tokens an event when the
 * actions are interleaved); min(force, (L - head) / step) chunks then.
 * Deterministic: every rank computes the same pieces. */
#ifndef FS_SPLIT_LONG_H
#define FS_SPLIT_LONG_H

#include <stddef.h>
#include <stdint.h>

#include "balance/balance.h"

/* chunks of one sequence at most (message tags stay below MPI_TAG_UB) */
#define SPLIT_MAX_CHUNKS 64

struct split_conf {
    int on;            /* parallel.split_long = auto */
    double threshold;  /* > 0: the cost above which a sequence is split */
    double fraction;   /* else theta = fraction x mean cost per rank */
    double kv_cost;    /* cost of one key/value row received */
    int min_chunk;     /* shortest chunk in positions */
    int force;         /* >= 2: every sequence into this many chunks */
    /* the cut points: head + step j, j >= 1 (0, 0: every position; ranking:
     * the contextual tokens stay with the first chunk, an event's action
     * token with its item, train/step_feat.c) */
    int64_t head;
    int step;
};

/* Positions [p0, p1) of sequence seq (index in the global batch); chunk
 * `chunk` of `nchunks` (0 of 1: the whole sequence). */
struct piece {
    int64_t seq, p0, p1;
    int chunk, nchunks;
};

/* Growable pieces of one step. */
struct split_pieces {
    int64_t n, cap;
    struct piece *pc;  /* [n] in order of seq, then chunk */
    double *cost;      /* [n] predicted cost */
    int64_t nsplit;    /* sequences cut into more than one chunk */
};

/* Cost of positions [p0, p1) (formula above). */
double split_piece_cost(const struct split_conf *sc, const struct cost_model *cm, int64_t p0,
                        int64_t p1);

/* The pieces of the n sequences of lengths len[n] at P ranks, into out
 * (its arrays grown as needed; zero-initialise it once, split_free at the
 * end). With sc->on == 0 (and no force) every sequence is one piece. */
void split_plan(const struct split_conf *sc, const struct cost_model *cm, const int64_t *len,
                int64_t n, int P, struct split_pieces *out);
void split_free(struct split_pieces *sp);

/* Key/value rows that travel between different ranks in one layer's
 * forward, given the pieces' owners: each chunk's rows go to every later
 * chunk of its sequence on another rank (the backward sends as many
 * gradient rows back). */
int64_t split_p2p_rows(const struct split_pieces *sp, const int *owner);

/* With an explicit threshold: refuse (return -1 with err) one below the
 * cost of a first chunk of min_chunk positions, which would need chunks
 * shorter than one tile. */
int split_check(const struct split_conf *sc, const struct cost_model *cm, char *err,
                size_t errlen);

#endif
