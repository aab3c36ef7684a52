/* import_write: the dataset written by 'freescale data import'; see
 * import_write.h. */
#include "tools/import_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "data/dataset.h"

#define WRITE_BATCH ((int64_t)1 << 20) /* events per dataset_writer_append */


/* The original ids of t in dense order (order [m] from import_ids_rank) as
 * /NAME (int64) or, for string ids, /NAME_str (strings). */
static int write_map(struct dataset_writer *w, const char *name, const struct import_ids *t,
                     const int32_t *order, int64_t m, char *err, size_t errlen)
{
    int rc;
    if (!t->strings) {
        int64_t *ids = xmalloc((size_t)(m ? m : 1) * sizeof *ids);
        for (int64_t r = 0; r < m; r++)
            ids[r] = t->ids[order[r]];
        rc = dataset_writer_map(w, name, ids, m, err, errlen);
        free(ids);
        return rc;
    }
    const char **s = xmalloc((size_t)(m ? m : 1) * sizeof *s);
    size_t *len = xmalloc((size_t)(m ? m : 1) * sizeof *len);
    for (int64_t r = 0; r < m; r++)
        s[r] = import_ids_str(t, order[r], &len[r]);
    char sname[64];
    snprintf(sname, sizeof sname, "%s_str", name);
    rc = dataset_writer_map_str(w, sname, s, len, m, err, errlen);
    free(s);
    free(len);
    return rc;
}

/* The event features' values of events perm[0 .. n) into ints / floats
 * and appended. */
static int append_event_features(struct dataset_writer *w, const struct import_events *ev,
                                 const int *slot, const int64_t *p, int64_t n, int32_t *ints,
                                 float *floats, char *err, size_t errlen)
{
    for (int c = 0; c < ev->nevf; c++) {
        const struct import_evfeat *f = &ev->evf[c];
        for (int64_t j = 0; j < n; j++)
            if (f->is_float)
                floats[j] = f->v[p[j]];
            else
                ints[j] = f->k[p[j]] < 0 ? 0 : f->vocab.dense[f->k[p[j]]];
        if (dataset_writer_append_feature(w, slot[c], n, ints, floats, err, errlen))
            return -1;
    }
    return 0;
}

/* Declare the event features (their vocabularies finished). */
static int declare_event_features(struct dataset_writer *w, const struct import_events *ev,
                                  int *slot, char *err, size_t errlen)
{
    for (int c = 0; c < ev->nevf; c++) {
        const struct import_evfeat *f = &ev->evf[c];
        slot[c] = dataset_writer_event_feature(w, f->name, f->is_float,
                                               f->is_float ? 0 : import_vocab_card(&f->vocab),
                                               err, errlen);
        if (slot[c] < 0 ||
            (!f->is_float && import_vocab_write_map(&f->vocab, w, DS_EVENTS, f->name, err,
                                                    errlen)))
            return -1;
    }
    return 0;
}

void import_write(const char *path, const struct import_events *ev, const int64_t *perm,
                  const int64_t *off, int64_t nu, const int32_t *irank, const int32_t *uorder,
                  const int32_t *iorder, int64_t ni, const struct import_features *feat,
                  const int64_t *iraw, const int64_t *uraw)
{
    int64_t cap = WRITE_BATCH;
    for (int64_t u = 0; u < nu; u++)
        if (off[u + 1] - off[u] > cap)
            cap = off[u + 1] - off[u];
    int64_t *items = xmalloc((size_t)cap * sizeof *items);
    int64_t *ts = ev->ts ? xmalloc((size_t)cap * sizeof *ts) : NULL;
    int32_t *act = ev->act ? xmalloc((size_t)cap * sizeof *act) : NULL;
    int64_t *lens = xmalloc((size_t)nu * sizeof *lens);
    char err[1024];
    struct dataset_writer *w = dataset_writer_open(path, ts != NULL, act != NULL, err, sizeof err);
    if (!w)
        fatal("%s", err);
    dataset_writer_guard(w, 1); /* no partial file left by a signal */
    int slot[IMPORT_MAX_EVCOLS];
    int32_t *fi = ev->nevf ? xmalloc((size_t)cap * sizeof *fi) : NULL;
    float *ff = ev->nevf ? xmalloc((size_t)cap * sizeof *ff) : NULL;
    if (declare_event_features(w, ev, slot, err, sizeof err)) {
        dataset_writer_abort(w);
        fatal("%s", err);
    }
    for (int64_t u0 = 0, u1; u0 < nu; u0 = u1) {
        for (u1 = u0; u1 < nu && (u1 == u0 || off[u1 + 1] - off[u0] <= cap); u1++)
            lens[u1 - u0] = off[u1 + 1] - off[u1];
        int64_t n = off[u1] - off[u0];
        const int64_t *p = perm + off[u0];
        for (int64_t j = 0; j < n; j++) {
            items[j] = iraw ? iraw[irank[ev->item[p[j]]]] : (int64_t)irank[ev->item[p[j]]] + 1;
            if (ts) ts[j] = ev->ts[p[j]];
            if (act) act[j] = ev->act[p[j]];
        }
        if (dataset_writer_append(w, u1 - u0, lens, items, ts, act, err, sizeof err) ||
            append_event_features(w, ev, slot, p, n, fi, ff, err, sizeof err)) {
            dataset_writer_abort(w);
            fatal("%s", err);
        }
    }
    /* raw ids: the item list instead of /item_map (string ids keep their
     * strings), each user's raw id in /user_map (and strings beside) */
    if ((iraw ? dataset_writer_raw_items(w, iraw, ni, err, sizeof err) ||
                    (ev->items.strings &&
                     write_map(w, "item_map", &ev->items, iorder, ni, err, sizeof err))
              : write_map(w, "item_map", &ev->items, iorder, ni, err, sizeof err)) ||
        (uraw && dataset_writer_map(w, "user_map", uraw, nu, err, sizeof err)) ||
        ((!uraw || ev->users.strings) &&
         write_map(w, "user_map", &ev->users, uorder, nu, err, sizeof err)) ||
        import_features_write(feat, w, err, sizeof err)) {
        dataset_writer_abort(w);
        fatal("%s", err);
    }
    if (dataset_writer_close(w, ni, err, sizeof err))
        fatal("%s", err);
    free(items);
    free(ts);
    free(act);
    free(lens);
    free(fi);
    free(ff);
}

