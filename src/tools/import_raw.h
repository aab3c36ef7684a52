/* import_raw: the ids of 'freescale data import --ids raw' (doc/data.md):
 * integer ids kept as they are, string ids as a 64-bit hash, and the
 * ranks of users and items in ascending raw id. */
#ifndef FS_IMPORT_RAW_H
#define FS_IMPORT_RAW_H

#include <stddef.h>
#include <stdint.h>

#include "tools/import_ids.h"

/* The raw id of a string id: FNV-1a 64 of its bytes (offset basis
 * 0xcbf29ce484222325, prime 0x100000001b3) with the top bit cleared, a
 * non-negative int64 (0 only when the hash is 0 or 2^63: refused). */
int64_t import_raw_hash(const char *s, size_t len);

/* Ranks of t's ids with count[k] > 0 in ascending raw id (integers as
 * they are; strings by hash, then bytewise): rank [t->n] (-1: no events),
 * *order [m] the interned index of each rank (the first of those that
 * share it), *raw [m] its raw id (free() both). merge: ids with equal raw
 * ids share one rank (items: strings whose hashes collide are one item);
 * else each keeps its own, in that order (users). *collisions: the ids
 * whose raw id an earlier one has. fatal() on a string hashing to 0.
 * Returns m. */
int64_t import_raw_rank(const struct import_ids *t, const int64_t *count, int merge,
                        int32_t *rank, int32_t **order, int64_t **raw, int64_t *collisions);

#endif
