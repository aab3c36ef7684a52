/* dataset: reader and writer of the HDF5 sequence format (doc/data.md).
 *
 *   /              attrs format="freescale-seq", version=1 or 2, num_items, num_users;
 *                  complete (optional: the number of events, written last;
 *                  data/stream_follow.h)
 *   /offsets       int64 [num_users + 1]  CSR offsets, 0 .. num_events
 *   /item_ids      int64 [num_events]     1 .. num_items
 *   /timestamps    int64 [num_events]     optional, non-decreasing per user
 *   /actions       int32 [num_events]     optional
 *   /item_map      int64 [num_items]      optional: original id of item i+1
 *   /user_map      int64 [num_users]      optional: original id of user u
 *   /item_map_str  string [num_items]     optional: the same for string ids
 *   /user_map_str  string [num_users]     optional
 * Version 2 adds features (each optional; dataset_feat.c):
 *   /events/NAME   [num_events]           one value per event
 *   /users/NAME    [num_users]            one value per user
 *   /items/NAME    [num_items]            one value per item (row i: item i + 1)
 *   or, multi-valued (users and items), a group NAME holding CSR
 *     offsets [n + 1] (0, non-decreasing, ends at len(values)) and values.
 * A categorical feature has integer values 0 .. cardinality - 1 (0 =
 * missing) and an int64 attribute `cardinality` (on the dataset, or on the
 * group of a multi-valued one); a float feature (float32/64, finite values,
 * single-valued) has none. /feature_maps/KIND/NAME: optional strings
 * [cardinality - 1], the original value of categorical id k + 1.
 *
 * What the reader accepts is what a correct writer, h5py's defaults
 * included, produces: string attributes of variable or fixed length, ASCII
 * or UTF-8; integer attributes and datasets of any width and signedness,
 * converted on read (int64; int32 for /actions) with range checks. It
 * refuses other classes (floats, ...), other ranks and shapes (checked
 * before anything is read), arrays where a scalar attribute belongs.
 * The writer writes the types above, the string attribute as a
 * variable-length UTF-8 string (h5py reads it as str), string maps as
 * fixed-length UTF-8 (NUL-padded; h5py: f["item_map_str"].asstr()[:]).
 *
 * Errors that a file can cause are returned as text naming the file, the
 * dataset and the first bad index; nothing here calls fatal() for them. */
#ifndef FS_DATASET_H
#define FS_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "data/h5io.h"

#define DATASET_FORMAT "freescale-seq"
#define DATASET_VERSION 1   /* written when the file has no features */
#define DATASET_VERSION_FEATURES 2
/* Raw item ids (dataset_raw.c): version 3, attribute ids = "raw", item ids
 * kept as imported (positive int64, no 1 .. num_items bound), the sorted
 * list of them in /items/ids [num_items] (row i of every /items/NAME is
 * item /items/ids[i]), each user's raw id in /user_map (non-decreasing). */
#define DATASET_VERSION_RAW 3
#define DATASET_RAW_LIST "ids" /* /items/ids: not a feature */
/* Root attribute: the number of events, written last (stream_follow.h). */
#define DATASET_COMPLETE_ATTR "complete"
/* The most rows of any table: num_items and cardinalities beyond it are
 * refused on open (no table of 2^40 rows fits any cluster). */
#define DATASET_MAX_ROWS ((int64_t)1 << 40)
#define DATASET_MAX_FEATURES 64
/* A table of `rows` rows whose largest id used is max_used is absurd
 * when rows exceeds both 2^26 and 1024 x max_used (data check refuses it). */
static inline int dataset_rows_absurd(int64_t rows, int64_t max_used)
{
    return rows > ((int64_t)1 << 26) && rows / 1024 > (max_used > 0 ? max_used : 1);
}
#define DATASET_FEATURE_NAME 48

enum dataset_feat_kind { DS_EVENTS, DS_USERS, DS_ITEMS };

/* One feature of a version 2 file, as found and checked by dataset_open. */
struct dataset_feature {
    char name[DATASET_FEATURE_NAME];
    enum dataset_feat_kind kind;
    int multi;                /* CSR: offsets + values (users, items) */
    int is_float;             /* float values (else categorical integers) */
    int64_t cardinality;      /* categorical: values 0 .. cardinality - 1 */
    int64_t n;                /* entities: num_events, num_users or num_items */
    int64_t n_values;         /* values stored (n unless multi) */
    int has_map;              /* /feature_maps/KIND/NAME exists */
    struct h5io_int t_val, t_off; /* stored integer types (t_off: multi) */
    int64_t d_val, d_off;     /* open hid_t (values; offsets of multi), -1 if none */
};

struct dataset {
    char path[4096];
    int64_t file; /* hid_t */
    int64_t num_users, num_items, num_events;
    int has_timestamps, has_actions, has_item_map, has_user_map;
    int has_item_map_str, has_user_map_str;
    int64_t *offsets; /* [num_users + 1], read and validated by dataset_open */
    int64_t d_items, d_ts, d_actions; /* open hid_t (-1 if absent), with a chunk cache */
    struct h5io_int t_items, t_ts, t_actions, t_item_map, t_user_map; /* stored types */
    int64_t version;
    int nfeat;
    struct dataset_feature *feat; /* [nfeat], events then users then items, by name */
    int raw_ids;                  /* version 3: raw item ids (dataset_raw.c) */
    int64_t *item_list;           /* raw: /items/ids [num_items], ascending, positive */
    int64_t *user_keys;           /* NULL, or user u's part of the stream batches' random keys
                                     (the raw user id: the same user, the same keys in a window
                                     file as in one dataset; cmd/train_stream.c); freed by close */
};

/* Open and validate attributes, dtypes, shapes and offsets. 0 or -1 + err. */
int dataset_open(struct dataset *ds, const char *path, char *err, size_t errlen);
/* path, which HDF5 cannot open: -1 with err saying what it is (a directory,
 * a text or gzip file, a damaged HDF5 file) and how to make a dataset. */
int dataset_hint_not_hdf5(const char *path, char *err, size_t errlen);
void dataset_close(struct dataset *ds);

static inline int64_t dataset_length(const struct dataset *ds, int64_t user)
{
    return ds->offsets[user + 1] - ds->offsets[user];
}

/* Events of users [u0, u1) (hyperslab reads), into arrays of
 * offsets[u1] - offsets[u0] entries; ts and actions may be NULL (ts must be
 * NULL when the file has none). Checks ids in 1..num_items and timestamps
 * non-decreasing within each user; errors name the global event index. */
int dataset_read_users(const struct dataset *ds, int64_t u0, int64_t u1, int64_t *items,
                       int64_t *ts, int32_t *actions, char *err, size_t errlen);
/* Read a 1-D int64 map (/item_map or /user_map) whole; NULL + err if absent. */
int64_t *dataset_read_map(const struct dataset *ds, const char *name, char *err, size_t errlen);
/* Read a string map ("item_map_str" [num_items] or "user_map_str"
 * [num_users]) whole: NUL-terminated strings, in one allocation (free() the
 * result once); NULL + err if absent. */
char **dataset_read_map_str(const struct dataset *ds, const char *name, char *err, size_t errlen);
/* A 1-D string dataset /name of n strings read whole (as
 * dataset_read_map_str); NULL + err when missing or of another shape. */
char **dataset_read_strings(const struct dataset *ds, const char *name, int64_t n, char *err,
                            size_t errlen);
/* Validate every event by streaming over users in bounded memory, then
 * every feature (dataset_feat_validate). */
int dataset_validate(const struct dataset *ds, char *err, size_t errlen);

/* --- raw item ids (version 3; dataset_raw.c) ------------------------------ */

/* The ids attribute, /items/ids and /user_map of a raw dataset, checked
 * (positive, strictly ascending ids; user ids non-decreasing), into
 * ds->item_list (called by dataset_open; nothing for a dense dataset). */
int dataset_raw_open(struct dataset *ds, char *err, size_t errlen);
/* The row of raw item id in ds->item_list, or -1. */
int64_t dataset_raw_index(const struct dataset *ds, int64_t id);
/* Raw item ids[n] to their item numbers 1 .. num_items (row + 1 in
 * ds->item_list), in place; ids <= 0 kept (padding, none). Evaluation,
 * recommend, score and export see a raw dataset's items by these numbers
 * (a dense view of the item table: train/train_dyn.h). Nothing for a
 * dense dataset; fatal() for an id not in the list (the readers check
 * every event's id). */
void dataset_raw_numbers(const struct dataset *ds, int64_t *ids, int64_t n);
/* items[n] (events e0 ..) of a raw dataset: each in /items/ids. */
int dataset_raw_check_items(const struct dataset *ds, int64_t e0, const int64_t *items,
                            int64_t n, char *err, size_t errlen);
/* A dense item table's rows are ids 1 .. num_items: a raw dataset needs a
 * dynamic item table (dynamic: embedding.dynamic = on). 0 for a dense
 * dataset or a dynamic table, else -1 + err saying so. */
int dataset_refuse_raw(const struct dataset *ds, int dynamic, char *err, size_t errlen);

/* --- features (version 2; dataset_feat.c) --------------------------------- */

const char *dataset_feat_kind_name(enum dataset_feat_kind k); /* "events", "users", "items" */
/* The feature KIND/name, or NULL. */
const struct dataset_feature *dataset_feat_find(const struct dataset *ds,
                                                enum dataset_feat_kind kind, const char *name);
/* Find, check (type, shape, cardinality attribute, storage) and open the
 * features of a version 2 file into ds->feat (called by dataset_open). */
int dataset_feat_open(struct dataset *ds, char *err, size_t errlen);
void dataset_feat_close(struct dataset *ds);
/* CSR offsets of entities [first, first + n) of feature f: off[n + 1]
 * (absolute indexes into the values; single-valued: first .. first + n),
 * checked: within the values, non-decreasing (errors name the first bad
 * index). */
int dataset_feat_offsets(const struct dataset *ds, const struct dataset_feature *f,
                         int64_t first, int64_t n, int64_t *off, char *err, size_t errlen);
/* Values [v0, v0 + n) of a categorical feature, checked in 0 ..
 * cardinality - 1: out[n]. */
int dataset_feat_ints(const struct dataset *ds, const struct dataset_feature *f, int64_t v0,
                      int64_t n, int32_t *out, char *err, size_t errlen);
/* Values [v0, v0 + n) of a float feature, checked finite: out[n]. */
int dataset_feat_floats(const struct dataset *ds, const struct dataset_feature *f, int64_t v0,
                        int64_t n, float *out, char *err, size_t errlen);
/* Every value and offset of every feature, streamed in bounded memory. */
int dataset_feat_validate(const struct dataset *ds, char *err, size_t errlen);
/* The value map of categorical feature f (/feature_maps/KIND/NAME): as
 * dataset_read_map_str, [cardinality - 1] strings; NULL + err if absent. */
char **dataset_feat_map(const struct dataset *ds, const struct dataset_feature *f, char *err,
                        size_t errlen);

/* Streaming writer. Writes to "PATH.tmp.PID" and renames to PATH only in
 * dataset_writer_close(); dataset_writer_abort() removes the temporary.
 * Version 1 unless a feature is written, then 2. */
struct dataset_writer;
struct dataset_writer *dataset_writer_open(const char *path, int with_timestamps,
                                           int with_actions, char *err, size_t errlen);
/* One output at a time: the temporary is also removed when the process
 * ends before the rename (fatal, exit; with on_signals, the data tools',
 * SIGTERM, SIGINT, SIGHUP: base/tmpguard.h) until close or abort. */
void dataset_writer_guard(struct dataset_writer *w, int on_signals);
/* Append n users: lengths[n], then sum(lengths) events in user order.
 * ts / actions must be given iff the writer was opened with them. */
int dataset_writer_append(struct dataset_writer *w, int64_t n, const int64_t *lengths,
                          const int64_t *items, const int64_t *ts, const int32_t *actions,
                          char *err, size_t errlen);
/* Optional maps, written whole (name "item_map" or "user_map"). */
int dataset_writer_map(struct dataset_writer *w, const char *name, const int64_t *ids,
                       int64_t n, char *err, size_t errlen);
/* String maps ("item_map_str", "user_map_str"): s[i][0 .. len[i]), i < n. */
int dataset_writer_map_str(struct dataset_writer *w, const char *name, const char *const *s,
                           const size_t *len, int64_t n, char *err, size_t errlen);
/* Features. An event feature is declared before the first append
 * (returns its index k) and its values appended after each
 * dataset_writer_append, as many as that call's events (ints: categorical
 * ids, or floats when declared float); user and item features are written
 * whole: n entities, off [n + 1] CSR (NULL: single-valued) into ints or
 * floats. cardinality: categorical values 0 .. cardinality - 1 (0 =
 * missing), 0 for float values. Maps: strings [cardinality - 1]. */
int dataset_writer_event_feature(struct dataset_writer *w, const char *name, int is_float,
                                 int64_t cardinality, char *err, size_t errlen);
int dataset_writer_append_feature(struct dataset_writer *w, int k, int64_t n,
                                  const int32_t *ints, const float *floats, char *err,
                                  size_t errlen);
int dataset_writer_feature(struct dataset_writer *w, enum dataset_feat_kind kind,
                           const char *name, int64_t cardinality, int64_t n, const int64_t *off,
                           const int32_t *ints, const float *floats, char *err, size_t errlen);
int dataset_writer_feature_map(struct dataset_writer *w, enum dataset_feat_kind kind,
                               const char *name, const char *const *s, const size_t *len,
                               int64_t n, char *err, size_t errlen);
/* Write offsets and attributes, close, rename. Frees w (also on error,
 * after removing the temporary). */
int dataset_writer_close(struct dataset_writer *w, int64_t num_items, char *err, size_t errlen);
/* A raw dataset (version 3): the sorted raw item ids [n] as /items/ids;
 * close then writes ids = "raw" and needs num_items = n. Once, before
 * close; the ids must be positive and strictly ascending. */
int dataset_writer_raw_items(struct dataset_writer *w, const int64_t *ids, int64_t n, char *err,
                             size_t errlen);
void dataset_writer_abort(struct dataset_writer *w);

/* Turn HDF5's printing of errors off (this module reports them); once. */
void dataset_h5_quiet(void);

/* Checks before HDF5 reads an object of a file it did not write: HDF5 1.10
 * follows what the file says without checking it against the file (it
 * loops, copies out of bounds or frees wild pointers on crafted input).
 * obj is an open attribute or dataset (hid_t) of file, what names it in the
 * error; 0, or -1 + err naming file and object.
 *
 * dataset_h5_attrs_check: the object header of obj, when of version 1 (not
 * checksummed; version 2 headers are verified by HDF5): its chunks lie in
 * the file, its messages in their chunks, and each attribute message's
 * name, type, space and value in the message (HDF5 1.10 copies past it).
 * dataset_h5_vlen_check: a variable-length attribute or dataset (string or
 * sequence; anything else passes): every value's global heap collection
 * lies in the file and parses to the end, and holds the value's object
 * with the value's length. It reads the stored (length, address, index)
 * triples through an opaque type, never the heap through HDF5.
 * dataset_h5_storage_check: a dataset's storage holds every value:
 * contiguous or compact storage of at least npoints * type size bytes;
 * every allocated chunk of a chunked dataset whose filters (those it did
 * not skip) keep the size, that is none, shuffle or Fletcher-32, exactly
 * the chunk's bytes (+ 4 for the checksum), and at least 4 bytes under
 * Fletcher-32 in any pipeline. Chunks through deflate or other filters
 * that change the size are left to the filter's own checks (zlib's
 * checksum). */
int dataset_h5_attrs_check(int64_t obj, const char *file, const char *what, char *err,
                           size_t errlen);
int dataset_h5_vlen_check(int64_t obj, const char *file, const char *what, char *err,
                          size_t errlen);
int dataset_h5_storage_check(int64_t dset, const char *file, const char *what, char *err,
                             size_t errlen);

#endif
