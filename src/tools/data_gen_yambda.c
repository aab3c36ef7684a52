/* data_gen_yambda: 'data gen --yambda'; the model in data_gen_yambda.h. */
#include "tools/data_gen_yambda.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/rng.h"
#include "base/zipf.h"
#include "cli/cli.h"
#include "data/dataset.h"
#include "data/h5io.h"
#include "eval/metrics_ranking.h"
#include "tools/data_gen_yambda_model.h"

/* Purposes of the random streams (third word of rng_key). */
enum { KEY_Y_USER = 0x79750000, KEY_Y_EVENTS = 0x79650000, KEY_Y_TRACK = 0x79740000,
       KEY_Y_ALBUM = 0x79610000, KEY_Y_ARTIST = 0x79720000, KEY_Y_ORDER = 0x796f0000 };

static const char *const y_type_name[Y_NTYPES + 1] = {"", "dislike", "like", "listen",
                                                        "undislike", "unlike"};





static void yb_push(struct ybuf *b, const struct yev *e)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 4096;
        b->e = xrealloc(b->e, (size_t)b->cap * sizeof *b->e);
    }
    b->e[b->n++] = *e;
}

/* The raw ids of data gen --stream (a bijection of [0, 2^63)). */
static int64_t raw63(uint64_t x)
{
    x = (x * UINT64_C(0x9E3779B97F4A7C15)) & Y_M63;
    x ^= x >> 29;
    x = (x * UINT64_C(0xBF58476D1CE4E5B9)) & Y_M63;
    x ^= x >> 32;
    return (int64_t)x;
}



static void catalog_init(struct catalog *k, const struct yopts *o)
{
    const uint64_t seed = (uint64_t)o->seed;
    const int64_t T = o->tracks;
    int32_t *album_artist = xmalloc((size_t)(o->albums + 1) * sizeof *album_artist);
    const int F = (int)o->factors;
    const double wa = sqrt(o->artist_share), we = sqrt(1 - o->artist_share);
    double *w = xmalloc((size_t)((o->artists + 1) * F) * sizeof *w);
    struct rng r;
    for (int64_t b = 1; b <= o->albums; b++) {
        rng_init(&r, rng_key(seed, (uint64_t)b, KEY_Y_ALBUM));
        album_artist[b] = 1 + (int32_t)rng_below(&r, (uint64_t)o->artists);
    }
    for (int64_t a = 1; a <= o->artists; a++) {
        rng_init(&r, rng_key(seed, (uint64_t)a, KEY_Y_ARTIST));
        for (int f = 0; f < F; f++)
            w[a * F + f] = rng_normal(&r);
    }
    k->album = xmalloc((size_t)(T + 1) * sizeof *k->album);
    k->artist = xmalloc((size_t)(T + 1) * sizeof *k->artist);
    k->q = xmalloc((size_t)((T + 1) * F) * sizeof *k->q);
    k->c = xmalloc((size_t)(T + 1) * sizeof *k->c);
    k->length = xmalloc((size_t)(T + 1) * sizeof *k->length);
    k->raw = xmalloc((size_t)(T + 1) * sizeof *k->raw);
    for (int64_t t = 1; t <= T; t++) {
        rng_init(&r, rng_key(seed, (uint64_t)t, KEY_Y_TRACK));
        k->album[t] = 1 + (int32_t)rng_below(&r, (uint64_t)o->albums);
        k->artist[t] = album_artist[k->album[t]];
        for (int f = 0; f < F; f++)
            k->q[t * F + f] = wa * w[k->artist[t] * F + f] + we * rng_normal(&r);
        k->c[t] = 0.5 * rng_normal(&r);
        k->length[t] = (float)floor(exp(5.3 + 0.3 * rng_normal(&r)) + 0.5);
        k->raw[t] = raw63((uint64_t)t);
    }
    k->rank0 = xmalloc((size_t)T * sizeof *k->rank0);
    for (int64_t i = 0; i < T; i++)
        k->rank0[i] = i + 1;
    rng_init(&r, rng_key(seed, UINT64_MAX, KEY_Y_ORDER));
    for (int64_t i = T - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below(&r, (uint64_t)i + 1), x = k->rank0[i];
        k->rank0[i] = k->rank0[j];
        k->rank0[j] = x;
    }
    k->aoff = xcalloc((size_t)o->artists + 2, sizeof *k->aoff);
    k->atrk = xmalloc((size_t)T * sizeof *k->atrk);
    for (int64_t t = 1; t <= T; t++)
        k->aoff[k->artist[t] + 1]++;
    for (int64_t a = 1; a <= o->artists; a++)
        k->aoff[a + 1] += k->aoff[a];
    int64_t *at = xmalloc((size_t)(o->artists + 2) * sizeof *at);
    memcpy(at, k->aoff, (size_t)(o->artists + 2) * sizeof *at);
    for (int64_t t = 1; t <= T; t++)
        k->atrk[at[k->artist[t]]++] = t;
    free(at);
    free(album_artist);
    k->w = w;
}

static void catalog_free(struct catalog *k)
{
    free(k->album);
    free(k->artist);
    free(k->q);
    free(k->c);
    free(k->length);
    free(k->raw);
    free(k->rank0);
    free(k->w);
    free(k->aoff);
    free(k->atrk);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Rows [0, n) of a pair array (key, value), sorted by key. */
static int cmp_pair(const void *a, const void *b) { return cmp_i64(a, b); }

/* A categorical item feature of the file's tracks: values (album or artist
 * numbers) numbered 1 .. K in ascending order among the tracks, the
 * numbers as the map. */
static int write_item_cat(struct dataset_writer *w, const char *name, const int64_t *tk, int64_t ni,
                          const int32_t *val, int64_t nval, char *err, size_t errlen)
{
    int32_t *dense = xcalloc((size_t)nval + 1, sizeof *dense);
    for (int64_t i = 0; i < ni; i++)
        dense[val[tk[i]]] = 1;
    int64_t K = 0;
    for (int64_t v = 1; v <= nval; v++)
        if (dense[v])
            dense[v] = (int32_t)++K;
    char **s = xmalloc((size_t)(K ? K : 1) * sizeof *s);
    size_t *len = xmalloc((size_t)(K ? K : 1) * sizeof *len);
    for (int64_t v = 1; v <= nval; v++)
        if (dense[v]) {
            char b[24];
            len[dense[v] - 1] = (size_t)snprintf(b, sizeof b, "%lld", (long long)v);
            s[dense[v] - 1] = xstrdup(b);
        }
    int32_t *ids = xmalloc((size_t)(ni ? ni : 1) * sizeof *ids);
    for (int64_t i = 0; i < ni; i++)
        ids[i] = dense[val[tk[i]]];
    int rc = dataset_writer_feature(w, DS_ITEMS, name, K + 1, ni, NULL, ids, NULL, err, errlen) ||
             dataset_writer_feature_map(w, DS_ITEMS, name, (const char *const *)s, len, K, err,
                                        errlen);
    for (int64_t i = 0; i < K; i++)
        free(s[i]);
    free(s);
    free(len);
    free(ids);
    free(dense);
    return rc ? -1 : 0;
}

static int write_event_map(struct dataset_writer *w, const char *name, const char *const *s,
                           int64_t n, char *err, size_t errlen)
{
    size_t len[Y_NTYPES];
    for (int64_t i = 0; i < n; i++)
        len[i] = strlen(s[i]);
    return dataset_writer_feature_map(w, DS_EVENTS, name, s, len, n, err, errlen);
}

/* User u's taste: factors p[F] and bias *a, from r (left at the next draw). */
static void user_taste(uint64_t seed, int F, int64_t u, struct rng *r, double *p, double *a)
{
    rng_init(r, rng_key(seed, (uint64_t)u, KEY_Y_USER));
    for (int f = 0; f < F; f++)
        p[f] = rng_normal(r);
    *a = 0.5 * rng_normal(r);
}

/* --planted-scores: the planted model's factors beside the events, for an
 * oracle: /planted_users [users, F + 1] (p_u, a_u) in the file's user
 * order, /planted_tracks [items, F + 1] (q_k, c_k) in /items/ids order,
 * /planted_artists [artists, F + 1] (w_a and 1 if artist a has tracks in
 * the catalog, else 0; row a - 1) and the attribute planted_taste (G). */
static void factors_write(const char *path, const struct yopts *o, const struct catalog *k,
                          const int64_t *uidx, int64_t nu, const int64_t *tk, int64_t ni)
{
    int64_t rows = nu > ni ? nu : ni;
    rows = rows > o->artists ? rows : o->artists;
    const int F = (int)o->factors;
    double *buf = xmalloc((size_t)((rows ? rows : 1) * (F + 1)) * sizeof *buf);
    struct h5io f;
    int bad = h5io_open_rw(&f, path, NULL, 0, NULL, NULL);
    if (!bad) {
        const struct h5io_layout lay = {0};
        struct rng r;
        for (int64_t i = 0; i < nu; i++)
            user_taste((uint64_t)o->seed, F, uidx[i], &r, buf + i * (F + 1),
                       buf + i * (F + 1) + F);
        hid_t d = h5io_dset(&f, f.f, "planted_users", H5T_IEEE_F64LE, nu, F + 1, &lay);
        bad = d < 0 || h5io_write_rows(&f, d, H5T_NATIVE_DOUBLE, 0, 1, nu, F + 1, buf);
        if (d >= 0)
            H5Dclose(d);
        for (int64_t i = 0; i < ni; i++) {
            memcpy(buf + i * (F + 1), k->q + tk[i] * F, F * sizeof *buf);
            buf[i * (F + 1) + F] = k->c[tk[i]];
        }
        if (!bad) {
            d = h5io_dset(&f, f.f, "planted_tracks", H5T_IEEE_F64LE, ni, F + 1, &lay);
            bad = d < 0 || h5io_write_rows(&f, d, H5T_NATIVE_DOUBLE, 0, 1, ni, F + 1, buf);
            if (d >= 0)
                H5Dclose(d);
        }
        for (int64_t a = 1; a <= o->artists && !bad; a++) {
            memcpy(buf + (a - 1) * (F + 1), k->w + a * F, F * sizeof *buf);
            buf[(a - 1) * (F + 1) + F] = k->aoff[a + 1] > k->aoff[a];
        }
        if (!bad) {
            d = h5io_dset(&f, f.f, "planted_artists", H5T_IEEE_F64LE, o->artists, F + 1, &lay);
            bad = d < 0 || h5io_write_rows(&f, d, H5T_NATIVE_DOUBLE, 0, 1, o->artists, F + 1, buf);
            if (d >= 0)
                H5Dclose(d);
        }
        bad = bad || h5io_attr_f64(&f, f.f, "planted_taste", o->taste);
        bad = h5io_close(&f) || bad;
    }
    free(buf);
    if (bad) {
        unlink(path);
        fatal("data gen --yambda: %s: cannot write the planted factors (%s; the file was "
              "removed)", path, f.desc[0] ? f.desc : "HDF5 error");
    }
}

/* Write one dataset of the events of b (user order) with raw ids. */
static void write_file(const char *path, const struct yopts *o, const struct catalog *k,
                       const struct ybuf *b, const int64_t *uraw, const int64_t *uidx)
{
    char err[4400];
    const size_t n1 = (size_t)(b->n ? b->n : 1);
    int64_t *lengths = xmalloc(n1 * sizeof *lengths), *umap = xmalloc(n1 * sizeof *umap);
    int64_t *items = xmalloc(n1 * sizeof *items), *ts = xmalloc(n1 * sizeof *ts);
    int64_t *pair = xmalloc(2 * n1 * sizeof *pair);
    int32_t *type = xmalloc(n1 * sizeof *type), *org = xmalloc(n1 * sizeof *org);
    float *ratio = xmalloc(n1 * sizeof *ratio), *len = xmalloc(n1 * sizeof *len);
    float *p = xmalloc(n1 * sizeof *p);
    int64_t nu = 0;
    for (int64_t e = 0; e < b->n; e++) {
        const struct yev *v = &b->e[e];
        if (e == 0 || v->pos != b->e[e - 1].pos) {
            umap[nu] = uraw[v->pos];
            lengths[nu++] = 0;
        }
        lengths[nu - 1]++;
        items[e] = k->raw[v->track];
        pair[2 * e] = items[e];
        pair[2 * e + 1] = v->track;
        ts[e] = v->ts;
        type[e] = v->type;
        org[e] = v->organic + 1;
        ratio[e] = v->ratio;
        len[e] = v->length;
        p[e] = v->p;
    }
    qsort(pair, (size_t)b->n, 2 * sizeof *pair, cmp_pair);
    int64_t ni = 0;
    for (int64_t e = 0; e < b->n; e++)
        if (ni == 0 || pair[2 * e] != pair[2 * (ni - 1)]) {
            pair[2 * ni] = pair[2 * e];
            pair[2 * ni + 1] = pair[2 * e + 1];
            ni++;
        }
    int64_t *ids = xmalloc((size_t)(ni ? ni : 1) * sizeof *ids);
    int64_t *tk = xmalloc((size_t)(ni ? ni : 1) * sizeof *tk);
    for (int64_t i = 0; i < ni; i++) {
        ids[i] = pair[2 * i];
        tk[i] = pair[2 * i + 1];
    }
    static const char *const org_name[2] = {"0", "1"};
    struct dataset_writer *w = dataset_writer_open(path, 1, 0, err, sizeof err);
    if (!w)
        fatal("%s", err);
    dataset_writer_guard(w, 1); /* no partial file left by a signal */
    int kt, ko, kr, kl, kp = -1;
    kt = dataset_writer_event_feature(w, "event_type", 0, Y_NTYPES + 1, err, sizeof err);
    if (kt < 0 ||
        (ko = dataset_writer_event_feature(w, "is_organic", 0, 3, err, sizeof err)) < 0 ||
        (kr = dataset_writer_event_feature(w, "played_ratio_pct", 1, 0, err, sizeof err)) < 0 ||
        (kl = dataset_writer_event_feature(w, "track_length_seconds", 1, 0, err, sizeof err)) <
            0 ||
        (o->scores &&
         (kp = dataset_writer_event_feature(w, "planted_p", 1, 0, err, sizeof err)) < 0) ||
        dataset_writer_append(w, nu, lengths, items, ts, NULL, err, sizeof err) ||
        dataset_writer_append_feature(w, kt, b->n, type, NULL, err, sizeof err) ||
        dataset_writer_append_feature(w, ko, b->n, org, NULL, err, sizeof err) ||
        dataset_writer_append_feature(w, kr, b->n, NULL, ratio, err, sizeof err) ||
        dataset_writer_append_feature(w, kl, b->n, NULL, len, err, sizeof err) ||
        (o->scores && dataset_writer_append_feature(w, kp, b->n, NULL, p, err, sizeof err)) ||
        write_event_map(w, "event_type", y_type_name + 1, Y_NTYPES, err, sizeof err) ||
        write_event_map(w, "is_organic", org_name, 2, err, sizeof err) ||
        write_item_cat(w, "artist", tk, ni, k->artist, o->artists, err, sizeof err) ||
        write_item_cat(w, "album", tk, ni, k->album, o->albums, err, sizeof err) ||
        dataset_writer_raw_items(w, ids, ni, err, sizeof err) ||
        dataset_writer_map(w, "user_map", umap, nu, err, sizeof err)) {
        dataset_writer_abort(w);
        fatal("%s", err);
    }
    if (dataset_writer_close(w, ni, err, sizeof err))
        fatal("%s", err);
    if (o->scores) {
        int64_t *users = umap; /* now each user's index (the model's key) */
        for (int64_t e = 0, i = 0; e < b->n; e++)
            if (e == 0 || b->e[e].pos != b->e[e - 1].pos)
                users[i++] = uidx[b->e[e].pos];
        factors_write(path, o, k, users, nu, tk, ni);
    }
    free(lengths);
    free(umap);
    free(items);
    free(ts);
    free(pair);
    free(type);
    free(org);
    free(ratio);
    free(len);
    free(p);
    free(ids);
    free(tk);
}

/* The optimum on the last day's events, as attributes of each file. */
struct optimum {
    double auc, logloss, ne, rate;
    int64_t n;
};

/* posterior: the posterior optimum's probabilities (pp), else the true (p). */
static void optimum_compute(const struct ybuf *last, int posterior, struct optimum *opt)
{
    const int64_t n = last->n;
    double *s = xmalloc((size_t)(n ? n : 1) * sizeof *s);
    float *y = xmalloc((size_t)(n ? n : 1) * sizeof *y);
    double ll = 0, pos = 0;
    for (int64_t i = 0; i < n; i++) {
        const struct yev *e = &last->e[i];
        s[i] = posterior ? e->pp : e->p;
        y[i] = e->ratio >= 50 ? 1.0f : 0.0f;
        ll -= y[i] ? log(s[i]) : log1p(-s[i]);
        pos += y[i];
    }
    opt->n = n;
    opt->rate = n ? pos / (double)n : NAN;
    opt->logloss = n ? ll / (double)n : NAN;
    const double h = opt->rate > 0 && opt->rate < 1
                         ? -(opt->rate * log(opt->rate) + (1 - opt->rate) * log1p(-opt->rate))
                         : NAN;
    opt->ne = opt->logloss / h;
    opt->auc = metrics_auc(n, s, y);
    free(s);
    free(y);
}

static void optimum_write(const char *path, const struct optimum *opt,
                          const struct optimum *post, int64_t day)
{
    struct h5io f;
    int bad = h5io_open_rw(&f, path, NULL, 0, NULL, NULL);
    if (!bad) {
        bad = h5io_attr_f64(&f, f.f, "planted_auc", opt->auc) ||
              h5io_attr_f64(&f, f.f, "planted_logloss", opt->logloss) ||
              h5io_attr_f64(&f, f.f, "planted_ne", opt->ne) ||
              h5io_attr_f64(&f, f.f, "planted_positive_rate", opt->rate) ||
              h5io_attr_f64(&f, f.f, "planted_posterior_auc", post->auc) ||
              h5io_attr_f64(&f, f.f, "planted_posterior_logloss", post->logloss) ||
              h5io_attr_f64(&f, f.f, "planted_posterior_ne", post->ne) ||
              h5io_attr_i64(&f, f.f, "planted_test_events", opt->n) ||
              h5io_attr_i64(&f, f.f, "planted_test_day", day) ||
              h5io_attr_str(&f, f.f, "planted_tasks", Y_TASKS);
        bad = h5io_close(&f) || bad;
    }
    if (bad) {
        unlink(path);
        fatal("data gen --yambda: %s: cannot write the planted_* attributes (%s; the file was "
              "removed)", path, f.desc[0] ? f.desc : "HDF5 error");
    }
}

/* --csv: the events as Yambda's multi_event columns; --items-csv: the
 * tracks the events use with their artist and album. */
static void write_csv(const char *path, const struct catalog *k, const struct ybuf *b,
                      const int64_t *uraw)
{
    FILE *f = fopen(path, "w");
    if (!f)
        fatal("data gen --yambda: cannot create %s: %s", path, strerror(errno));
    fprintf(f, "uid,item_id,timestamp,is_organic,played_ratio_pct,track_length_seconds,"
               "event_type\n");
    for (int64_t i = 0; i < b->n; i++) {
        const struct yev *e = &b->e[i];
        if (e->type == Y_LISTEN)
            fprintf(f, "%lld,%lld,%lld,%d,%.0f,%.0f,listen\n", (long long)uraw[e->pos],
                    (long long)k->raw[e->track], (long long)e->ts, (int)e->organic,
                    (double)e->ratio, (double)e->length);
        else
            fprintf(f, "%lld,%lld,%lld,%d,,,%s\n", (long long)uraw[e->pos],
                    (long long)k->raw[e->track], (long long)e->ts, (int)e->organic,
                    y_type_name[e->type]);
    }
    if (ferror(f) | fclose(f))
        fatal("data gen --yambda: cannot write %s: %s", path, strerror(errno));
}

static void write_items_csv(const char *path, const struct yopts *o, const struct catalog *k,
                            const struct ybuf *b)
{
    char *used = xcalloc((size_t)o->tracks + 1, 1);
    for (int64_t i = 0; i < b->n; i++)
        used[b->e[i].track] = 1;
    FILE *f = fopen(path, "w");
    if (!f)
        fatal("data gen --yambda: cannot create %s: %s", path, strerror(errno));
    fprintf(f, "item_id,artist,album\n");
    for (int64_t t = 1; t <= o->tracks; t++)
        if (used[t])
            fprintf(f, "%lld,%d,%d\n", (long long)k->raw[t], (int)k->artist[t], (int)k->album[t]);
    if (ferror(f) | fclose(f))
        fatal("data gen --yambda: cannot write %s: %s", path, strerror(errno));
    free(used);
}


/* One user's events, appended in time order to all (if -o or --csv) and to
 * their day's buffer (if --split-days; the last day's always). Returns
 * their number. */
static int64_t gen_user(const struct yopts *o, const struct catalog *k, const struct zipf *z,
                        int64_t u, int64_t pos, int64_t *ts, double *cdf, struct ybuf *all,
                        struct ybuf *day, struct ybuf *hist, int64_t *clamped)
{
    const uint64_t seed = (uint64_t)o->seed;
    struct rng r;
    const int F = (int)o->factors;
    double p_u[Y_F], a_u;
    user_taste(seed, F, u, &r, p_u, &a_u);
    const double x = exp(log(o->median) + o->sigma * rng_normal(&r));
    int64_t len = x < 1.5 ? 1 : (int64_t)floor(x + 0.5);
    if (!(x < (double)o->max_len + 0.5)) {
        len = o->max_len;
        (*clamped)++;
    }
    const int64_t steps = o->days * (Y_DAY / Y_STEP);
    rng_init(&r, rng_key(seed, (uint64_t)u, KEY_Y_EVENTS));
    for (int64_t i = 0; i < len; i++)
        ts[i] = Y_STEP * (int64_t)rng_below(&r, (uint64_t)steps);
    qsort(ts, (size_t)len, sizeof *ts, cmp_i64);
    const int64_t T = o->tracks, shift = (int64_t)floor(o->drift * (double)T + 0.5) % T;
    /* organic events: an artist by the user's taste, cdf over the artists
     * with tracks, P(a) ~ exp(p_u.w_a / sqrt F) */
    double tot = 0;
    for (int64_t a = 1; a <= o->artists; a++) {
        double dot = 0;
        for (int f = 0; f < F; f++)
            dot += p_u[f] * k->w[a * F + f];
        cdf[a] = tot += k->aoff[a + 1] > k->aoff[a] ? exp(dot / sqrt((double)F)) : 0.0;
    }
    struct ybuf *lastday = &day[o->days - 1];
    const int64_t first_last = lastday->n;
    hist->n = 0;
    for (int64_t i = 0; i < len; i++) {
        const int64_t d = ts[i] / Y_DAY;
        const int organic = rng_uniform(&r) < o->organic;
        int64_t t;
        if (organic) { /* the artist by taste, then one of their tracks uniformly */
            const double x = rng_uniform(&r) * tot;
            int64_t lo = 1, hi = o->artists;
            while (lo < hi) {
                const int64_t mid = lo + (hi - lo) / 2;
                if (cdf[mid] > x)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            while (k->aoff[lo + 1] == k->aoff[lo]) /* x at a step's edge: the next artist */
                lo = lo > 1 ? lo - 1 : o->artists;
            t = k->atrk[k->aoff[lo] + (int64_t)rng_below(&r, (uint64_t)(k->aoff[lo + 1] -
                                                                      k->aoff[lo]))];
        } else { /* recommended: by the day's popularity */
            const int64_t rank = zipf_sample(z, &r) - 1;
            t = k->rank0[(rank + (int64_t)(((unsigned __int128)d * (uint64_t)shift) %
                                           (uint64_t)T)) % T];
        }
        double dot = 0;
        for (int f = 0; f < F; f++)
            dot += p_u[f] * k->q[t * F + f];
        const double s = 0.3 + a_u + k->c[t] + o->taste * dot / sqrt((double)F);
        const double sig = sigmoid(s);
        const double pl = 0.04 * sig, pd = 0.012 * (1 - sig), pun = 0.003, pund = 0.001;
        struct yev e = {.ts = ts[i], .pos = pos, .track = (int32_t)t};
        const double v = rng_uniform(&r);
        e.type = v < pl ? Y_LIKE : v < pl + pd ? Y_DISLIKE : v < pl + pd + pun ? Y_UNLIKE
               : v < pl + pd + pun + pund ? Y_UNDISLIKE : Y_LISTEN;
        const double lu = rng_uniform(&r); /* drawn for every event: the streams stay aligned */
        e.organic = organic;
        if (e.type == Y_LISTEN) {
            const double l = log((lu + 0x1p-60) / (1 - lu + 0x1p-60));
            const double pct = floor(100.0 * sigmoid(s + l));
            e.ratio = (float)(pct > 100 ? 100 : pct);
            e.length = k->length[t];
        }
        e.p = (float)((1.0 - pl - pd - pun - pund) * sig);
        if (all)
            yb_push(all, &e);
        if (o->split_dir || d == o->days - 1) /* the last day: the optimum's */
            yb_push(&day[d], &e);
        if (d < o->days - 1)
            yb_push(hist, &e);
    }
    yambda_posterior(o, k, hist, lastday->e + first_last, lastday->n - first_last);
    return len;
}

static void yambda_run(const struct yopts *o)
{
    struct catalog k;
    catalog_init(&k, o);
    /* users in ascending raw id: the files' order */
    int64_t *pair = xmalloc((size_t)o->users * 2 * sizeof *pair);
    for (int64_t u = 0; u < o->users; u++) {
        pair[2 * u] = raw63((UINT64_C(1) << 62) + (uint64_t)u);
        pair[2 * u + 1] = u;
    }
    qsort(pair, (size_t)o->users, 2 * sizeof *pair, cmp_pair);
    int64_t *uraw = xmalloc((size_t)o->users * sizeof *uraw);
    int64_t *uidx = xmalloc((size_t)o->users * sizeof *uidx);
    for (int64_t p = 0; p < o->users; p++) {
        uraw[p] = pair[2 * p];
        uidx[p] = pair[2 * p + 1];
    }
    struct zipf z;
    zipf_init(&z, o->tracks, o->zipf_s);
    struct ybuf all = {0}, *day = xcalloc((size_t)o->days, sizeof *day);
    int64_t *ts = xmalloc((size_t)o->max_len * sizeof *ts), clamped = 0, events = 0;
    double *cdf = xmalloc((size_t)(o->artists + 1) * sizeof *cdf);
    struct ybuf hist = {0};
    for (int64_t p = 0; p < o->users; p++)
        events += gen_user(o, &k, &z, pair[2 * p + 1], p, ts, cdf,
                           (o->out || o->csv || o->items_csv) ? &all : NULL, day, &hist,
                           &clamped);
    free(hist.e);
    free(cdf);
    free(ts);
    free(pair);
    struct optimum opt, post;
    optimum_compute(&day[o->days - 1], 0, &opt);
    optimum_compute(&day[o->days - 1], 1, &post);
    char path[4200];
    if (o->split_dir)
        for (int64_t d = 0; d < o->days; d++) {
            snprintf(path, sizeof path, "%s/day-%04lld.h5", o->split_dir, (long long)d);
            if (day[d].n == 0) {
                log_warn("data gen --yambda: no events on day %lld: no %s", (long long)d, path);
                continue;
            }
            write_file(path, o, &k, &day[d], uraw, uidx);
            optimum_write(path, &opt, &post, o->days - 1);
        }
    if (o->out) {
        write_file(o->out, o, &k, &all, uraw, uidx);
        optimum_write(o->out, &opt, &post, o->days - 1);
    }
    if (o->csv)
        write_csv(o->csv, &k, &all, uraw);
    if (o->items_csv)
        write_items_csv(o->items_csv, o, &k, &all);
    if (clamped)
        log_warn("data gen --yambda: %lld users' lengths were above %lld and clamped to it",
                 (long long)clamped, (long long)o->max_len);
    log_info("data gen --yambda: %lld days, %lld users, %lld tracks (%lld albums, %lld artists), "
             "%lld events%s%s%s%s", (long long)o->days, (long long)o->users, (long long)o->tracks,
             (long long)o->albums, (long long)o->artists, (long long)events,
             o->out ? ": " : "", o->out ? o->out : "", o->split_dir ? ", one file a day in " : "",
             o->split_dir ? o->split_dir : "");
    log_info("data gen --yambda: planted optimum on day %lld (%lld events, listen_plus rate "
             "%.3f): AUC %.4f NE %.4f (logloss %.4f); with the users' taste from their history's "
             "posterior: AUC %.4f NE %.4f (logloss %.4f)", (long long)(o->days - 1),
             (long long)opt.n, opt.rate, opt.auc, opt.ne, opt.logloss, post.auc, post.ne,
             post.logloss);
    for (int64_t d = 0; d < o->days; d++)
        free(day[d].e);
    free(day);
    free(all.e);
    free(uraw);
    free(uidx);
    catalog_free(&k);
}

static void yambda_usage(FILE *f)
{
    fprintf(f,
            "usage: freescale data gen --yambda [options] (-o OUT.h5 | --split-days DIR | both)\n"
            "\n"
            "A deterministic synthetic stream shaped like Yambda (doc/data.md).\n"
            "  --days D             days, 1 .. %d (default 14)\n"
            "  --users U            users, 1 .. 2^28 (default 1000)\n"
            "  --tracks T           tracks, 1 .. 2^31 - 1 (default 4000)\n"
            "  --albums B           albums (default 400); each belongs to one artist\n"
            "  --artists A          artists (default 50)\n"
            "  --median-length M    median events of a user over the stream (default 100)\n"
            "  --length-sigma S     lognormal sigma of the users' lengths (default 1)\n"
            "  --max-length L       cap on a user's events (default 30 M)\n"
            "  --zipf S             track popularity: Zipf(S) over the day's ranking (default 1)\n"
            "  --drift X            the ranking rotates by round(X T) places a day (default 0.02)\n"
            "  --organic F          chance an event is organic (default 0.45)\n"
            "  --taste G            weight of the user x track factors in the planted model\n"
            "                       (default 2; 0: no taste, only biases)\n"
            "  --factors F          taste factors, 1 .. %d (default 2)\n"
            "  --artist-share X     share of a track's factors' variance from its artist\n"
            "                       (0 .. 1, default 1: the taste is for artists)\n"
            "  --seed N             random seed (default 1)\n"
            "  --planted-scores     /events/planted_p: each event's true listen_plus probability\n"
            "  -o, --output FILE    the whole stream in one dataset\n"
            "  --split-days DIR     one dataset per day: DIR/day-0000.h5 ... (created if missing)\n"
            "  --csv FILE           the events as Yambda's multi_event columns (CSV)\n"
            "  --items-csv FILE     the tracks' item_id, artist, album (CSV)\n",
            Y_MAX_DAYS, Y_F);
}

int data_gen_yambda_main(int argc, char **argv)
{
    struct yopts o = {.days = 14, .users = 1000, .tracks = 4000, .artists = 50, .albums = 400,
                      .max_len = -1, .seed = 1, .median = 100, .sigma = 1.0, .zipf_s = 1.0,
                      .drift = 0.02, .organic = 0.45, .taste = 2.0, .factors = 2,
                      .artist_share = 1.0};
    enum { O_YAMBDA = 256, O_DAYS, O_USERS, O_TRACKS, O_ARTISTS, O_ALBUMS, O_MEDIAN, O_SIGMA,
           O_MAXLEN, O_ZIPF, O_DRIFT, O_ORGANIC, O_TASTE, O_SEED, O_SCORES, O_SPLIT, O_CSV,
           O_ICSV, O_FACTORS, O_ASHARE };
    static const struct option longopts[] = {
        {"yambda", no_argument, NULL, O_YAMBDA},
        {"days", required_argument, NULL, O_DAYS},
        {"users", required_argument, NULL, O_USERS},
        {"tracks", required_argument, NULL, O_TRACKS},
        {"artists", required_argument, NULL, O_ARTISTS},
        {"albums", required_argument, NULL, O_ALBUMS},
        {"median-length", required_argument, NULL, O_MEDIAN},
        {"length-sigma", required_argument, NULL, O_SIGMA},
        {"max-length", required_argument, NULL, O_MAXLEN},
        {"zipf", required_argument, NULL, O_ZIPF},
        {"drift", required_argument, NULL, O_DRIFT},
        {"organic", required_argument, NULL, O_ORGANIC},
        {"taste", required_argument, NULL, O_TASTE},
        {"factors", required_argument, NULL, O_FACTORS},
        {"artist-share", required_argument, NULL, O_ASHARE},
        {"seed", required_argument, NULL, O_SEED},
        {"planted-scores", no_argument, NULL, O_SCORES},
        {"output", required_argument, NULL, 'o'},
        {"split-days", required_argument, NULL, O_SPLIT},
        {"csv", required_argument, NULL, O_CSV},
        {"items-csv", required_argument, NULL, O_ICSV},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case O_YAMBDA: break;
        case O_DAYS: o.days = cli_count("--days", optarg, 1, Y_MAX_DAYS); break;
        case O_USERS: o.users = cli_count("--users", optarg, 1, (int64_t)1 << 28); break;
        case O_TRACKS: o.tracks = cli_count("--tracks", optarg, 1, INT32_MAX); break;
        case O_ARTISTS: o.artists = cli_count("--artists", optarg, 1, INT32_MAX - 1); break;
        case O_ALBUMS: o.albums = cli_count("--albums", optarg, 1, INT32_MAX - 1); break;
        case O_MEDIAN: o.median = cli_number("--median-length", optarg, 1.0, 1e8); break;
        case O_SIGMA: o.sigma = cli_number("--length-sigma", optarg, 0.0, 5.0); break;
        case O_MAXLEN: o.max_len = cli_count("--max-length", optarg, 1, 100000000); break;
        case O_ZIPF: o.zipf_s = cli_number("--zipf", optarg, 0.0, 100.0); break;
        case O_DRIFT: o.drift = cli_number("--drift", optarg, 0.0, 1.0); break;
        case O_ORGANIC: o.organic = cli_number("--organic", optarg, 0.0, 1.0); break;
        case O_TASTE: o.taste = cli_number("--taste", optarg, 0.0, 100.0); break;
        case O_FACTORS: o.factors = cli_count("--factors", optarg, 1, Y_F); break;
        case O_ASHARE: o.artist_share = cli_number("--artist-share", optarg, 0.0, 1.0); break;
        case O_SEED: o.seed = cli_count("--seed", optarg, 0, INT64_MAX); break;
        case O_SCORES: o.scores = 1; break;
        case 'o': o.out = optarg; break;
        case O_SPLIT: o.split_dir = optarg; break;
        case O_CSV: o.csv = optarg; break;
        case O_ICSV: o.items_csv = optarg; break;
        case 'h': yambda_usage(stdout); return 0;
        case ':': fatal("data gen --yambda: option '%s' needs a value", argv[optind - 1]);
        default:
            fatal("data gen --yambda: unknown option '%s' (see 'freescale data gen --yambda "
                  "--help')", argv[optind - 1]);
        }
    }
    if (optind < argc)
        fatal("data gen --yambda: unexpected argument '%s'", argv[optind]);
    if ((!o.out || !*o.out) && (!o.split_dir || !*o.split_dir) && !o.csv)
        fatal("data gen --yambda: give -o OUT.h5, --split-days DIR or --csv FILE");
    if (o.max_len < 0) {
        const double cap = 30.0 * o.median;
        o.max_len = cap > 1e8 ? 100000000 : (int64_t)cap;
    }
    if (o.median > (double)o.max_len)
        fatal("data gen --yambda: --median-length %g is above --max-length %lld", o.median,
              (long long)o.max_len);
    if ((double)o.users * o.median * exp(o.sigma * o.sigma / 2) > 2e9)
        fatal("data gen --yambda: --users %lld x the mean length (median %g, sigma %g) is over "
              "2e9 events (this generator holds the stream in memory, 48 bytes an event)",
              (long long)o.users, o.median, o.sigma);
    if (o.split_dir && mkdir(o.split_dir, 0777) && errno != EEXIST)
        fatal("data gen --yambda: cannot create the directory %s: %s", o.split_dir,
              strerror(errno));
    double t0 = clock_seconds();
    yambda_run(&o);
    log_info("data gen --yambda: %.2f s", clock_seconds() - t0);
    return 0;
}
