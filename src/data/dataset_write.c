/* dataset_write: the streaming writer of HDF5 sequence datasets; see
 * dataset.h for the format (the reader: dataset.c). The file is written as
 * PATH.tmp.PID and renamed into place only when everything succeeded. */
#include "data/dataset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/check.h"
#include "base/tmpguard.h"

#define CHUNK_EVENTS ((int64_t)1 << 16) /* 64 Ki events = 512 KiB of int64 */
#define CHUNK_STRING_BYTES ((size_t)1 << 20) /* string maps: about 1 MiB chunks */

#define MAX_EVENT_FEATURES 32

/* A feature written: its kind and entity count (checked at close); event
 * features: the open dataset and the values appended so far. */
struct writer_feature {
    enum dataset_feat_kind kind;
    char name[DATASET_FEATURE_NAME];
    int is_float;
    int64_t n;
    hid_t d;
};

struct dataset_writer {
    char path[4096], tmp[4200];
    struct h5io h; /* the file being written (no on_fail: calls return -1) */
    hid_t d_items, d_ts, d_actions;
    int64_t events, users, cap_users;
    int64_t *offsets;
    int nfeat;                       /* features written: version 2 when > 0 */
    int64_t raw_items;               /* raw ids (version 3): /items/ids written, their count; -1 */
    int guarded;                     /* the temporary is under tmpguard (dataset_writer_guard) */
    struct writer_feature feat[DATASET_MAX_FEATURES];
};

static hid_t create_extendible(struct dataset_writer *w, const char *name, hid_t type)
{
    const struct h5io_layout lay = {.chunk_rows = CHUNK_EVENTS, .deflate = 1, .extendible = 1};
    return h5io_dset(&w->h, w->h.f, name, type, 0, 0, &lay);
}

static int append_slab(struct dataset_writer *w, hid_t d, hid_t mem_type, int64_t first,
                       int64_t n, const void *buf)
{
    return h5io_append(&w->h, d, mem_type, first, n, buf);
}

/* A whole 1-D dataset of type from memory of type mem. */
static int write_whole_as(struct dataset_writer *w, const char *name, hid_t type, hid_t mem,
                          const void *buf, int64_t n)
{
    const struct h5io_layout lay = {
        .chunk_rows = n > 0 ? (n < (int64_t)CHUNK_EVENTS ? n : (int64_t)CHUNK_EVENTS) : 0,
        .deflate = n > 0};
    hid_t d = h5io_dset(&w->h, w->h.f, name, type, n, 0, &lay);
    int rc = d < 0 || h5io_write_rows(&w->h, d, mem, 0, 1, n, 0, buf) ? -1 : 0;
    if (d >= 0)
        h5io_close_obj(&w->h, d);
    return rc || w->h.failed ? -1 : 0;
}

static int write_whole(struct dataset_writer *w, const char *name, hid_t type, const void *buf,
                       int64_t n)
{
    return write_whole_as(w, name, type, H5T_NATIVE_INT64, buf, n);
}

static void writer_free(struct dataset_writer *w)
{
    for (int i = 0; i < w->nfeat; i++)
        h5io_close_obj(NULL, w->feat[i].d);
    h5io_close_obj(NULL, w->d_items);
    h5io_close_obj(NULL, w->d_ts);
    h5io_close_obj(NULL, w->d_actions);
    h5io_abandon(&w->h);
    free(w->offsets);
    free(w);
}

void dataset_writer_abort(struct dataset_writer *w)
{
    if (!w)
        return;
    char tmp[sizeof w->tmp];
    memcpy(tmp, w->tmp, sizeof tmp);
    const int guarded = w->guarded;
    writer_free(w);
    unlink(tmp);
    if (guarded)
        tmpguard_end();
}

void dataset_writer_guard(struct dataset_writer *w, int on_signals)
{
    tmpguard_begin(w->tmp, on_signals);
    w->guarded = 1;
}

struct dataset_writer *dataset_writer_open(const char *path, int with_timestamps,
                                           int with_actions, char *err, size_t errlen)
{
    dataset_h5_quiet();
    struct dataset_writer *w = xcalloc(1, sizeof *w);
    w->d_items = w->d_ts = w->d_actions = -1;
    w->raw_items = -1;
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%ld", path, (long)getpid());
    w->cap_users = 1024;
    w->offsets = xmalloc((size_t)w->cap_users * sizeof(int64_t));
    w->offsets[0] = 0;
    /* strong close (h5io): a failed H5Fclose (a full disk) leaves no object
     * open for HDF5's exit handler to trip over */
    if (h5io_create(&w->h, w->tmp, NULL, 0, NULL, NULL)) {
        int e = w->h.errnum;
        errorf(err, errlen, "%s: cannot create output file %s: %s", path, w->tmp,
               e ? strerror(e) : "directory missing or not writable?");
        dataset_writer_abort(w); /* removes a temporary file HDF5 may have begun */
        return NULL;
    }
    w->d_items = create_extendible(w, "/item_ids", H5T_STD_I64LE);
    if (with_timestamps)
        w->d_ts = create_extendible(w, "/timestamps", H5T_STD_I64LE);
    if (with_actions)
        w->d_actions = create_extendible(w, "/actions", H5T_STD_I32LE);
    if (w->d_items < 0 || (with_timestamps && w->d_ts < 0) || (with_actions && w->d_actions < 0)) {
        errorf(err, errlen, "%s: cannot create datasets in %s", path, w->tmp);
        dataset_writer_abort(w);
        return NULL;
    }
    return w;
}

int dataset_writer_append(struct dataset_writer *w, int64_t n, const int64_t *lengths,
                          const int64_t *items, const int64_t *ts, const int32_t *actions,
                          char *err, size_t errlen)
{
    if ((ts != NULL) != (w->d_ts >= 0) || (actions != NULL) != (w->d_actions >= 0))
        return errorf(err, errlen, "%s: internal: timestamps/actions given inconsistently", w->path);
    if (w->users + n + 1 > w->cap_users) {
        while (w->users + n + 1 > w->cap_users)
            w->cap_users *= 2;
        w->offsets = xrealloc(w->offsets, (size_t)w->cap_users * sizeof(int64_t));
    }
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        if (lengths[i] < 0)
            return errorf(err, errlen, "%s: internal: negative length", w->path);
        total += lengths[i];
        w->offsets[w->users + i + 1] = w->events + total;
    }
    if (append_slab(w, w->d_items, H5T_NATIVE_INT64, w->events, total, items) ||
        (ts && append_slab(w, w->d_ts, H5T_NATIVE_INT64, w->events, total, ts)) ||
        (actions && append_slab(w, w->d_actions, H5T_NATIVE_INT32, w->events, total, actions))) {
        int e = w->h.errnum;
        w->h.failed = 0; /* the writer reports it; the caller aborts */
        return errorf(err, errlen, "%s: write to %s failed: %s", w->path, w->tmp,
                      e ? strerror(e) : "disk full?");
    }
    w->users += n;
    w->events += total;
    return 0;
}

int dataset_writer_map(struct dataset_writer *w, const char *name, const int64_t *ids, int64_t n,
                       char *err, size_t errlen)
{
    char path[64];
    snprintf(path, sizeof path, "/%s", name);
    if (write_whole(w, path, H5T_STD_I64LE, ids, n))
        return errorf(err, errlen, "%s: cannot write %s to %s", w->path, path, w->tmp);
    return 0;
}

/* Is s[0 .. len) valid UTF-8 (no overlong forms, surrogates or code points
 * past U+10FFFF)? ASCII is. */
static int valid_utf8(const unsigned char *s, size_t len)
{
    static const uint32_t min_cp[4] = {0, 0x80, 0x800, 0x10000};
    for (size_t i = 0; i < len;) {
        unsigned c = s[i];
        int n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2
              : (c & 0xF8) == 0xF0 ? 3 : -1; /* continuation bytes */
        if (n < 0 || (size_t)n > len - i - 1)
            return 0;
        uint32_t cp = c & (n ? 0x7Fu >> (n + 1) : 0x7Fu);
        for (int k = 1; k <= n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += (size_t)n + 1;
    }
    return 1;
}

int dataset_writer_map_str(struct dataset_writer *w, const char *name, const char *const *s,
                           const size_t *len, int64_t n, char *err, size_t errlen)
{
    size_t size = 1;
    int utf8 = 1;
    for (int64_t i = 0; i < n; i++) {
        if (len[i] > size)
            size = len[i];
        if (utf8 && !valid_utf8((const unsigned char *)s[i], len[i]))
            utf8 = 0;
    }
    char path[256];
    snprintf(path, sizeof path, "/%s", name);
    int64_t chunk = (int64_t)(CHUNK_STRING_BYTES / size ? CHUNK_STRING_BYTES / size : 1);
    if (chunk > n)
        chunk = n;
    hid_t t = h5io_str_type(&w->h, size, utf8), d = -1;
    if (t >= 0) {
        const struct h5io_layout lay = {.chunk_rows = n ? chunk : 0, .deflate = n > 0,
                                        .deflate_noshuffle = 1};
        d = h5io_dset(&w->h, w->h.f, path, t, n, 0, &lay);
    }
    int rc = d < 0 ? -1 : 0;
    char *buf = n ? xmalloc((size_t)chunk * size) : NULL;
    for (int64_t b = 0; rc == 0 && b < n; b += chunk) {
        const int64_t count = n - b < chunk ? n - b : chunk;
        memset(buf, 0, (size_t)count * size);
        for (int64_t i = 0; i < count; i++)
            memcpy(buf + i * (int64_t)size, s[b + i], len[b + i]);
        rc = h5io_write_rows(&w->h, d, t, b, 1, count, 0, buf);
    }
    free(buf);
    h5io_close_obj(&w->h, d);
    h5io_close_obj(&w->h, t);
    if (rc || w->h.failed) {
        w->h.failed = 0;
        return errorf(err, errlen, "%s: cannot write %s to %s", w->path, path, w->tmp);
    }
    return 0;
}

int dataset_writer_close(struct dataset_writer *w, int64_t num_items, char *err, size_t errlen)
{
    if (num_items < 1 || (w->raw_items >= 0 && w->raw_items != num_items)) {
        if (num_items < 1)
            errorf(err, errlen, "%s: no items: refusing to write an empty dataset", w->path);
        else
            errorf(err, errlen, "%s: internal: /items/%s has %lld ids, num_items = %lld",
                   w->path, DATASET_RAW_LIST, (long long)w->raw_items, (long long)num_items);
        dataset_writer_abort(w);
        return -1;
    }
    for (int i = 0; i < w->nfeat; i++) {
        const struct writer_feature *f = &w->feat[i];
        const int64_t want = f->kind == DS_EVENTS ? w->events : f->kind == DS_USERS ? w->users
                                                                                    : num_items;
        if (f->n != want) {
            errorf(err, errlen, "%s: internal: feature %s/%s has %lld values for %lld %s",
                   w->path, dataset_feat_kind_name(f->kind), f->name, (long long)f->n,
                   (long long)want, dataset_feat_kind_name(f->kind));
            dataset_writer_abort(w);
            return -1;
        }
    }
    struct h5io *h = &w->h;
    if (write_whole(w, "/offsets", H5T_STD_I64LE, w->offsets, w->users + 1) ||
        h5io_attr_utf8(h, h->f, "format", DATASET_FORMAT) ||
        h5io_attr_i64(h, h->f, "version", w->raw_items >= 0 ? DATASET_VERSION_RAW
                                          : w->nfeat ? DATASET_VERSION_FEATURES : DATASET_VERSION) ||
        (w->raw_items >= 0 && h5io_attr_utf8(h, h->f, "ids", "raw")) ||
        h5io_attr_i64(h, h->f, "num_items", num_items) ||
        h5io_attr_i64(h, h->f, "num_users", w->users) ||
        h5io_attr_i64(h, h->f, DATASET_COMPLETE_ATTR, w->events)) { /* last */
        errorf(err, errlen, "%s: cannot write offsets or attributes to %s", w->path, w->tmp);
        dataset_writer_abort(w);
        return -1;
    }
    char tmp[sizeof w->tmp], path[sizeof w->path];
    memcpy(tmp, w->tmp, sizeof tmp);
    memcpy(path, w->path, sizeof path);
    h5io_close_obj(NULL, w->d_items);
    h5io_close_obj(NULL, w->d_ts);
    h5io_close_obj(NULL, w->d_actions);
    w->d_items = w->d_ts = w->d_actions = -1;
    for (int i = 0; i < w->nfeat; i++) {
        h5io_close_obj(NULL, w->feat[i].d);
        w->feat[i].d = -1;
    }
    int rc = h5io_close(h), e = h->errnum;
    const int guarded = w->guarded;
    writer_free(w);
    if (rc) {
        unlink(tmp);
        if (guarded)
            tmpguard_end();
        return errorf(err, errlen, "%s: closing %s failed: %s", path, tmp,
                      e ? strerror(e) : "disk full?");
    }
    if (rename(tmp, path) != 0) {
        int e2 = errno;
        unlink(tmp);
        if (guarded)
            tmpguard_end();
        return errorf(err, errlen, "%s: cannot rename %s into place: %s", path, tmp, strerror(e2));
    }
    if (guarded)
        tmpguard_end();
    return 0;
}

/* --- features ------------------------------------------------------------------ */

/* The group path (created when missing); 0 or -1. */
static int ensure_group(struct dataset_writer *w, const char *path)
{
    if (h5io_exists(w->h.f, path))
        return 0;
    hid_t g = h5io_group(&w->h, w->h.f, path);
    if (g < 0)
        return -1;
    h5io_close_obj(&w->h, g);
    return w->h.failed ? -1 : 0;
}

/* The failure recorded by h5io, reported by the caller: errno's text. */
static const char *failure(struct dataset_writer *w)
{
    const int e = w->h.errnum;
    w->h.failed = 0;
    return e ? strerror(e) : "disk full?";
}

/* A new feature's slot, its name checked; NULL + err. */
static struct writer_feature *feature_add(struct dataset_writer *w, enum dataset_feat_kind kind,
                                          const char *name, int is_float, int64_t cardinality,
                                          char *err, size_t errlen)
{
    size_t n = strlen(name);
    int ok = n > 0 && n < DATASET_FEATURE_NAME && name[0] != '.';
    for (size_t i = 0; ok && i < n; i++)
        ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
             (name[i] >= '0' && name[i] <= '9') || strchr("_-.", name[i]);
    if (!ok) {
        errorf(err, errlen, "%s: feature name '%s': 1 to %d characters of A-Z a-z 0-9 _ - .",
               w->path, name, DATASET_FEATURE_NAME - 1);
        return NULL;
    }
    for (int i = 0; i < w->nfeat; i++)
        if (w->feat[i].kind == kind && !strcmp(w->feat[i].name, name)) {
            errorf(err, errlen, "%s: feature %s/%s written twice", w->path,
                   dataset_feat_kind_name(kind), name);
            return NULL;
        }
    if (w->nfeat == DATASET_MAX_FEATURES) {
        errorf(err, errlen, "%s: more than %d features", w->path, DATASET_MAX_FEATURES);
        return NULL;
    }
    if (is_float ? cardinality != 0 : cardinality < 1 || cardinality > DATASET_MAX_ROWS ||
                                          cardinality > INT32_MAX) {
        errorf(err, errlen, "%s: feature %s/%s: cardinality %lld (categorical: 1 .. 2^31 - 1; "
               "float: 0)", w->path, dataset_feat_kind_name(kind), name, (long long)cardinality);
        return NULL;
    }
    char group[16];
    snprintf(group, sizeof group, "/%s", dataset_feat_kind_name(kind));
    if (ensure_group(w, group)) {
        errorf(err, errlen, "%s: cannot create %s in %s: %s", w->path, group, w->tmp,
               failure(w));
        return NULL;
    }
    if (kind == DS_ITEMS && !strcmp(name, DATASET_RAW_LIST)) {
        errorf(err, errlen, "%s: an item feature cannot be named '%s' (the name of the item "
               "list of raw ids)", w->path, name);
        return NULL;
    }
    struct writer_feature *f = &w->feat[w->nfeat++];
    *f = (struct writer_feature){.kind = kind, .is_float = is_float, .d = -1};
    snprintf(f->name, sizeof f->name, "%s", name);
    return f;
}

int dataset_writer_event_feature(struct dataset_writer *w, const char *name, int is_float,
                                 int64_t cardinality, char *err, size_t errlen)
{
    if (w->events > 0 || w->users > 0)
        return errorf(err, errlen, "%s: internal: event feature '%s' declared after events",
                      w->path, name);
    struct writer_feature *f = feature_add(w, DS_EVENTS, name, is_float, cardinality, err, errlen);
    if (!f)
        return -1;
    char path[128];
    snprintf(path, sizeof path, "/events/%s", name);
    f->d = create_extendible(w, path, is_float ? H5T_IEEE_F32LE : H5T_STD_I32LE);
    if (f->d < 0 || (!is_float && h5io_attr_i64(&w->h, f->d, "cardinality", cardinality)) ||
        w->h.failed)
        return errorf(err, errlen, "%s: cannot create %s in %s: %s", w->path, path, w->tmp,
                      failure(w));
    return w->nfeat - 1;
}

int dataset_writer_append_feature(struct dataset_writer *w, int k, int64_t n,
                                  const int32_t *ints, const float *floats, char *err,
                                  size_t errlen)
{
    struct writer_feature *f = k >= 0 && k < w->nfeat ? &w->feat[k] : NULL;
    if (!f || f->kind != DS_EVENTS || (f->is_float ? !floats : !ints) || f->n + n > w->events)
        return errorf(err, errlen, "%s: internal: event feature %d appended inconsistently",
                      w->path, k);
    if (append_slab(w, f->d, f->is_float ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT32, f->n, n,
                    f->is_float ? (const void *)floats : (const void *)ints) ||
        w->h.failed)
        return errorf(err, errlen, "%s: write to %s failed: %s", w->path, w->tmp, failure(w));
    f->n += n;
    return 0;
}

int dataset_writer_feature(struct dataset_writer *w, enum dataset_feat_kind kind,
                           const char *name, int64_t cardinality, int64_t n, const int64_t *off,
                           const int32_t *ints, const float *floats, char *err, size_t errlen)
{
    const int is_float = floats != NULL;
    if (kind == DS_EVENTS || (off && is_float) || (!ints == !floats))
        return errorf(err, errlen, "%s: internal: feature '%s' written inconsistently", w->path,
                      name);
    struct writer_feature *f = feature_add(w, kind, name, is_float, cardinality, err, errlen);
    if (!f)
        return -1;
    f->n = n;
    char path[128], sub[160];
    snprintf(path, sizeof path, "/%s/%s", dataset_feat_kind_name(kind), name);
    int rc = 0;
    if (off) {
        hid_t g = h5io_group(&w->h, w->h.f, path);
        rc = g < 0 || h5io_attr_i64(&w->h, g, "cardinality", cardinality) ? -1 : 0;
        if (g >= 0)
            h5io_close_obj(&w->h, g);
        snprintf(sub, sizeof sub, "%s/offsets", path);
        rc = rc || write_whole(w, sub, H5T_STD_I64LE, off, n + 1);
        snprintf(sub, sizeof sub, "%s/values", path);
        rc = rc || write_whole_as(w, sub, H5T_STD_I32LE, H5T_NATIVE_INT32, ints, off[n]);
    } else {
        rc = write_whole_as(w, path, is_float ? H5T_IEEE_F32LE : H5T_STD_I32LE,
                            is_float ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT32,
                            is_float ? (const void *)floats : (const void *)ints, n);
        if (rc == 0 && !is_float) {
            hid_t d = h5io_dset_reopen(&w->h, w->h.f, path);
            rc = d < 0 || h5io_attr_i64(&w->h, d, "cardinality", cardinality) ? -1 : 0;
            if (d >= 0)
                h5io_close_obj(&w->h, d);
        }
    }
    if (rc || w->h.failed)
        return errorf(err, errlen, "%s: cannot write %s to %s: %s", w->path, path, w->tmp,
                      failure(w));
    return 0;
}

int dataset_writer_feature_map(struct dataset_writer *w, enum dataset_feat_kind kind,
                               const char *name, const char *const *s, const size_t *len,
                               int64_t n, char *err, size_t errlen)
{
    char group[64], path[160];
    snprintf(group, sizeof group, "/feature_maps/%s", dataset_feat_kind_name(kind));
    snprintf(path, sizeof path, "feature_maps/%s/%s", dataset_feat_kind_name(kind), name);
    if (ensure_group(w, "/feature_maps") || ensure_group(w, group))
        return errorf(err, errlen, "%s: cannot create %s in %s: %s", w->path, group, w->tmp,
                      failure(w));
    return dataset_writer_map_str(w, path, s, len, n, err, errlen);
}

int dataset_writer_raw_items(struct dataset_writer *w, const int64_t *ids, int64_t n, char *err,
                             size_t errlen)
{
    for (int64_t i = 0; i < n; i++)
        if (ids[i] <= 0 || (i > 0 && ids[i] <= ids[i - 1]))
            return errorf(err, errlen, "%s: internal: raw item id [%lld] = %lld is not positive "
                          "and above the previous one", w->path, (long long)i,
                          (long long)ids[i]);
    if (w->raw_items >= 0 || ensure_group(w, "/items") ||
        write_whole(w, "/items/" DATASET_RAW_LIST, H5T_STD_I64LE, ids, n))
        return errorf(err, errlen, "%s: cannot write /items/%s to %s%s", w->path,
                      DATASET_RAW_LIST, w->tmp, w->raw_items >= 0 ? " (written twice)" : "");
    w->raw_items = n;
    return 0;
}
