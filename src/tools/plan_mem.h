/* plan_mem: the memory model of 'freescale plan --memory' (doc/scaling.md,
 * "Memory per rank"), and the time to a number of samples (--samples).
 *
 * Per rank at P ranks, from the parameters alone (no dataset needed):
 *   - the embedding tables (--tables NAME:ROWS[:DIM][:dyn], or the item
 *     table of data.path's items at model.dim): each sharded over the
 *     embedding group (parallel.embedding_group, 0 = all P ranks), a shard
 *     of ceil(ROWS / G) + 1 rows of DIM floats plus the optimizer's state
 *     (embedding.optimizer's floats a row, adam's 8-byte step count); a
 *     dynamic table (:dyn) as the trainer sizes its pool (train/placement.c):
 *     32 bytes of statistics a slot and an index of 16-byte entries at most
 *     half full;
 *   - the dense parameters: weights, gradients and Adam's two moments, fp32,
 *     replicated (the model's gradient arena, built on the CPU);
 *   - the step's workspace: the HSTU's buffers for the rank's tokens (its
 *     sequences x the tokens a sequence takes at data.max_seq_len), as
 *     model_hstu.c reserves them (x 1.25, the first reservation's headroom):
 *     13 d floats + 16 bytes + d mask bytes per token and layer, 12 d floats +
 *     d + 32 bytes per token beside them; the loss's, the head's and the
 *     exchange's buffers are not counted (tests/cli_plan_mem.sh checks the
 *     workspace against the fake device's measured one). */
#ifndef FS_PLAN_MEM_H
#define FS_PLAN_MEM_H

#include <stdint.h>

struct params;

struct plan_table {
    char name[64];
    double rows;
    int dim; /* 0: model.dim */
    int dyn;
};

struct plan_mem {
    int on;
    struct plan_table *t;
    int nt;
};

/* Parse --tables NAME:ROWS[:DIM][:dyn],... (fatal on a bad entry). */
void plan_mem_parse_tables(struct plan_mem *pm, const char *spec);

/* Tokens a sequence takes in the model at data.max_seq_len: the events
 * (twice with model.actions = interleave under ranking) and a contextual
 * token per features.user entry. */
double plan_mem_tokens_per_seq(const struct params *p);

/* The step's workspace of a rank with B sequences of T tokens in all. */
double plan_mem_workspace_bytes(const struct params *p, int64_t B, double T);

/* Print the memory per rank at each rank count; dense_floats: the model's
 * gradient arena; num_items: the item table's rows when no --tables (0:
 * none known). */
void plan_mem_print(const struct plan_mem *pm, const struct params *p, const int *ranks,
                    int nranks, int64_t per_rank, double dense_floats, int64_t num_items);

void plan_mem_free(struct plan_mem *pm);

#endif
