/* feat_cross: hashed crosses (features.cross), MLPerf DLRMv4's contextual
 * crosses of the user with the candidate's attributes (user_x_artist, ...).
 *
 * features.cross = NAME:KEY*KEY[*KEY..]:ROWS, ... names crosses of 2 to 4
 * keys, each key one of
 *   user     the user's raw id (/user_map) where the file has one, else
 *            its index in the file;
 *   item     the event's item: its raw id in a raw-id file, else its id;
 *   hour     the hour of day of the event's timestamp, (t / 3600) mod 24;
 *   COLUMN   an /items column (the item's value) or an /events column
 *            (the event's), single-valued categorical: the value's id in
 *            the file (0: missing, hashed as 0 too).
 * A cross is a feature of every event (an event feature of table
 * "feat.NAME", ROWS rows): its value is 1 + (xxh64(seed 0) of the keys as
 * little-endian int64 values, in order) mod ROWS, the hash of the
 * reference's xxhash_cross (generative_recommenders dlrm_v4
 * datasets/utils.py): with the same raw ids, the same rows. Its row is
 * added to its own event's item token (not to the action, which carries
 * the labels): at a training position it is the cross of the user with
 * that position's item, seen from there on; at an evaluated candidate,
 * the candidate's. A candidate that is no event of the file (score) gets
 * its item's cross with event columns 0. */
#ifndef FS_FEATURE_FEAT_CROSS_H
#define FS_FEATURE_FEAT_CROSS_H

#include <stddef.h>
#include <stdint.h>

#include "data/batch.h"
#include "data/dataset.h"
#include "feature/schema.h"

#define FEAT_CROSS_MAX_ROWS 2147483646 /* values are int32: 1 .. ROWS */

/* xxh64 of n little-endian int64 values with seed 0 (XXH64 of their 8 n
 * bytes). */
uint64_t feat_cross_hash(const int64_t *v, int n);
/* Parse fc->cross and add its features to s (after the listed ones): 0, or
 * -1 + err naming the parameter and the entry. */
int feat_cross_add(struct feat_schema *s, const struct feat_conf *fc, const struct dataset *ds,
                   char *err, size_t errlen);
/* The values of s's crosses at b's tokens into out[i] [T] (i: the
 * feature's index in s), the items' columns from v (feat_values_load).
 * raw: b->items are raw ids (else, in a raw-id file, numbers 1 ..
 * num_items). fatal() naming the dataset on a read error. */
struct feat_values;
void feat_cross_values(const struct feat_schema *s, const struct feat_values *v,
                       const struct dataset *ds, const struct seq_batch *b, int raw,
                       int32_t *const *out);

#endif
