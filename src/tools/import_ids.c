/* import_ids: interning of original ids and their dense ranks; see
 * import_ids.h. */
#include "tools/import_ids.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"

static uint64_t mix64(uint64_t x) /* splitmix64 finaliser */
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t hash_str(const char *s, size_t len) /* FNV-1a, then mixed */
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return mix64(h ^ len);
}

static uint64_t hash_of(const struct import_ids *t, int64_t k)
{
    if (!t->strings)
        return mix64((uint64_t)t->ids[k]);
    size_t len;
    const char *s = import_ids_str(t, k, &len);
    return hash_str(s, len);
}

void import_ids_init(struct import_ids *t, int strings)
{
    memset(t, 0, sizeof *t);
    t->strings = strings;
    t->last_k = -1;
    if (strings) {
        t->off = xmalloc(sizeof *t->off);
        t->off[0] = 0;
    }
}

void import_ids_free(struct import_ids *t)
{
    free(t->ids);
    free(t->bytes);
    free(t->off);
    free(t->slots);
    memset(t, 0, sizeof *t);
    t->last_k = -1;
}

static void ids_rehash(struct import_ids *t, uint64_t size)
{
    free(t->slots);
    t->slots = xcalloc(size, sizeof *t->slots);
    t->mask = size - 1;
    for (int64_t k = 0; k < t->n; k++) {
        uint64_t h = hash_of(t, k) & t->mask;
        while (t->slots[h])
            h = (h + 1) & t->mask;
        t->slots[h] = (int32_t)(k + 1);
    }
}

/* Room for one more id (and len more bytes of string). */
static void ids_grow(struct import_ids *t, size_t len)
{
    if (t->n == INT32_MAX - 1)
        fatal("more than %d distinct ids: not supported", INT32_MAX - 1);
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 1024;
        if (t->strings)
            t->off = xrealloc(t->off, (size_t)(t->cap + 1) * sizeof *t->off);
        else
            t->ids = xrealloc(t->ids, (size_t)t->cap * sizeof *t->ids);
    }
    if (t->strings && (size_t)t->off[t->n] + len > t->bcap) {
        while ((size_t)t->off[t->n] + len > t->bcap)
            t->bcap = t->bcap ? 2 * t->bcap : (size_t)1 << 16;
        t->bytes = xrealloc(t->bytes, t->bcap);
    }
}

/* Slot h (of the new id) gets index n; the table doubles at half full. */
static int32_t ids_added(struct import_ids *t, uint64_t h)
{
    int32_t k = (int32_t)t->n++;
    t->slots[h] = k + 1;
    if ((uint64_t)t->n * 2 > t->mask)
        ids_rehash(t, 2 * (t->mask + 1));
    t->last_k = k;
    return k;
}

int32_t import_ids_add_i64(struct import_ids *t, int64_t id)
{
    if (t->last_k >= 0 && t->ids[t->last_k] == id)
        return t->last_k;
    if (!t->slots)
        ids_rehash(t, 1024);
    uint64_t h = mix64((uint64_t)id) & t->mask;
    int32_t k;
    while ((k = t->slots[h]) != 0 && t->ids[k - 1] != id)
        h = (h + 1) & t->mask;
    if (k)
        return t->last_k = k - 1;
    ids_grow(t, 0);
    t->ids[t->n] = id;
    return ids_added(t, h);
}

static int same_str(const struct import_ids *t, int64_t k, const char *s, size_t len)
{
    size_t kl;
    const char *ks = import_ids_str(t, k, &kl);
    return kl == len && !memcmp(ks, s, len);
}

int32_t import_ids_add_str(struct import_ids *t, const char *s, size_t len)
{
    if (t->last_k >= 0 && same_str(t, t->last_k, s, len))
        return t->last_k;
    if (!t->slots)
        ids_rehash(t, 1024);
    uint64_t h = hash_str(s, len) & t->mask;
    int32_t k;
    while ((k = t->slots[h]) != 0 && !same_str(t, k - 1, s, len))
        h = (h + 1) & t->mask;
    if (k)
        return t->last_k = k - 1;
    ids_grow(t, len);
    memcpy(t->bytes + t->off[t->n], s, len);
    t->off[t->n + 1] = t->off[t->n] + (int64_t)len;
    return ids_added(t, h);
}

int32_t import_ids_find_i64(const struct import_ids *t, int64_t id)
{
    if (!t->slots || t->strings)
        return -1;
    uint64_t h = mix64((uint64_t)id) & t->mask;
    int32_t k;
    while ((k = t->slots[h]) != 0 && t->ids[k - 1] != id)
        h = (h + 1) & t->mask;
    return k - 1;
}

int32_t import_ids_find_str(const struct import_ids *t, const char *s, size_t len)
{
    if (!t->slots || !t->strings)
        return -1;
    uint64_t h = hash_str(s, len) & t->mask;
    int32_t k;
    while ((k = t->slots[h]) != 0 && !same_str(t, k - 1, s, len))
        h = (h + 1) & t->mask;
    return k - 1;
}

/* --- ranks -------------------------------------------------------------------- */

/* LSD radix sort of key [n] ascending, val carried along; stable. Bytes
 * where all keys agree are skipped. ktmp, vtmp: scratch of n. */
static void radix_sort(uint64_t *key, int32_t *val, int64_t n, uint64_t *ktmp, int32_t *vtmp)
{
    static int64_t hist[8][256];
    memset(hist, 0, sizeof hist);
    for (int64_t i = 0; i < n; i++)
        for (int d = 0; d < 8; d++)
            hist[d][(key[i] >> (8 * d)) & 255]++;
    uint64_t *ks = key, *kd = ktmp;
    int32_t *vs = val, *vd = vtmp;
    for (int d = 0; d < 8 && n > 0; d++) {
        int64_t *h = hist[d], sum = 0;
        if (h[(key[0] >> (8 * d)) & 255] == n)
            continue;
        for (int b = 0; b < 256; b++) {
            int64_t c = h[b];
            h[b] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t at = h[(ks[i] >> (8 * d)) & 255]++;
            kd[at] = ks[i], vd[at] = vs[i];
        }
        uint64_t *kt = ks; ks = kd; kd = kt;
        int32_t *vt = vs; vs = vd; vd = vt;
    }
    if (ks != key) {
        memcpy(key, ks, (size_t)n * sizeof *key);
        memcpy(val, vs, (size_t)n * sizeof *val);
    }
}

/* Bytewise order of two interned string ids (qsort_r comparator). */
static int cmp_str_ids(const void *a, const void *b, void *arg)
{
    const struct import_ids *t = arg;
    size_t la, lb;
    const char *sa = import_ids_str(t, *(const int32_t *)a, &la);
    const char *sb = import_ids_str(t, *(const int32_t *)b, &lb);
    int c = memcmp(sa, sb, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

int64_t import_ids_rank(const struct import_ids *t, const int64_t *count, int32_t *rank,
                        int32_t **order)
{
    int32_t *val = xmalloc((size_t)(t->n + 1) * 2 * sizeof *val);
    int64_t m = 0;
    for (int64_t k = 0; k < t->n; k++) {
        rank[k] = -1;
        if (count[k] > 0)
            val[m++] = (int32_t)k;
    }
    if (t->strings) {
        qsort_r(val, (size_t)m, sizeof *val, cmp_str_ids, (void *)t);
    } else {
        uint64_t *key = xmalloc((size_t)(m + 1) * 2 * sizeof *key);
        for (int64_t r = 0; r < m; r++) /* sign bit flipped: signed order as unsigned */
            key[r] = (uint64_t)t->ids[val[r]] ^ ((uint64_t)1 << 63);
        radix_sort(key, val, m, key + m, val + m);
        free(key);
    }
    for (int64_t r = 0; r < m; r++)
        rank[val[r]] = (int32_t)r;
    *order = xrealloc(val, (size_t)(m ? m : 1) * sizeof *val);
    return m;
}
