/* feat_cross: hashed crosses (features.cross); see feat_cross.h. */
#include "feature/feat_cross.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "feature/feat_values.h"

/* --- XXH64 (Collet's xxHash, 64-bit), seed 0 ---------------------------------------- */

#define XP1 0x9E3779B185EBCA87ull
#define XP2 0xC2B2AE3D27D4EB4Full
#define XP3 0x165667B19E3779F9ull
#define XP4 0x85EBCA77C2B2AE63ull
#define XP5 0x27D4EB2F165667C5ull

static uint64_t rotl(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static uint64_t xround(uint64_t acc, uint64_t in)
{
    return rotl(acc + in * XP2, 31) * XP1;
}

static uint64_t xmerge(uint64_t h, uint64_t v)
{
    return (h ^ xround(0, v)) * XP1 + XP4;
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--)
        x = x << 8 | p[i];
    return x;
}

/* XXH64 of the n bytes at p (a multiple of 8 here), seed 0. */
static uint64_t xxh64(const uint8_t *p, size_t n)
{
    const uint8_t *end = p + n;
    uint64_t h;
    if (n >= 32) {
        uint64_t v1 = XP1 + XP2, v2 = XP2, v3 = 0, v4 = 0 - XP1;
        for (; p + 32 <= end; p += 32) {
            v1 = xround(v1, le64(p));
            v2 = xround(v2, le64(p + 8));
            v3 = xround(v3, le64(p + 16));
            v4 = xround(v4, le64(p + 24));
        }
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
        h = xmerge(xmerge(xmerge(xmerge(h, v1), v2), v3), v4);
    } else {
        h = XP5;
    }
    h += n;
    for (; p + 8 <= end; p += 8)
        h = rotl(h ^ xround(0, le64(p)), 27) * XP1 + XP4;
    for (; p < end; p++) /* (not reached: whole int64 values) */
        h = rotl(h ^ (*p * XP5), 11) * XP1;
    h ^= h >> 33;
    h *= XP2;
    h ^= h >> 29;
    h *= XP3;
    h ^= h >> 32;
    return h;
}

uint64_t feat_cross_hash(const int64_t *v, int n)
{
    uint8_t buf[8 * FEAT_CROSS_KEYS];
    for (int k = 0; k < n; k++)
        for (int i = 0; i < 8; i++)
            buf[8 * k + i] = (uint8_t)((uint64_t)v[k] >> (8 * i));
    return xxh64(buf, (size_t)(8 * n));
}

/* --- features.cross ---------------------------------------------------------------- */

/* The key named name (n bytes) of an entry into c's key j. */
static int parse_key(const char *text, const char *name, size_t n, const struct dataset *ds,
                     struct feat_cross *c, int j, char *err, size_t errlen)
{
    char key[DATASET_FEATURE_NAME];
    if (n == 0 || n >= sizeof key)
        return errorf(err, errlen, "features.cross = %s: an empty or too long key", text);
    memcpy(key, name, n);
    key[n] = 0;
    c->df[j] = -1;
    if (!strcmp(key, "user"))
        c->key[j] = CK_USER;
    else if (!strcmp(key, "item"))
        c->key[j] = CK_ITEM;
    else if (!strcmp(key, "hour")) {
        c->key[j] = CK_HOUR;
        if (!ds->has_timestamps)
            return errorf(err, errlen, "features.cross = %s: the key hour needs timestamps, and "
                          "%s has no /timestamps", text, ds->path);
    } else {
        const struct dataset_feature *f = dataset_feat_find(ds, DS_ITEMS, key);
        c->key[j] = CK_ITEM_FEATURE;
        if (!f) {
            f = dataset_feat_find(ds, DS_EVENTS, key);
            c->key[j] = CK_EVENT_FEATURE;
        }
        if (!f)
            return errorf(err, errlen, "features.cross = %s: key '%s' is not user, item, hour, "
                          "an /items column or an /events column of %s", text, key, ds->path);
        if (f->is_float || f->multi)
            return errorf(err, errlen, "features.cross = %s: key '%s' is a %s column of %s: a "
                          "key is a single-valued categorical column", text, key,
                          f->is_float ? "float" : "multi-valued", ds->path);
        c->df[j] = (int)(f - ds->feat);
    }
    return 0;
}

/* One entry NAME:KEY*KEY..:ROWS into s. */
static int parse_entry(struct feat_schema *s, const struct feat_conf *fc, const struct dataset *ds,
                       const char *entry, size_t n, char *err, size_t errlen)
{
    const char *text = fc->cross;
    const char *c1 = memchr(entry, ':', n);
    const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(entry + n - c1 - 1)) : NULL;
    char name[DATASET_FEATURE_NAME], rows[32];
    if (!c1 || !c2 || c1 == entry || (size_t)(c1 - entry) >= sizeof name ||
        (size_t)(entry + n - c2 - 1) >= sizeof rows)
        return errorf(err, errlen, "features.cross = %s: '%.*s' is not NAME:KEY*KEY[*KEY..]:ROWS "
                      "(e.g. user_x_artist:user*artist:100000000)", text, (int)n, entry);
    memcpy(name, entry, (size_t)(c1 - entry));
    name[c1 - entry] = 0;
    snprintf(rows, sizeof rows, "%.*s", (int)(entry + n - c2 - 1), c2 + 1);
    char *end;
    const long long R = strtoll(rows, &end, 10);
    if (!rows[0] || *end || R < 1 || R > FEAT_CROSS_MAX_ROWS)
        return errorf(err, errlen, "features.cross = %s: cross %s: ROWS '%s' is not an integer "
                      "in 1 .. %d", text, name, rows, FEAT_CROSS_MAX_ROWS);
    if (s->ncross == FEAT_MAX_CROSS || s->n == DATASET_MAX_FEATURES)
        return errorf(err, errlen, "features.cross = %s: more than %d crosses or %d features",
                      text, FEAT_MAX_CROSS, DATASET_MAX_FEATURES);
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->f[i].name, name))
            return errorf(err, errlen, "features.cross = %s: '%s' names another feature", text,
                          name);
    struct feat_cross *c = &s->cross[s->ncross];
    memset(c, 0, sizeof *c);
    snprintf(c->text, sizeof c->text, "%.*s", (int)(c2 - c1 - 1), c1 + 1);
    for (const char *p = c1 + 1; p < c2;) {
        const size_t k = strcspn(p, "*:");
        if (c->nkeys == FEAT_CROSS_KEYS)
            return errorf(err, errlen, "features.cross = %s: cross %s: more than %d keys", text,
                          name, FEAT_CROSS_KEYS);
        if (parse_key(text, p, k, ds, c, c->nkeys++, err, errlen))
            return -1;
        p += k + (p[k] == '*');
    }
    if (c->nkeys < 2)
        return errorf(err, errlen, "features.cross = %s: cross %s: %s is one key (a cross takes "
                      "2 to %d, KEY*KEY)", text, name, c->text, FEAT_CROSS_KEYS);
    struct feat_spec *sp = &s->f[s->n];
    memset(sp, 0, sizeof *sp);
    snprintf(sp->name, sizeof sp->name, "%s", name);
    sp->role = FEAT_EVENT;
    sp->df = -1;
    sp->cross = ++s->ncross;
    sp->rows = R;
    if (feat_spec_table(s, fc, sp, name, err, errlen))
        return -1;
    s->n++;
    s->n_event++;
    return 0;
}

int feat_cross_add(struct feat_schema *s, const struct feat_conf *fc, const struct dataset *ds,
                   char *err, size_t errlen)
{
    for (const char *p = fc->cross; *p;) {
        const size_t n = strcspn(p, ",");
        const char *e = p;
        size_t m = n;
        while (m && (*e == ' ' || *e == '\t'))
            e++, m--;
        while (m && (e[m - 1] == ' ' || e[m - 1] == '\t'))
            m--;
        if (parse_entry(s, fc, ds, e, m, err, errlen))
            return -1;
        p += n + (p[n] == ',');
    }
    return 0;
}

/* (t / 3600) mod 24 with the floor, as Python's: 0 .. 23 before 1970 too */
static int64_t hour_of(int64_t t)
{
    int64_t h = t / 3600;
    if (t % 3600 < 0)
        h--;
    return ((h % 24) + 24) % 24;
}

void feat_cross_values(const struct feat_schema *s, const struct feat_values *v,
                       const struct dataset *ds, const struct seq_batch *b, int raw,
                       int32_t *const *out)
{
    if (!s->ncross)
        return;
    int32_t *ev[FEAT_CROSS_KEYS] = {NULL};
    for (int i = 0; i < s->n; i++) {
        const int k = s->f[i].cross - 1;
        if (k < 0)
            continue;
        const struct feat_cross *c = &s->cross[k];
        for (int j = 0; j < c->nkeys; j++) /* the event columns, as the event features read */
            if (c->key[j] == CK_EVENT_FEATURE) {
                struct feat_schema one;
                memset(&one, 0, sizeof one);
                one.n = 1;
                one.f[0].role = FEAT_EVENT;
                one.f[0].df = c->df[j];
                ev[j] = xmalloc((size_t)(b->T ? b->T : 1) * sizeof *ev[j]);
                int32_t *o[1] = {ev[j]};
                feat_values_events(&one, ds, b, o);
            }
        for (int j = 0; j < c->nkeys; j++)
            if (c->key[j] == CK_HOUR && !b->ts)
                fatal("features.cross: cross %s: the key hour without the batch's timestamps "
                      "(data.timestamps = off?)", s->f[i].name);
        for (int64_t q = 0; q < b->B; q++) {
            const int64_t u = b->users[q]; /* the raw id: a window file's, else the file's */
            const int64_t user = ds->user_keys ? ds->user_keys[u] : v->xuser ? v->xuser[u] : u;
            for (int64_t t = b->offsets[q]; t < b->offsets[q + 1]; t++) {
                int64_t it = b->items[t], num = it, key[FEAT_CROSS_KEYS];
                if (ds->raw_ids && raw) { /* a raw id: its number for the item's columns */
                    dataset_raw_numbers(ds, &num, 1);
                } else if (ds->raw_ids) {
                    it = ds->item_list[num - 1];
                }
                for (int j = 0; j < c->nkeys; j++)
                    switch (c->key[j]) {
                    case CK_USER: key[j] = user; break;
                    case CK_ITEM: key[j] = it; break;
                    case CK_HOUR: key[j] = hour_of(b->ts[t]); break;
                    case CK_ITEM_FEATURE:
                        key[j] = num >= 1 && num <= ds->num_items ? v->xitem[k][j][num - 1] : 0;
                        break;
                    case CK_EVENT_FEATURE: key[j] = ev[j][t]; break;
                    }
                out[i][t] = (int32_t)(1 + feat_cross_hash(key, c->nkeys) % (uint64_t)s->f[i].rows);
            }
        }
        for (int j = 0; j < FEAT_CROSS_KEYS; j++) {
            free(ev[j]);
            ev[j] = NULL;
        }
    }
}
