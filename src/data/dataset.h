/* dataset: reader and writer of the HDF5 sequence format (DESIGN.md §4).
 *
 *   /              attrs format="freescale-seq", version=1, num_items, num_users
 *   /offsets       int64 [num_users + 1]  CSR offsets, 0 .. num_events
 *   /item_ids      int64 [num_events]     1 .. num_items
 *   /timestamps    int64 [num_events]     optional, non-decreasing per user
 *   /actions       int32 [num_events]     optional
 *   /item_map      int64 [num_items]      optional: original id of item i+1
 *   /user_map      int64 [num_users]      optional: original id of user u
 *   /item_map_str  string [num_items]     optional: the same for string ids
 *   /user_map_str  string [num_users]     optional
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
#define DATASET_VERSION 1

struct dataset {
    char path[4096];
    int64_t file; /* hid_t */
    int64_t num_users, num_items, num_events;
    int has_timestamps, has_actions, has_item_map, has_user_map;
    int has_item_map_str, has_user_map_str;
    int64_t *offsets; /* [num_users + 1], read and validated by dataset_open */
    int64_t d_items, d_ts, d_actions; /* open hid_t (-1 if absent), with a chunk cache */
    struct h5io_int t_items, t_ts, t_actions, t_item_map, t_user_map; /* stored types */
};

/* Open and validate attributes, dtypes, shapes and offsets. 0 or -1 + err. */
int dataset_open(struct dataset *ds, const char *path, char *err, size_t errlen);
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
/* Validate every event by streaming over users in bounded memory. */
int dataset_validate(const struct dataset *ds, char *err, size_t errlen);

/* Streaming writer. Writes to "PATH.tmp.PID" and renames to PATH only in
 * dataset_writer_close(); dataset_writer_abort() removes the temporary. */
struct dataset_writer;
struct dataset_writer *dataset_writer_open(const char *path, int with_timestamps,
                                           int with_actions, char *err, size_t errlen);
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
/* Write offsets and attributes, close, rename. Frees w (also on error,
 * after removing the temporary). */
int dataset_writer_close(struct dataset_writer *w, int64_t num_items, char *err, size_t errlen);
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
