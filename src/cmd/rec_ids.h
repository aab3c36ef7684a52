/* rec_ids: the original ids of a dataset's users or items, for the output
 * of recommend and export and for reading their --users lists.
 *
 * Dense ids: items 1..num_items (row i - 1 of a map), users 0..num_users-1.
 * The originals come from /item_map, /user_map (int64) or /item_map_str,
 * /user_map_str (strings) when the dataset has them (data import writes
 * one of the two), else they are the dense ids themselves. The items of
 * a raw dataset (dataset_raw.c) are numbered 1 .. num_items in its sorted
 * list /items/ids; their originals are the raw ids of that list (or the
 * strings of /item_map_str, by the list's row). */
#ifndef FS_REC_IDS_H
#define FS_REC_IDS_H

#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"
#include "data/h5io.h"

enum rec_ids_kind { REC_IDS_DENSE, REC_IDS_INT, REC_IDS_STRING };

struct rec_ids {
    enum rec_ids_kind kind;
    int items;         /* 1: items (dense base 1), 0: users (base 0) */
    int64_t n;         /* entries: num_items or num_users */
    int64_t *ints;     /* [n] REC_IDS_INT */
    char **strs;       /* [n] REC_IDS_STRING (one allocation) */
    size_t maxlen;     /* longest string (bytes, >= 1) */
    int64_t *sorted;   /* [n] positions in original-id order, for rec_ids_find (lazy) */
};

/* Load the map of items (items = 1) or users of ds. 0, or -1 + err. */
int rec_ids_load(struct rec_ids *m, const struct dataset *ds, int items, char *err,
                 size_t errlen);
void rec_ids_free(struct rec_ids *m);
const char *rec_ids_kind_name(const struct rec_ids *m); /* "dense" | "int" | "string" */

/* The original id of dense id `id` as text: a pointer into m (strings) or
 * into buf[len]. */
const char *rec_ids_text(const struct rec_ids *m, int64_t id, char *buf, size_t len);
/* The dense id of an original id given as text; -1 when no user/item has
 * it (or the text is not an integer where the ids are integers). */
int64_t rec_ids_find(struct rec_ids *m, const char *text);

/* HDF5: the file type of these ids (int64, or fixed-length strings of
 * maxlen bytes; close it with h5io_close_obj) and the ids of dense ids[n]
 * into buf in that type (8 or maxlen bytes each; id == pad gives 0 or ""). */
hid_t rec_ids_h5_type(const struct rec_ids *m, struct h5io *h);
size_t rec_ids_h5_size(const struct rec_ids *m);
void rec_ids_h5_fill(const struct rec_ids *m, const int64_t *ids, int64_t n, int64_t pad,
                     void *buf);
/* The whole map into dataset d [n] of h (row i: dense id i + base), in
 * blocks dealt round-robin to the nparts ranks writing it (this one: part;
 * collective under MPI-IO). */
void rec_ids_h5_write(const struct rec_ids *m, struct h5io *h, hid_t d, int part, int nparts);

#endif
