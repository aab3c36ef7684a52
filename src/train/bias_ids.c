/* bias_ids: model.bias's rows over window files; see bias_ids.h. */
#include "train/bias_ids.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"

/* A growing set of raw ids with their rows: ids ascending [n], rows. */
struct idset {
    int64_t *id, *row, n;
};

/* Add the ids of add [m] (ascending, repeats allowed) absent from s, with
 * rows next, next + 1, ... in ascending id; returns the rows given. */
static int64_t idset_merge(struct idset *s, const int64_t *add, int64_t m, int64_t next)
{
    int64_t *id = xmalloc((size_t)(s->n + m + 1) * sizeof *id);
    int64_t *row = xmalloc((size_t)(s->n + m + 1) * sizeof *row);
    int64_t n = 0, i = 0, j = 0, given = 0;
    while (i < s->n || j < m) {
        if (j > 0 && j < m && add[j] == add[j - 1]) {
            j++;
            continue;
        }
        if (j >= m || (i < s->n && s->id[i] <= add[j])) {
            j += j < m && s->id[i] == add[j];
            id[n] = s->id[i];
            row[n++] = s->row[i++];
        } else {
            id[n] = add[j++];
            row[n++] = next + given++;
        }
    }
    free(s->id);
    free(s->row);
    s->id = id;
    s->row = row;
    s->n = n;
    return given;
}

/* The row of raw id x in (id [n], row), or -1. */
static int64_t idset_find(const int64_t *id, const int64_t *row, int64_t n, int64_t x)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t m = lo + (hi - lo) / 2;
        if (id[m] < x)
            lo = m + 1;
        else
            hi = m;
    }
    return lo < n && id[lo] == x ? row[lo] : -1;
}

int bias_ids_open(struct bias_ids *b, struct stream_files *s, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    struct idset items = {0}, users = {0};
    int64_t ni = 0, nu = 0;
    for (int k = 0; k < s->n; k++) {
        const struct dataset *ds = stream_files_dataset(s, k, err, errlen);
        if (!ds) {
            free(items.id);
            free(items.row);
            free(users.id);
            free(users.row);
            return -1;
        }
        ni += idset_merge(&items, ds->item_list, ds->num_items, ni + 1); /* row 0: padding */
        nu += idset_merge(&users, s->f[k].uid, ds->num_users, nu);
        stream_files_release(s, k + 1); /* one open at a time; opened again when used */
    }
    *b = (struct bias_ids){.ni = ni, .nu = nu, .iid = items.id, .irow = items.row,
                           .uid = users.id, .urow = users.row};
    return 0;
}

int bias_ids_window(struct bias_ids *b, const struct dataset *ds, char *err, size_t errlen)
{
    if (!ds->raw_ids || !ds->user_keys)
        return errorf(err, errlen, "%s: model.bias over window files needs raw item ids and "
                      "/user_map", ds->path);
    b->imap = xrealloc(b->imap, (size_t)(ds->num_items + 1) * sizeof *b->imap);
    b->umap = xrealloc(b->umap, (size_t)(ds->num_users ? ds->num_users : 1) * sizeof *b->umap);
    b->nimap = ds->num_items + 1;
    b->numap = ds->num_users;
    b->imap[0] = 0;
    for (int64_t j = 0; j < ds->num_items; j++)
        if ((b->imap[j + 1] = idset_find(b->iid, b->irow, b->ni, ds->item_list[j])) < 0)
            return errorf(err, errlen, "model.bias: item %lld (raw id) of %s is in none of the "
                          "window files present at the start, whose items the bias rows hold "
                          "(a file added since: train.follow, or a resume with more files than "
                          "the run began with)", (long long)ds->item_list[j], ds->path);
    for (int64_t u = 0; u < ds->num_users; u++)
        if ((b->umap[u] = idset_find(b->uid, b->urow, b->nu, ds->user_keys[u])) < 0)
            return errorf(err, errlen, "model.bias: user %lld (raw id) of %s is in none of the "
                          "window files present at the start, whose users the bias rows hold "
                          "(a file added since: train.follow, or a resume with more files than "
                          "the run began with)", (long long)ds->user_keys[u], ds->path);
    return 0;
}

void bias_ids_free(struct bias_ids *b)
{
    free(b->iid);
    free(b->irow);
    free(b->uid);
    free(b->urow);
    free(b->imap);
    free(b->umap);
    memset(b, 0, sizeof *b);
}
