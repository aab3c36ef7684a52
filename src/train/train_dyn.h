/* train_dyn: the training run's side of dynamic tables (embedding.dynamic,
 * features.dynamic; embedding/emb_dyn.h): their settings, what is refused
 * with them (one function), their counters in the metrics and the
 * progress line, their memory at start-up. */
#ifndef FS_TRAIN_DYN_H
#define FS_TRAIN_DYN_H

#include <stddef.h>
#include <stdint.h>

#include "base/params.h"
#include "embedding/emb_dyn.h"

struct trainer;
struct train_conf;

/* embedding.dynamic, capacity, admit, evict into dc: 0, or -1 with err. */
int train_dyn_resolve(const struct params *p, struct emb_dyn_conf *dc, char *err, size_t errlen);
/* Every refusal of a run with a dynamic table, known from the parameters
 * (P ranks; 0 = not known yet): 0, or -1 with err naming the parameter. */
int train_dyn_refuse(const struct params *p, const struct train_conf *tc, int P, char *err,
                     size_t errlen);
/* Start-up: one line per dynamic table (its shards' pool and index). */
void train_dyn_describe(struct trainer *tr);
/* The counters of every dynamic table over a logging interval of `steps`
 * steps, summed over the job (collective over world): rows held, rows
 * inserted, evicted and unadmitted hits per step, the hash index's fill. */
#define TRAIN_DYN_MAX 16
struct train_dyn_figs {
    int n;
    const char *name[TRAIN_DYN_MAX];
    double rows[TRAIN_DYN_MAX], inserted[TRAIN_DYN_MAX], evicted[TRAIN_DYN_MAX];
    double unadmitted[TRAIN_DYN_MAX], load[TRAIN_DYN_MAX];
};
/* Take them into f, and the progress line's words into line ("" without
 * a dynamic table). */
void train_dyn_take(struct trainer *tr, int64_t steps, struct train_dyn_figs *f, char *line,
                    size_t llen);
struct metrics_line;
/* Their metrics fields TABLE.rows, .inserted, .evicted, .unadmitted_hits, .load. */
void train_dyn_metrics(const struct train_dyn_figs *f, struct metrics_line *l);

/* train.loss = full over a dynamic item table: the candidates are the
 * dataset's items, item numbers j = 1 .. num_items dealt to the ranks as a
 * dense table's ids (loss_full.h), each requested by its id (a raw
 * dataset: /items/ids[j - 1], in place of ids[n]; a dense one: j) and
 * looked up as the step's other ids, so that with admit = 1 every
 * candidate has its row (the only settings train_dyn_refuse allows);
 * the loss reads the targets as numbers too (step_input's target_nums). */
void train_dyn_full_ids(const struct trainer *tr, int64_t *ids, int64_t n);

/* Evaluation, recommend, score and export read the item table as a dense
 * table of ids 1..rows (sharded by id mod G): over a dynamic item table,
 * train_dyn_view_begin makes such a table from it (collective over emb:
 * every id looked up, read only; an id without a row gets the unadmitted
 * row) and points tr->items at it; train_dyn_view_end restores the
 * dynamic table and frees the view. On a dataset of raw ids the view's
 * row j is the row of raw id /items/ids[j - 1] (the sorted item list:
 * the candidates of evaluation and recommend), and those commands read
 * the items as these numbers (dataset_raw_numbers). Nothing without a
 * dynamic item table. */
void train_dyn_view_begin(struct trainer *tr);
void train_dyn_view_end(struct trainer *tr);
/* While a view is made: the row [dim] that the view's ids without a row of
 * their own hold (the unadmitted row as a lookup returns it: the same bits
 * on every rank; eval_retrieval.h's shared_row), else NULL. The view's own
 * lookups send fp32 rows, so that they return the view's bits. */
const float *train_dyn_view_shared(void);

#endif
