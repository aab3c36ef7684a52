/* data_gen_stream: 'data gen --stream'; the model in data_gen_stream.h. */
#include "tools/data_gen_stream.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/rng.h"
#include "base/zipf.h"
#include "cli/cli.h"
#include "data/dataset.h"

/* Purposes of the random streams (third word of rng_key; the day above). */
enum { KEY_S_DAY = 0x73640000, KEY_S_LABEL = 0x736c0000, KEY_S_ORDER = 0x73646f72,
       KEY_S_LUSER = 0x736c75, KEY_S_LITEM = 0x736c69 };
#define PLANTED_F 4 /* factors of the label model (as data_gen_planted.h) */

#define S_T0 1577836800LL /* 2020-01-01T00:00:00Z: day 0 */
#define S_DAY 86400LL
#define S_MAX_DAYS 10000
#define S_M63 ((UINT64_C(1) << 63) - 1)

struct stream_opts {
    int64_t days, users, items, new_per_day, seed, len_lo, len_hi, file_days;
    double drift, taste, zipf_s, active;
    int actions, labels;
    const char *out, *split_dir;
};

/* The bijection of [0, 2^63) that makes raw ids (data_gen_stream.h). */
static int64_t raw63(uint64_t x)
{
    x = (x * UINT64_C(0x9E3779B97F4A7C15)) & S_M63;
    x ^= x >> 29;
    x = (x * UINT64_C(0xBF58476D1CE4E5B9)) & S_M63;
    x ^= x >> 32;
    return (int64_t)x;
}

static int64_t user_raw(int64_t u) { return raw63((UINT64_C(1) << 62) + (uint64_t)u); }

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* One event; a file's events in user order (pos: the user's position in
 * raw id order). */
struct sev {
    int64_t item, ts, pos;
    int32_t act;
    float like, rating;
};

struct evbuf {
    int64_t n, cap;
    struct sev *e;
};

static void ev_push(struct evbuf *b, const struct sev *e)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 4096;
        b->e = xrealloc(b->e, (size_t)b->cap * sizeof *b->e);
    }
    b->e[b->n++] = *e;
}

static void ev_free(struct evbuf *b)
{
    free(b->e);
    memset(b, 0, sizeof *b);
}

/* Write a raw-id dataset: events in user order (pos non-decreasing), the
 * users' raw ids by position (uraw), the items' ids sorted and once. */
static void write_file(const char *path, const struct stream_opts *o, const struct evbuf *b,
                       const int64_t *uraw)
{
    char err[4400];
    const size_t n1 = (size_t)(b->n ? b->n : 1);
    int64_t *lengths = xmalloc(n1 * sizeof *lengths), *umap = xmalloc(n1 * sizeof *umap);
    int64_t *items = xmalloc(n1 * sizeof *items), *ts = xmalloc(n1 * sizeof *ts);
    int64_t *ids = xmalloc(n1 * sizeof *ids);
    int32_t *act = xmalloc(n1 * sizeof *act);
    float *like = xmalloc(n1 * sizeof *like), *rating = xmalloc(n1 * sizeof *rating);
    int64_t nu = 0;
    for (int64_t e = 0; e < b->n; e++) {
        const struct sev *v = &b->e[e];
        if (e == 0 || v->pos != b->e[e - 1].pos) {
            umap[nu] = uraw[v->pos];
            lengths[nu++] = 0;
        }
        lengths[nu - 1]++;
        items[e] = ids[e] = v->item;
        ts[e] = v->ts;
        act[e] = v->act;
        like[e] = v->like;
        rating[e] = v->rating;
    }
    qsort(ids, (size_t)b->n, sizeof *ids, cmp_i64);
    int64_t ni = 0;
    for (int64_t e = 0; e < b->n; e++)
        if (ni == 0 || ids[e] != ids[ni - 1])
            ids[ni++] = ids[e];
    struct dataset_writer *w = dataset_writer_open(path, 1, o->actions, err, sizeof err);
    if (!w)
        fatal("%s", err);
    dataset_writer_guard(w, 1); /* no partial file left by a signal */
    int k_like = -1, k_rating = -1;
    if (o->labels && ((k_like = dataset_writer_event_feature(w, "like", 1, 0, err, sizeof err)) < 0 ||
                      (k_rating = dataset_writer_event_feature(w, "rating", 1, 0, err,
                                                               sizeof err)) < 0)) {
        dataset_writer_abort(w);
        fatal("%s", err);
    }
    if (dataset_writer_append(w, nu, lengths, items, ts, o->actions ? act : NULL, err,
                              sizeof err) ||
        (o->labels &&
         (dataset_writer_append_feature(w, k_like, b->n, NULL, like, err, sizeof err) ||
          dataset_writer_append_feature(w, k_rating, b->n, NULL, rating, err, sizeof err))) ||
        dataset_writer_raw_items(w, ids, ni, err, sizeof err) ||
        dataset_writer_map(w, "user_map", umap, nu, err, sizeof err)) {
        dataset_writer_abort(w);
        fatal("%s", err);
    }
    if (dataset_writer_close(w, ni, err, sizeof err))
        fatal("%s", err);
    free(lengths);
    free(umap);
    free(items);
    free(ts);
    free(ids);
    free(act);
    free(like);
    free(rating);
}

/* Stable counting sort of the events by user position (days stay in order). */
static void sort_by_user(struct evbuf *b, int64_t users)
{
    int64_t *start = xcalloc((size_t)users + 1, sizeof *start);
    for (int64_t e = 0; e < b->n; e++)
        start[b->e[e].pos + 1]++;
    for (int64_t u = 0; u < users; u++)
        start[u + 1] += start[u];
    struct evbuf s = {.n = b->n, .cap = b->n ? b->n : 1};
    s.e = xmalloc((size_t)s.cap * sizeof *s.e);
    for (int64_t e = 0; e < b->n; e++)
        s.e[start[b->e[e].pos]++] = b->e[e];
    free(start);
    ev_free(b);
    *b = s;
}

/* --labels: the planted model of data_gen_planted.h over the stream (item
 * factors by catalog number k, the previous item across days). */
static void label_item(uint64_t seed, int64_t k, double *q, double *c)
{
    struct rng r;
    rng_init(&r, rng_key(seed, (uint64_t)k, KEY_S_LITEM));
    for (int f = 0; f < PLANTED_F; f++)
        q[f] = rng_normal(&r);
    *c = 0.7 * rng_normal(&r);
}

/* like and rating of user (p_u, a_u) on item k after item prev (0: none). */
static void label_event(uint64_t seed, const double *p_u, double a_u, int64_t k, int64_t prev,
                        struct rng *r, struct sev *e)
{
    double q[PLANTED_F], qp[PLANTED_F], c, cp, pq = 0, pp = 0;
    label_item(seed, k, q, &c);
    if (prev)
        label_item(seed, prev, qp, &cp);
    for (int f = 0; f < PLANTED_F; f++) {
        pq += p_u[f] * q[f];
        pp += prev ? qp[f] * q[f] : 0.0;
    }
    const double s = -0.2 + a_u + c + 0.6 * pq / sqrt((double)PLANTED_F) +
                     0.6 * pp / PLANTED_F;
    e->like = rng_uniform(r) < 1.0 / (1.0 + exp(-s)) ? 1.0f : 0.0f;
    e->rating = (float)(3.0 + 0.8 * s + 0.5 * rng_normal(r));
}

/* The ranking of day d from yesterday's (rank[0 .. *n)), into next. */
static void next_ranking(const struct stream_opts *o, int64_t d, int64_t **rank, int64_t **next,
                         int64_t *n)
{
    int64_t r = *n ? (int64_t)floor(o->drift * (double)*n + 0.5) % *n : 0;
    int64_t at = 0;
    for (int64_t k = 0; k < o->new_per_day; k++)
        (*next)[at++] = o->items + (d - 1) * o->new_per_day + k + 1;
    memcpy(*next + at, *rank + r, (size_t)(*n - r) * sizeof **next);
    memcpy(*next + at + *n - r, *rank, (size_t)r * sizeof **next);
    *n += o->new_per_day;
    int64_t *t = *rank;
    *rank = *next;
    *next = t;
}

static int cmp_pair(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

static int cmp_ts(const void *a, const void *b) { return cmp_i64(a, b); }

static void stream_run(const struct stream_opts *o)
{
    const int64_t total_items = o->items + (o->days - 1) * o->new_per_day;
    int64_t n_events = 0; /* every day's, whether or not -o keeps them all */
    /* users in ascending raw id: the files' order */
    int64_t *pair = xmalloc((size_t)o->users * 2 * sizeof *pair);
    for (int64_t u = 0; u < o->users; u++) {
        pair[2 * u] = user_raw(u);
        pair[2 * u + 1] = u;
    }
    qsort(pair, (size_t)o->users, 2 * sizeof *pair, cmp_pair);
    int64_t *uraw = xmalloc((size_t)o->users * sizeof *uraw);
    int64_t *uidx = xmalloc((size_t)o->users * sizeof *uidx);
    for (int64_t p = 0; p < o->users; p++) {
        uraw[p] = pair[2 * p];
        uidx[p] = pair[2 * p + 1];
    }
    free(pair);
    /* day 0's ranking: a seeded shuffle of 1 .. I */
    int64_t *rank = xmalloc((size_t)total_items * sizeof *rank);
    int64_t *next = xmalloc((size_t)total_items * sizeof *next);
    int64_t n = o->items;
    for (int64_t k = 0; k < n; k++)
        rank[k] = k + 1;
    struct rng r;
    rng_init(&r, rng_key((uint64_t)o->seed, UINT64_MAX, KEY_S_ORDER));
    for (int64_t k = n - 1; k > 0; k--) {
        int64_t j = (int64_t)rng_below(&r, (uint64_t)k + 1), t = rank[k];
        rank[k] = rank[j];
        rank[j] = t;
    }
    struct evbuf all = {0}, day = {0};
    int64_t *ts = xmalloc((size_t)o->len_hi * sizeof *ts);
    int64_t *prev = o->labels ? xcalloc((size_t)o->users, sizeof *prev) : NULL;
    char path[4200];
    for (int64_t d = 0; d < o->days; d++) {
        if (d > 0)
            next_ranking(o, d, &rank, &next, &n);
        struct zipf z;
        zipf_init(&z, n, o->zipf_s);
        if (d % o->file_days == 0)
            day.n = 0;
        for (int64_t p = 0; p < o->users; p++) {
            rng_init(&r, rng_key((uint64_t)o->seed, (uint64_t)uidx[p], KEY_S_DAY + (uint64_t)d));
            if (!(rng_uniform(&r) < o->active))
                continue;
            int64_t len = o->len_lo + (int64_t)rng_below(&r, (uint64_t)(o->len_hi - o->len_lo) + 1);
            for (int64_t i = 0; i < len; i++)
                ts[i] = S_T0 + d * S_DAY + (int64_t)rng_below(&r, S_DAY);
            qsort(ts, (size_t)len, sizeof *ts, cmp_ts);
            double p_u[PLANTED_F], a_u = 0;
            struct rng rl;
            if (o->labels) {
                rng_init(&rl, rng_key((uint64_t)o->seed, (uint64_t)uidx[p], KEY_S_LUSER));
                for (int f = 0; f < PLANTED_F; f++)
                    p_u[f] = rng_normal(&rl);
                a_u = 0.5 * rng_normal(&rl);
                if (o->taste > 0) { /* --taste-drift: towards a second draw */
                    const double th = o->taste * (double)d, cs = cos(th), sn = sin(th);
                    for (int f = 0; f < PLANTED_F; f++)
                        p_u[f] = cs * p_u[f] + sn * rng_normal(&rl);
                    a_u = cs * a_u + sn * 0.5 * rng_normal(&rl);
                }
                rng_init(&rl, rng_key((uint64_t)o->seed, (uint64_t)uidx[p],
                                      KEY_S_LABEL + (uint64_t)d));
            }
            for (int64_t i = 0; i < len; i++) {
                const int64_t k = rank[zipf_sample(&z, &r) - 1];
                struct sev e = {raw63((uint64_t)k), ts[i], p, 1 + (int32_t)rng_below(&r, 5), 0, 0};
                if (o->labels) {
                    label_event((uint64_t)o->seed, p_u, a_u, k, prev[p], &rl, &e);
                    prev[p] = k;
                }
                ev_push(&day, &e);
                n_events++;
                if (o->out)
                    ev_push(&all, &e);
            }
        }
        if (!o->split_dir || ((d + 1) % o->file_days && d + 1 < o->days))
            continue; /* the file's days are not all there */
        const int64_t d0 = d - d % o->file_days; /* its first day: its name */
        snprintf(path, sizeof path, "%s/day-%04lld.h5", o->split_dir, (long long)d0);
        if (day.n > 0) {
            if (o->file_days > 1)
                sort_by_user(&day, o->users);
            write_file(path, o, &day, uraw);
        } else
            log_warn("data gen --stream: no events on days %lld .. %lld: no %s", (long long)d0,
                     (long long)d, path);
    }
    free(ts);
    free(prev);
    ev_free(&day);
    free(rank);
    free(next);
    if (o->out) {
        if (all.n == 0)
            fatal("data gen --stream: no events (raise --active or --users)");
        sort_by_user(&all, o->users);
        write_file(o->out, o, &all, uraw);
    }
    log_info("data gen --stream: %lld days, %lld users, %lld items (%lld + %lld a day), "
             "drift %g, taste drift %g, %lld events%s%s%s%s", (long long)o->days,
             (long long)o->users, (long long)total_items, (long long)o->items,
             (long long)o->new_per_day, o->drift, o->taste,
             (long long)n_events, o->out ? ": " : "", o->out ? o->out : "",
             o->split_dir ? ", one file a day in " : "", o->split_dir ? o->split_dir : "");
    ev_free(&all);
    free(uraw);
    free(uidx);
}

static void stream_usage(FILE *f)
{
    fprintf(f,
            "usage: freescale data gen --stream --days D --users U --items I [options]\n"
            "                          (-o OUT.h5 | --split-days DIR | both)\n"
            "\n"
            "A deterministic synthetic stream of D days with raw ids (doc/data.md).\n"
            "  --days D               days, 1 .. %d\n"
            "  --users U              users, 1 .. 2^28\n"
            "  --items I              items on day 0, >= 1\n"
            "  --new-items-per-day N  new items each day from day 1, at the top of the\n"
            "                         popularity ranking (default 0)\n"
            "  --drift X              each day the ranking rotates by round(X n): its\n"
            "                         X n most popular items become the least popular\n"
            "                         (0 .. 1, default 0)\n"
            "  --zipf S               popularity exponent over the day's ranking (default 1)\n"
            "  --active F             chance a user is active on a day (default 0.5)\n"
            "  --per-day A,B          events of an active user on a day, uniform (default 1,8)\n"
            "  --actions              write /actions (uniform 1..5)\n"
            "  --labels               /events/like (0/1) and /events/rating (float) from the\n"
            "                         planted model of --labels planted (doc/ranking.md),\n"
            "                         the previous item taken across days\n"
            "  --taste-drift X        with --labels: a user's factors and bias on day d are\n"
            "                         cos(X d) times day 0's plus sin(X d) times a second\n"
            "                         draw (X radians a day, 0 .. 1, default 0)\n"
            "  --seed N               random seed (default 1)\n"
            "  -o, --output FILE      the whole stream in one dataset\n"
            "  --split-days DIR       one dataset per day: DIR/day-0000.h5 ... (DIR is\n"
            "                         created if missing)\n"
            "  --file-days K          with --split-days: K days a file, named by its first\n"
            "                         day (day-0000.h5, day-000K.h5, ...; default 1)\n",
            S_MAX_DAYS);
}

int data_gen_stream_main(int argc, char **argv)
{
    struct stream_opts o = {.days = -1, .users = -1, .items = -1, .seed = 1, .len_lo = 1,
                            .len_hi = 8, .zipf_s = 1.0, .active = 0.5, .file_days = 1};
    enum { O_STREAM = 256, O_DAYS, O_USERS, O_ITEMS, O_NEW, O_DRIFT, O_ZIPF, O_ACTIVE, O_PERDAY,
           O_ACTIONS, O_SEED, O_SPLIT, O_FILEDAYS, O_LABELS, O_TASTE };
    static const struct option longopts[] = {
        {"stream", no_argument, NULL, O_STREAM},
        {"days", required_argument, NULL, O_DAYS},
        {"users", required_argument, NULL, O_USERS},
        {"items", required_argument, NULL, O_ITEMS},
        {"new-items-per-day", required_argument, NULL, O_NEW},
        {"drift", required_argument, NULL, O_DRIFT},
        {"zipf", required_argument, NULL, O_ZIPF},
        {"active", required_argument, NULL, O_ACTIVE},
        {"per-day", required_argument, NULL, O_PERDAY},
        {"actions", no_argument, NULL, O_ACTIONS},
        {"labels", no_argument, NULL, O_LABELS},
        {"taste-drift", required_argument, NULL, O_TASTE},
        {"seed", required_argument, NULL, O_SEED},
        {"output", required_argument, NULL, 'o'},
        {"split-days", required_argument, NULL, O_SPLIT},
        {"file-days", required_argument, NULL, O_FILEDAYS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 0;
    opterr = 0;
    int c;
    double v[2];
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case O_STREAM: break;
        case O_DAYS: o.days = cli_count("--days", optarg, 1, S_MAX_DAYS); break;
        case O_USERS: o.users = cli_count("--users", optarg, 1, (int64_t)1 << 28); break;
        case O_ITEMS: o.items = cli_count("--items", optarg, 1, (int64_t)1 << 40); break;
        case O_NEW: o.new_per_day = cli_count("--new-items-per-day", optarg, 0, (int64_t)1 << 32);
            break;
        case O_DRIFT: o.drift = cli_number("--drift", optarg, 0.0, 1.0); break;
        case O_ZIPF: o.zipf_s = cli_number("--zipf", optarg, 0.0, 100.0); break;
        case O_ACTIVE: o.active = cli_number("--active", optarg, 0.0, 1.0); break;
        case O_PERDAY:
            if (cli_numbers("--per-day", optarg, v, 2) != 2 || v[0] != floor(v[0]) ||
                v[1] != floor(v[1]) || v[0] < 1 || v[1] < v[0] || v[1] > 1e6)
                fatal("--per-day: '%s' is not A,B with whole numbers 1 <= A <= B <= 1e6", optarg);
            o.len_lo = (int64_t)v[0];
            o.len_hi = (int64_t)v[1];
            break;
        case O_ACTIONS: o.actions = 1; break;
        case O_LABELS: o.labels = 1; break;
        case O_TASTE: o.taste = cli_number("--taste-drift", optarg, 0.0, 1.0); break;
        case O_SEED: o.seed = cli_count("--seed", optarg, 0, INT64_MAX); break;
        case 'o': o.out = optarg; break;
        case O_SPLIT: o.split_dir = optarg; break;
        case O_FILEDAYS: o.file_days = cli_count("--file-days", optarg, 1, S_MAX_DAYS); break;
        case 'h': stream_usage(stdout); return 0;
        case ':': fatal("data gen --stream: option '%s' needs a value", argv[optind - 1]);
        default:
            fatal("data gen --stream: unknown option '%s' (see 'freescale data gen --stream "
                  "--help')", argv[optind - 1]);
        }
    }
    if (optind < argc)
        fatal("data gen --stream: unexpected argument '%s'", argv[optind]);
    if (o.days < 0 || o.users < 0 || o.items < 0)
        fatal("data gen --stream: --days, --users and --items are required");
    if ((!o.out || !*o.out) && (!o.split_dir || !*o.split_dir))
        fatal("data gen --stream: give -o OUT.h5, --split-days DIR or both");
    if (o.items + (o.days - 1) * o.new_per_day > ((int64_t)1 << 40))
        fatal("data gen --stream: --items %lld + (--days - 1) x --new-items-per-day %lld is "
              "beyond 2^40 items", (long long)o.items, (long long)o.new_per_day);
    if (o.taste > 0 && !o.labels)
        fatal("data gen --stream: --taste-drift drifts the labels' users: it needs --labels");
    if (o.file_days > 1 && !o.split_dir)
        fatal("data gen --stream: --file-days needs --split-days DIR");
    if (o.split_dir && mkdir(o.split_dir, 0777) && errno != EEXIST)
        fatal("data gen --stream: cannot create the directory %s: %s", o.split_dir,
              strerror(errno));
    double t0 = clock_seconds();
    stream_run(&o);
    log_info("data gen --stream: %.2f s", clock_seconds() - t0);
    return 0;
}
