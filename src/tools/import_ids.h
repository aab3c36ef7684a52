/* import_ids: the distinct original ids of users or of items, interned in
 * order of first appearance (index k = the k-th distinct id), and their
 * dense ranks in ascending order of the original id.
 *
 * Ids are either int64 (ascending numerically) or strings of bytes
 * (ascending bytewise, a prefix before the longer id: "A1" < "A10" < "A2",
 * "0000013714" and "13714" are different ids). An open-addressing hash
 * finds an id; slots hold k + 1, 0 = empty. */
#ifndef FS_IMPORT_IDS_H
#define FS_IMPORT_IDS_H

#include <stddef.h>
#include <stdint.h>

#define IMPORT_MAX_ID_BYTES 1024 /* longer string ids are refused by the readers */

struct import_ids {
    int strings;             /* 1: string ids, 0: int64 ids */
    int64_t n, cap;          /* distinct ids; capacity of ids / off */
    int64_t *ids;            /* int64 ids [n] */
    char *bytes;             /* string ids: id k is bytes[off[k] .. off[k + 1]) */
    int64_t *off;            /* [n + 1] */
    size_t bcap;
    int32_t *slots;
    uint64_t mask;           /* slots: mask + 1 */
    int32_t last_k;          /* the id interned last (consecutive rows of one user), -1 */
};

void import_ids_init(struct import_ids *t, int strings);
void import_ids_free(struct import_ids *t);
/* Index of the id, added when new (fatal past INT32_MAX - 1 distinct ids). */
int32_t import_ids_add_i64(struct import_ids *t, int64_t id);
int32_t import_ids_add_str(struct import_ids *t, const char *s, size_t len);
/* Index of an id interned before, or -1. */
int32_t import_ids_find_i64(const struct import_ids *t, int64_t id);
int32_t import_ids_find_str(const struct import_ids *t, const char *s, size_t len);

static inline const char *import_ids_str(const struct import_ids *t, int64_t k, size_t *len)
{
    *len = (size_t)(t->off[k + 1] - t->off[k]);
    return t->bytes + t->off[k];
}

/* Dense ranks of the ids with count[k] > 0 (count [n]): rank [n] = place in
 * ascending original order, or -1 for ids without events; *order [m] = the
 * interned indexes in that order (free() it). Returns m. */
int64_t import_ids_rank(const struct import_ids *t, const int64_t *count, int32_t *rank,
                        int32_t **order);

#endif
