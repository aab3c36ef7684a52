/* dataset_raw: datasets of raw item ids (version 3; dataset.h, doc/data.md).
 *
 * The item ids of the events are the imported ids themselves (positive
 * int64; string ids as their 64-bit hash), not 1 .. num_items; the
 * sorted list of them is /items/ids [num_items] (num_items counts the
 * distinct ids), the row of every /items/NAME feature; /user_map holds
 * each user's raw id (users stay dataset indexes 0 .. num_users - 1).
 * Every check names the file, the dataset and the first bad index. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "data/dataset.h"

#define RAW_PATH "/items/" DATASET_RAW_LIST

/* /items/ids read whole into ds->item_list: integers, 1-D, num_items,
 * positive, strictly ascending. */
static int read_item_list(struct dataset *ds, char *err, size_t errlen)
{
    const hid_t f = (hid_t)ds->file;
    if (!h5io_exists(f, "/items") || !h5io_exists(f, RAW_PATH))
        return errorf(err, errlen, "%s: version %d (raw item ids) but no %s: a raw dataset lists "
                      "its item ids, sorted, in %s [num_items]", ds->path, DATASET_VERSION_RAW,
                      RAW_PATH, RAW_PATH);
    struct h5io_info info;
    hid_t d = h5io_dset_describe(f, RAW_PATH, H5P_DEFAULT, &info);
    if (d < 0)
        return errorf(err, errlen, "%s: %s is not a readable dataset", ds->path, RAW_PATH);
    int rc = 0;
    if (!info.is_int)
        rc = errorf(err, errlen, "%s: %s has type %s, expected int64", ds->path, RAW_PATH,
                    info.type);
    else if (info.rank != 1 || info.dims[0] != ds->num_items)
        rc = errorf(err, errlen, "%s: %s has shape %s, expected [%lld] (num_items: the number "
                    "of distinct raw item ids)", ds->path, RAW_PATH, info.shape,
                    (long long)ds->num_items);
    else
        rc = dataset_h5_storage_check(d, ds->path, RAW_PATH, err, errlen);
    const int u64 = !info.it.is_signed && info.it.bytes == 8;
    int64_t *ids = NULL;
    if (rc == 0) {
        ids = xmalloc((size_t)ds->num_items * sizeof *ids);
        if (h5io_read_rows(NULL, d, u64 ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64, 0, 1,
                           ds->num_items, 0, ids))
            rc = errorf(err, errlen, "%s: cannot read %s (truncated or corrupt file?)",
                        ds->path, RAW_PATH);
    }
    h5io_close_obj(NULL, d);
    for (int64_t i = 0; rc == 0 && i < ds->num_items; i++) {
        if (ids[i] <= 0) /* uint64 beyond int64 reads negative */
            rc = errorf(err, errlen, "%s: %s[%lld] = %lld: raw item ids are positive (1 .. "
                        "2^63 - 1; 0 is padding)", ds->path, RAW_PATH, (long long)i,
                        (long long)ids[i]);
        else if (i > 0 && ids[i] <= ids[i - 1])
            rc = errorf(err, errlen, "%s: %s[%lld] = %lld after %lld: the item ids are sorted "
                        "ascending, each once", ds->path, RAW_PATH, (long long)i,
                        (long long)ids[i], (long long)ids[i - 1]);
    }
    if (rc) {
        free(ids);
        return -1;
    }
    ds->item_list = ids;
    return 0;
}

/* /user_map: present, every user's raw id, non-decreasing (users are in
 * ascending raw id; equal ones only where string ids' hashes collide). */
static int check_user_map(const struct dataset *ds, char *err, size_t errlen)
{
    if (!ds->has_user_map)
        return errorf(err, errlen, "%s: version %d (raw item ids) but no /user_map: a raw "
                      "dataset records each user's raw id in /user_map [num_users]", ds->path,
                      DATASET_VERSION_RAW);
    int64_t *m = dataset_read_map(ds, "user_map", err, errlen);
    if (!m)
        return -1;
    int rc = 0;
    for (int64_t u = 1; rc == 0 && u < ds->num_users; u++)
        if (m[u] < m[u - 1])
            rc = errorf(err, errlen, "%s: /user_map[%lld] = %lld after %lld: the users of a raw "
                        "dataset are in ascending raw id", ds->path, (long long)u,
                        (long long)m[u], (long long)m[u - 1]);
    free(m);
    return rc;
}

int dataset_raw_open(struct dataset *ds, char *err, size_t errlen)
{
    const hid_t f = (hid_t)ds->file;
    char ids[32] = "";
    if (h5io_has_attr(f, "ids") &&
        h5io_attr_read_str(f, ds->path, "ids", ids, sizeof ids, err, errlen))
        return -1;
    const int raw = ds->version == DATASET_VERSION_RAW;
    if (raw ? strcmp(ids, "raw") != 0 : ids[0] && strcmp(ids, "dense") != 0)
        return errorf(err, errlen, "%s: attribute ids = '%s' with version = %lld: version %d "
                      "has ids = 'raw', versions 1 and 2 dense ids (no ids attribute, or "
                      "'dense')", ds->path, ids[0] ? ids : "(none)", (long long)ds->version,
                      DATASET_VERSION_RAW);
    ds->raw_ids = raw;
    if (!raw)
        return 0;
    if (ds->has_item_map)
        return errorf(err, errlen, "%s: /item_map in a raw dataset: its item ids are the "
                      "original ones (/items/%s lists them)", ds->path, DATASET_RAW_LIST);
    return read_item_list(ds, err, errlen) || check_user_map(ds, err, errlen) ? -1 : 0;
}

int64_t dataset_raw_index(const struct dataset *ds, int64_t id)
{
    int64_t lo = 0, hi = ds->num_items; /* [lo, hi) */
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (ds->item_list[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ds->num_items && ds->item_list[lo] == id ? lo : -1;
}

void dataset_raw_numbers(const struct dataset *ds, int64_t *ids, int64_t n)
{
    for (int64_t i = 0; ds->raw_ids && i < n; i++) {
        if (ids[i] <= 0)
            continue;
        const int64_t r = dataset_raw_index(ds, ids[i]);
        if (r < 0)
            fatal("%s: item id %lld is not in %s (the dataset's item list)", ds->path,
                  (long long)ids[i], RAW_PATH);
        ids[i] = r + 1;
    }
}

int dataset_raw_check_items(const struct dataset *ds, int64_t e0, const int64_t *items,
                            int64_t n, char *err, size_t errlen)
{
    for (int64_t i = 0; i < n; i++) {
        if (i > 0 && items[i] == items[i - 1])
            continue;
        if (items[i] <= 0)
            return errorf(err, errlen, "%s: /item_ids[%lld] = %lld: raw item ids are positive "
                          "(1 .. 2^63 - 1; 0 is padding)", ds->path, (long long)(e0 + i),
                          (long long)items[i]);
        if (dataset_raw_index(ds, items[i]) < 0)
            return errorf(err, errlen, "%s: /item_ids[%lld] = %lld is not in %s (the "
                          "dataset's item list)", ds->path, (long long)(e0 + i),
                          (long long)items[i], RAW_PATH);
    }
    return 0;
}

int dataset_refuse_raw(const struct dataset *ds, int dynamic, char *err, size_t errlen)
{
    if (!ds->raw_ids || dynamic)
        return 0;
    return errorf(err, errlen, "%s holds raw item ids (data import --ids raw: %lld distinct "
                  "ids in %s, no 1 .. num_items vocabulary): the item table must be a dynamic "
                  "one keyed by id: set embedding.dynamic = on (doc/embedding.md), or import "
                  "the data without --ids raw (dense ids 1 .. N)", ds->path,
                  (long long)ds->num_items, RAW_PATH);
}
