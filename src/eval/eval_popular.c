/* eval_popular: the most-popular-items baseline, evaluated like the model:
 * items ranked by their number of training events, the user's history
 * excluded, leave-one-out targets (the stream schedule's window: the events
 * before it counted, its events the targets). Items with the target's count
 * are ties, taken as the model's are (eval_metrics_add: the expectation
 * over their random order). */
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "eval/eval.h"

static const int64_t *g_count; /* for the sort below */

static int by_popularity(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    if (g_count[x] != g_count[y])
        return g_count[x] > g_count[y] ? -1 : 1;
    return (x > y) - (x < y);
}

void eval_popular(const struct eval_ctx *ev, int test, struct eval_metrics *out)
{
    struct comm *c = ev->c;
    const struct dataset *ds = ev->ds;
    const int64_t n_items = ds->num_items, hold = split_holdout(ev->split);
    int64_t *count = xcalloc((size_t)n_items + 1, sizeof *count);
    /* training events of this rank's block of users, summed over all ranks */
    int64_t lo = ds->num_users * c->rank / c->size, hi = ds->num_users * (c->rank + 1) / c->size;
    int64_t n_ev = ds->offsets[hi] - ds->offsets[lo];
    int64_t *items = xmalloc((size_t)(n_ev ? n_ev : 1) * sizeof *items);
    char err[1024];
    if (dataset_read_users(ds, lo, hi, items, NULL, NULL, err, sizeof err))
        fatal("%s", err);
    dataset_raw_numbers(ds, items, n_ev); /* a raw dataset: item numbers 1 .. n_items */
    for (int64_t u = lo; u < hi; u++) {
        int64_t end = ev->window ? ev->rsplit->bound[2 * u] : dataset_length(ds, u) - hold;
        for (int64_t e = 0; e < end; e++)
            count[items[ds->offsets[u] - ds->offsets[lo] + e]]++;
    }
    free(items);
    comm_allreduce_sum_i64v(c, COMM_DP, count, n_items + 1);
    /* pos[id]: items with a higher count than id's; tie[id]: items with its count */
    int64_t *order = xmalloc((size_t)(n_items ? n_items : 1) * sizeof *order);
    int64_t *pos = xmalloc(((size_t)n_items + 1) * 2 * sizeof *pos), *tie = pos + n_items + 1;
    for (int64_t i = 0; i < n_items; i++)
        order[i] = i + 1;
    g_count = count;
    qsort(order, (size_t)n_items, sizeof *order, by_popularity);
    for (int64_t i = 0, j; i < n_items; i = j) { /* groups of equal counts */
        for (j = i; j < n_items && count[order[j]] == count[order[i]]; j++)
            pos[order[j]] = i;
        for (int64_t k = i; k < j; k++)
            tie[order[k]] = j - i;
    }
    free(order);
    /* above: items before the target's group, ties: the others of its group,
     * less the history items among them */
    int64_t *users, *events = NULL, skipped;
    int64_t n = ev->window ? batch_window_entries(ev->rsplit, ds, &users, &events, &skipped)
                           : split_eval_users(ds, ev->split, test, &users);
    int64_t a = n * c->rank / c->size, b = n * (c->rank + 1) / c->size;
    uint8_t *seen = xcalloc((size_t)n_items + 1, 1);
    eval_metrics_init(out);
    for (int64_t k = a; k < b; k += 256) {
        struct seq_batch sb;
        const int64_t nb = b - k < 256 ? b - k : 256;
        if (ev->window)
            batch_window_eval(ds, ev->rsplit, ev->N, 0, users + k, events + k, nb, &sb);
        else
            batch_eval(ds, ev->split, test, ev->N, 0, users + k, nb, &sb);
        for (int64_t i = 0; i < sb.B; i++) {
            const int64_t target = sb.targets[sb.offsets[i + 1] - 1];
            int64_t r = pos[target], t = tie[target] - 1;
            for (int64_t h = sb.hist_off[i]; h < sb.hist_off[i + 1]; h++) {
                int64_t id = sb.hist[h];
                if (id >= 1 && id != target && !seen[id]) {
                    r -= pos[id] < pos[target];
                    t -= pos[id] == pos[target];
                }
                seen[id] = 1;
            }
            for (int64_t h = sb.hist_off[i]; h < sb.hist_off[i + 1]; h++)
                seen[sb.hist[h]] = 0;
            eval_metrics_add(out, r, t);
        }
        batch_free(&sb);
    }
    eval_metrics_reduce(out, c);
    free(seen);
    free(users);
    free(events);
    free(pos);
    free(count);
}
