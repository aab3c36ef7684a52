/* window_files: a window's dataset from window files; see window_files.h. */
#include "data/window_files.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"

/* One event of the window: its user's raw id, where it is. */
struct wev {
    int64_t uid;
    struct stream_where at;
    int64_t item, ts;
    int32_t action;
};

static int cmp_wev(const void *x, const void *y)
{
    const struct wev *a = x, *b = y;
    if (a->uid != b->uid)
        return a->uid < b->uid ? -1 : 1;
    if (a->at.file != b->at.file)
        return a->at.file < b->at.file ? -1 : 1;
    return a->at.event < b->at.event ? -1 : a->at.event > b->at.event;
}

void window_items_free(struct window_items *wi)
{
    free(wi->ids);
    window_feats_free(&wi->feats);
    window_feats_free(&wi->ufeats);
    free(wi->uids);
    memset(wi, 0, sizeof *wi);
}

/* Merge file f's users (ds its dataset) and their user features' values
 * into wi, a later file's replacing an earlier one's. */
static int users_grow(const struct stream_file *f, const struct dataset *ds,
                      struct window_items *wi, char *err, size_t errlen)
{
    struct window_feats *wf = &wi->ufeats;
    const int nf = wf->n;
    const int64_t nu = ds->num_users, cap = wi->nu + nu + 1;
    double *fv = xmalloc((size_t)(nu ? nu : 1) * (size_t)nf * sizeof *fv);
    if (window_feats_read(wf, ds, fv, err, errlen)) {
        free(fv);
        return -1;
    }
    double *mv = xmalloc((size_t)cap * (size_t)nf * sizeof *mv);
    int64_t *m = xmalloc((size_t)cap * sizeof *m), n = 0, i = 0, j = 0;
    while (i < wi->nu || j < nu) {
        const int64_t a = i < wi->nu ? wi->uids[i] : INT64_MAX;
        const int64_t b = j < nu ? f->uid[j] : INT64_MAX;
        const int64_t row = j < nu ? (f->uidx ? f->uidx[j] : j) : 0; /* f's user */
        memcpy(mv + n * nf, b <= a ? fv + row * nf : wf->val + i * nf, (size_t)nf * sizeof *mv);
        m[n++] = a <= b ? a : b;
        i += a <= b;
        j += b <= a;
    }
    free(wi->uids);
    free(wf->val);
    free(fv);
    wi->uids = m;
    wi->nu = n;
    wf->val = mv;
    return 0;
}

/* The user features' values of the window's users [nu] (ascending raw
 * ids, each among wi->uids): out [nu, ufeats.n]. 0, or -1 + err. */
static int users_values(const struct window_items *wi, const int64_t *uids, int64_t nu,
                        double *out, const char *path, char *err, size_t errlen)
{
    const int nf = wi->ufeats.n;
    for (int64_t u = 0, i = 0; u < nu; u++) {
        while (i < wi->nu && wi->uids[i] < uids[u]) /* both ascending */
            i++;
        if (i >= wi->nu || wi->uids[i] != uids[u])
            return errorf(err, errlen, "%s: user %lld (raw id) is in none of the window files' "
                          "/user_map read so far: no value of its user features", path,
                          (long long)uids[u]);
        memcpy(out + u * nf, wi->ufeats.val + i * nf, (size_t)nf * sizeof *out);
    }
    return 0;
}

/* Merge the item lists of the files before t1 into wi (feats: and their
 * item features' values, a later file's replacing an earlier one's; the
 * users and their user features' values). */
static int items_grow(struct stream_files *s, struct window_items *wi, int64_t t1, int feats,
                      char *err, size_t errlen)
{
    struct window_feats *wf = &wi->feats;
    const int nf = feats ? wf->n : 0;
    for (; wi->upto < s->n && s->f[wi->upto].t_first < t1; wi->upto++) {
        const struct dataset *ds = stream_files_dataset(s, wi->upto, err, errlen);
        if (!ds)
            return -1;
        if (!ds->raw_ids)
            return errorf(err, errlen, "%s: not a raw-id dataset (window files need raw item "
                          "ids: data import --ids raw)", ds->path);
        const int64_t cap = wi->n + ds->num_items + 1;
        double *fv = nf ? xmalloc((size_t)(ds->num_items ? ds->num_items : 1) * (size_t)nf *
                                  sizeof *fv) : NULL;
        double *mv = nf ? xmalloc((size_t)cap * (size_t)nf * sizeof *mv) : NULL;
        if (nf && window_feats_read(wf, ds, fv, err, errlen)) {
            free(fv);
            free(mv);
            return -1;
        }
        int64_t *m = xmalloc((size_t)cap * sizeof *m), n = 0, i = 0, j = 0;
        while (i < wi->n || j < ds->num_items) {
            const int64_t a = i < wi->n ? wi->ids[i] : INT64_MAX;
            const int64_t b = j < ds->num_items ? ds->item_list[j] : INT64_MAX;
            if (nf) /* the newer file's values */
                memcpy(mv + n * nf, b <= a ? fv + j * nf : wf->val + i * nf,
                       (size_t)nf * sizeof *mv);
            m[n++] = a <= b ? a : b;
            i += a <= b;
            j += b <= a;
        }
        free(wi->ids);
        wi->ids = m;
        wi->n = n;
        if (nf) {
            free(wf->val);
            wf->val = mv;
            free(fv);
        }
        if (feats && wi->ufeats.n > 0 && users_grow(&s->f[wi->upto], ds, wi, err, errlen))
            return -1;
    }
    return 0;
}

int64_t window_files_distinct_items(struct stream_files *s, char *err, size_t errlen)
{
    struct window_items wi = {0};
    const int rc = items_grow(s, &wi, INT64_MAX, 0, err, errlen);
    const int64_t n = wi.n;
    window_items_free(&wi);
    stream_files_release(s, s->n); /* opened again when a window reads them */
    return rc ? -1 : n;
}

/* The events in [t0, t1) of every file that holds some, appended to *ev. */
static int window_events(struct stream_files *s, int64_t t0, int64_t t1, struct wev **ev,
                         int64_t *n, char *err, size_t errlen)
{
    int64_t cap = 0, rcap = 0, *items = NULL, *ts = NULL;
    int32_t *act = NULL;
    int rc = 0;
    *n = 0;
    for (int k = 0; k < s->n && rc == 0; k++) {
        const struct stream_file *f = &s->f[k];
        if (f->t_last < t0 || f->t_first >= t1)
            continue;
        const struct dataset *ds = stream_files_dataset(s, k, err, errlen);
        if (!ds) {
            rc = -1;
            break;
        }
        for (int64_t i = 0; i < ds->num_users && rc == 0; i++) {
            const int64_t u = f->uidx ? f->uidx[i] : i, L = dataset_length(ds, u);
            if (L > rcap) {
                rcap = L;
                items = xrealloc(items, (size_t)rcap * sizeof *items);
                ts = xrealloc(ts, (size_t)rcap * sizeof *ts);
                act = xrealloc(act, (size_t)rcap * sizeof *act);
            }
            rc = dataset_read_users(ds, u, u + 1, items, ts, f->has_actions ? act : NULL, err,
                                    errlen);
            for (int64_t e = 0; rc == 0 && e < L; e++) {
                if (ts[e] < t0 || ts[e] >= t1)
                    continue;
                if (*n == cap) {
                    cap = cap ? 2 * cap : 1024;
                    *ev = xrealloc(*ev, (size_t)cap * sizeof **ev);
                }
                (*ev)[(*n)++] = (struct wev){f->uid[i], {k, ds->offsets[u] + e}, items[e], ts[e],
                                             f->has_actions ? act[e] : 0};
            }
        }
    }
    free(items);
    free(ts);
    free(act);
    return rc;
}

int window_files_write(struct stream_files *s, struct window_items *wi, int64_t t0, int64_t t1,
                       int64_t hist, const char *path, int64_t *users, int64_t *events,
                       char *err, size_t errlen)
{
    *users = *events = 0;
    if (s->n < 1)
        return errorf(err, errlen, "%s: no window file", path);
    if (!wi->feats.ready &&
        (window_feats_open(&wi->feats, DS_ITEMS, wi->want_items, s, err, errlen) ||
         window_feats_open(&wi->ufeats, DS_USERS, wi->want_users, s, err, errlen)))
        return -1;
    const struct dataset *d0 = stream_files_dataset(s, 0, err, errlen);
    if (!d0 || items_grow(s, wi, t1, 1, err, errlen))
        return -1;
    /* the first file's event columns (names, kinds), kept while it is released */
    int nf = 0;
    char names[DATASET_MAX_FEATURES][DATASET_FEATURE_NAME];
    int is_float[DATASET_MAX_FEATURES];
    int64_t card[DATASET_MAX_FEATURES];
    for (int j = 0; j < d0->nfeat; j++)
        if (d0->feat[j].kind == DS_EVENTS && nf < DATASET_MAX_FEATURES) {
            memcpy(names[nf], d0->feat[j].name, DATASET_FEATURE_NAME);
            is_float[nf] = d0->feat[j].is_float;
            card[nf++] = d0->feat[j].cardinality;
        }
    const int acts = s->f[0].has_actions;
    struct wev *ev = NULL;
    int64_t ne;
    if (window_events(s, t0, t1, &ev, &ne, err, errlen)) {
        free(ev);
        return -1;
    }
    qsort(ev, (size_t)ne, sizeof *ev, cmp_wev);
    /* per user: history (oldest first), then its window events */
    int64_t nu = 0, cap = ne + 1, tot = 0;
    for (int64_t i = 0; i < ne; i++)
        nu += i == 0 || ev[i].uid != ev[i - 1].uid;
    int64_t *len = xmalloc((size_t)(nu ? nu : 1) * sizeof *len);
    int64_t *uids = xmalloc((size_t)(nu ? nu : 1) * sizeof *uids);
    int64_t *it = NULL, *ts = NULL;
    int32_t *ac = NULL;
    struct stream_where *wh = NULL;
    const int64_t H = hist > 0 ? hist : 0;
    int64_t *hi = xmalloc((size_t)(H ? H : 1) * sizeof *hi), *ht = xmalloc((size_t)(H ? H : 1) * sizeof *ht);
    int32_t *ha = xmalloc((size_t)(H ? H : 1) * sizeof *ha);
    struct stream_where *hw = xmalloc((size_t)(H ? H : 1) * sizeof *hw);
    int rc = 0;
    cap += nu * H;
    it = xmalloc((size_t)cap * sizeof *it);
    ts = xmalloc((size_t)cap * sizeof *ts);
    ac = xmalloc((size_t)cap * sizeof *ac);
    wh = xmalloc((size_t)cap * sizeof *wh);
    int64_t u = 0;
    for (int64_t i = 0, j; i < ne && rc == 0; i = j, u++) {
        for (j = i; j < ne && ev[j].uid == ev[i].uid; j++)
            ;
        int64_t h;
        rc = stream_files_history(s, ev[i].uid, t0, H, hi, ht, acts ? ha : NULL, hw, &h, err,
                                  errlen);
        for (int64_t k = h - 1; rc == 0 && k >= 0; k--, tot++) {
            it[tot] = hi[k];
            ts[tot] = ht[k];
            ac[tot] = acts ? ha[k] : 0;
            wh[tot] = hw[k];
        }
        for (int64_t k = i; rc == 0 && k < j; k++, tot++) {
            it[tot] = ev[k].item;
            ts[tot] = ev[k].ts;
            ac[tot] = ev[k].action;
            wh[tot] = ev[k].at;
        }
        uids[u] = ev[i].uid;
        len[u] = h + (j - i);
    }
    free(hi);
    free(ht);
    free(ha);
    free(hw);
    free(ev);
    struct dataset_writer *w = NULL;
    if (rc == 0) {
        w = dataset_writer_open(path, 1, acts, err, errlen);
        rc = w ? 0 : -1;
        if (w) /* not on signals: the trainer's stop handler owns them */
            dataset_writer_guard(w, 0);
    }
    int fk[DATASET_MAX_FEATURES];
    for (int j = 0; rc == 0 && j < nf; j++) {
        fk[j] = dataset_writer_event_feature(w, names[j], is_float[j], card[j], err, errlen);
        rc = fk[j] < 0 ? -1 : 0;
    }
    if (rc == 0)
        rc = dataset_writer_append(w, nu, len, it, ts, acts ? ac : NULL, err, errlen);
    float *fv = xmalloc((size_t)(tot ? tot : 1) * sizeof *fv);
    int32_t *iv = xmalloc((size_t)(tot ? tot : 1) * sizeof *iv);
    for (int j = 0; rc == 0 && j < nf; j++) {
        rc = stream_files_event_values(s, names[j], wh, tot, fv, err, errlen);
        for (int64_t e = 0; rc == 0 && !is_float[j] && e < tot; e++)
            iv[e] = (int32_t)fv[e];
        if (rc == 0)
            rc = dataset_writer_append_feature(w, fk[j], tot, is_float[j] ? NULL : iv,
                                               is_float[j] ? fv : NULL, err, errlen);
    }
    free(fv);
    free(iv);
    if (rc == 0)
        rc = dataset_writer_map(w, "user_map", uids, nu, err, errlen);
    if (rc == 0)
        rc = dataset_writer_raw_items(w, wi->ids, wi->n, err, errlen);
    if (rc == 0) /* /items/NAME: row i the item wi->ids[i] */
        rc = window_feats_write(&wi->feats, w, wi->feats.val, wi->n, err, errlen);
    if (rc == 0 && wi->ufeats.n > 0) { /* /users/NAME: row u the user uids[u] */
        double *uv = xmalloc((size_t)(nu ? nu : 1) * (size_t)wi->ufeats.n * sizeof *uv);
        rc = users_values(wi, uids, nu, uv, path, err, errlen) ||
             window_feats_write(&wi->ufeats, w, uv, nu, err, errlen) ? -1 : 0;
        free(uv);
    }
    if (rc == 0) {
        rc = dataset_writer_close(w, wi->n, err, errlen);
        w = NULL;
    }
    if (w)
        dataset_writer_abort(w);
    free(len);
    free(uids);
    free(it);
    free(ts);
    free(ac);
    free(wh);
    *users = nu;
    *events = ne;
    return rc;
}
