/* data_gen: 'freescale data gen', deterministic synthetic datasets.
 *
 *   freescale data gen --users N --items N --length DIST -o OUT.h5
 *                      [--zipf S] [--seed N] [--timestamps] [--actions]
 *                      [--max-length L] [--chunk-events N]
 *                      [--item-feature NAME:CARD[:K]] [--user-feature ...]
 *                      [--event-feature NAME:CARD]  (data_gen_feat.h)
 *                      [--labels planted[:K]]       (data_gen_planted.h)
 *
 * Every random choice is keyed by (seed, user, purpose) (rng.h), so the
 * output is a function of the options only: not of the chunk size, nor of
 * whether timestamps or actions are also written. Events are generated and
 * appended in chunks of about --chunk-events, so memory is bounded by the
 * chunk plus the writer's offsets (8 bytes per user).
 *
 * Model (the format of doc/data.md):
 *   length    drawn from DIST, rounded to the nearest integer, clamped to
 *             [1, --max-length] (clamped draws are counted and reported);
 *   items     popularity rank ~ Zipf(S) over 1..N (zipf.h), mapped to an item
 *             id by the bijection id = ((rank - 1) * A + B) mod N + 1 with
 *             gcd(A, N) = 1 and A, B drawn from the seed, so the popular
 *             items are spread over the id range;
 *   times     a start uniform in 2020 plus exponential gaps (mean 1 hour),
 *             floored to whole seconds: non-decreasing per user;
 *   actions   uniform in 1..5 (a rating-like int32). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/clock.h"
#include "cli/cli.h"
#include "tools/data_tools.h"
#include "data/dataset.h"
#include "base/log.h"
#include "base/rng.h"
#include "base/zipf.h"
#include "tools/data_gen_feat.h"
#include "tools/data_gen_planted.h"
#include "tools/data_gen_stream.h"
#include "tools/data_gen_yambda.h"

/* Purposes of the random streams (third word of rng_key). */
enum { KEY_LENGTH = 1, KEY_ITEMS = 2, KEY_TIMES = 3, KEY_ACTIONS = 4, KEY_MAP = 5 };

#define GEN_T0 1577836800    /* 2020-01-01T00:00:00Z */
#define GEN_T_SPAN 31536000  /* start times spread over a year */
#define GEN_MEAN_GAP 3600.0  /* seconds between a user's events, on average */
#define GEN_MAX_LENGTH 1000000000LL /* hard limit on one user's length */

/* --- length distributions ---------------------------------------------- */

enum len_kind { LEN_FIXED, LEN_UNIFORM, LEN_LOGNORMAL, LEN_PARETO, LEN_FROM };

struct len_dist {
    enum len_kind kind;
    double a, b;    /* fixed: a; uniform: [a, b]; lognormal: mu, sigma; pareto: xm, alpha */
    int64_t *pool;  /* from: the non-empty lengths of the source, [pool_n] */
    int64_t pool_n;
    int64_t lo_clamped, hi_clamped; /* draws clamped up to 1 / down to max */
};

/* Parse the number list after "name:" of --length; exactly `want` numbers. */
static void len_args(const char *text, const char *args, double *out, int want)
{
    int n = cli_numbers("--length", args, out, want);
    if (n != want)
        fatal("--length: '%s' needs %d number%s after the ':'", text, want, want > 1 ? "s" : "");
}

static int64_t len_whole(const char *text, double v, const char *what)
{
    if (v != floor(v) || v < 1 || v > (double)GEN_MAX_LENGTH)
        fatal("--length: '%s': %s must be a whole number in [1, %lld]", text, what,
              (long long)GEN_MAX_LENGTH);
    return (int64_t)v;
}

/* Read the lengths of a dataset's users into the pool (empty users skipped). */
static void len_load_pool(struct len_dist *d, const char *text, const char *path)
{
    struct dataset ds;
    char err[4400];
    if (dataset_open(&ds, path, err, sizeof err))
        fatal("--length '%s': %s", text, err);
    d->pool = xmalloc((size_t)(ds.num_users ? ds.num_users : 1) * sizeof *d->pool);
    d->pool_n = 0;
    for (int64_t u = 0; u < ds.num_users; u++)
        if (dataset_length(&ds, u) > 0)
            d->pool[d->pool_n++] = dataset_length(&ds, u);
    dataset_close(&ds);
    if (d->pool_n == 0)
        fatal("--length '%s': %s has no user with events", text, path);
}

/* fixed:L | uniform:A,B | lognormal:MU,SIGMA | pareto:XM,ALPHA | from:FILE.h5 */
static void len_parse(struct len_dist *d, const char *text)
{
    memset(d, 0, sizeof *d);
    const char *colon = strchr(text, ':');
    if (!colon)
        fatal("--length: '%s' is not a distribution (expected fixed:L, uniform:A,B, "
              "lognormal:MU,SIGMA, pareto:XM,ALPHA or from:FILE.h5)", text);
    size_t nl = (size_t)(colon - text);
    const char *args = colon + 1;
    double v[2];
    if (nl == 5 && !strncmp(text, "fixed", nl)) {
        d->kind = LEN_FIXED;
        len_args(text, args, v, 1);
        d->a = (double)len_whole(text, v[0], "L");
    } else if (nl == 7 && !strncmp(text, "uniform", nl)) {
        d->kind = LEN_UNIFORM;
        len_args(text, args, v, 2);
        d->a = (double)len_whole(text, v[0], "A");
        d->b = (double)len_whole(text, v[1], "B");
        if (d->a > d->b)
            fatal("--length: '%s': A must be <= B", text);
    } else if (nl == 9 && !strncmp(text, "lognormal", nl)) {
        d->kind = LEN_LOGNORMAL;
        len_args(text, args, v, 2);
        if (fabs(v[0]) > 50 || v[1] < 0 || v[1] > 20)
            fatal("--length: '%s': need |MU| <= 50 and 0 <= SIGMA <= 20", text);
        d->a = v[0];
        d->b = v[1];
    } else if (nl == 6 && !strncmp(text, "pareto", nl)) {
        d->kind = LEN_PARETO;
        len_args(text, args, v, 2);
        if (!(v[0] > 0) || !(v[1] > 0))
            fatal("--length: '%s': need XM > 0 and ALPHA > 0", text);
        d->a = v[0];
        d->b = v[1];
    } else if (nl == 4 && !strncmp(text, "from", nl)) {
        d->kind = LEN_FROM;
        if (!*args)
            fatal("--length: '%s' needs a file name after 'from:'", text);
        len_load_pool(d, text, args);
    } else {
        fatal("--length: unknown distribution '%.*s' in '%s' (expected fixed, uniform, "
              "lognormal, pareto or from)", (int)nl, text, text);
    }
}

/* Strict check against --max-length where the distribution's range is known. */
static void len_check_max(const struct len_dist *d, const char *text, int64_t max_len)
{
    double top = d->kind == LEN_FIXED ? d->a : d->kind == LEN_UNIFORM ? d->b : 0;
    if (top > (double)max_len)
        fatal("--length '%s' exceeds --max-length %lld", text, (long long)max_len);
}

/* Round a continuous draw to a length in [1, max_len], counting clamps. */
static int64_t len_round(struct len_dist *d, double x, int64_t max_len)
{
    if (!(x < (double)max_len + 0.5)) {
        d->hi_clamped++;
        return max_len;
    }
    int64_t l = (int64_t)floor(x + 0.5);
    if (l < 1) {
        d->lo_clamped++;
        return 1;
    }
    return l;
}

/* One user's length, drawn from its own stream r. */
static int64_t len_draw(struct len_dist *d, struct rng *r, int64_t max_len)
{
    switch (d->kind) {
    case LEN_FIXED:
        return (int64_t)d->a;
    case LEN_UNIFORM:
        return (int64_t)d->a + (int64_t)rng_below(r, (uint64_t)(d->b - d->a) + 1);
    case LEN_LOGNORMAL:
        return len_round(d, exp(d->a + d->b * rng_normal(r)), max_len);
    case LEN_PARETO: /* xm * U^(-1/alpha), U in (0, 1] */
        return len_round(d, d->a * pow(1.0 - rng_uniform(r), -1.0 / d->b), max_len);
    case LEN_FROM: {
        int64_t l = d->pool[rng_below(r, (uint64_t)d->pool_n)];
        if (l > max_len) {
            d->hi_clamped++;
            return max_len;
        }
        return l;
    }
    }
    return 1;
}

/* --- item ids ----------------------------------------------------------- */

/* Bijection of popularity ranks 1..n onto item ids 1..n. */
struct item_map {
    uint64_t n, a, b;
};

static uint64_t gcd_u64(uint64_t x, uint64_t y)
{
    while (y) {
        uint64_t t = x % y;
        x = y;
        y = t;
    }
    return x;
}

static void item_map_init(struct item_map *m, uint64_t n, uint64_t seed)
{
    struct rng r;
    rng_init(&r, rng_key(seed, UINT64_MAX, KEY_MAP));
    m->n = n;
    m->a = 1;
    m->b = rng_below(&r, n);
    if (n < 4)
        return;
    /* a multiplier coprime to n, preferably neither the identity (1) nor the
     * reversal (n - 1); n = 4 and 6 have no other, and a few tries find one
     * for any other n (the density of units is at least ~1 / (2 ln ln n)) */
    for (int tries = 0; tries < 1000; tries++) {
        uint64_t a = 2 + rng_below(&r, n - 3);
        if (gcd_u64(a, n) == 1) {
            m->a = a;
            return;
        }
    }
    m->a = n - 1;
}

static inline int64_t item_map_id(const struct item_map *m, int64_t rank)
{
    uint64_t k = (uint64_t)rank - 1;
    if (m->n <= UINT32_MAX) /* the product fits in 64 bits */
        return (int64_t)((k * m->a + m->b) % m->n) + 1;
    return (int64_t)(((unsigned __int128)k * m->a + m->b) % m->n) + 1;
}

/* --- generation --------------------------------------------------------- */

struct gen_opts {
    int64_t users, items, max_len, chunk, seed;
    double zipf_s;
    int timestamps, actions;
    const char *out, *length_text;
    int nfeat;
    struct gen_feature feat[GEN_MAX_FEATURES];
    int64_t planted;           /* --labels planted:K: K, else 0 */
    int planted_scores;        /* --planted-scores: the item factors beside */
    int64_t raw_k;             /* --raw-ids K: item ids x K (version 3), else 0 */
};

/* One chunk of whole users: lengths[users], events in user order. */
struct gen_buf {
    int64_t u0;  /* the first user of the chunk */
    int64_t cap_users, cap_events, users, events;
    int64_t *lengths, *items, *ts;
    int32_t *actions;
};

static void buf_reserve(struct gen_buf *b, const struct gen_opts *o, int64_t events)
{
    if (events <= b->cap_events)
        return;
    b->cap_events = events;
    b->items = xrealloc(b->items, (size_t)events * sizeof *b->items);
    if (o->timestamps)
        b->ts = xrealloc(b->ts, (size_t)events * sizeof *b->ts);
    if (o->actions)
        b->actions = xrealloc(b->actions, (size_t)events * sizeof *b->actions);
}

/* Fill user u's events: items[len], ts[len], actions[len] (NULL if off). */
static void gen_user(const struct gen_opts *o, const struct zipf *z, const struct item_map *m,
                     int64_t u, int64_t len, int64_t *items, int64_t *ts, int32_t *actions)
{
    uint64_t seed = (uint64_t)o->seed;
    struct rng r;
    rng_init(&r, rng_key(seed, (uint64_t)u, KEY_ITEMS));
    for (int64_t i = 0; i < len; i++)
        items[i] = item_map_id(m, zipf_sample(z, &r));
    if (ts) {
        rng_init(&r, rng_key(seed, (uint64_t)u, KEY_TIMES));
        int64_t t = GEN_T0 + (int64_t)rng_below(&r, GEN_T_SPAN);
        for (int64_t i = 0; i < len; i++) {
            if (i > 0)
                t += (int64_t)(-GEN_MEAN_GAP * log1p(-rng_uniform(&r)));
            ts[i] = t;
        }
    }
    if (actions) {
        rng_init(&r, rng_key(seed, (uint64_t)u, KEY_ACTIONS));
        for (int64_t i = 0; i < len; i++)
            actions[i] = 1 + (int32_t)rng_below(&r, 5);
    }
}

static void gen_flush(struct dataset_writer *w, struct gen_buf *b, const struct gen_opts *o,
                      struct planted *pl)
{
    char err[4400];
    if (b->users == 0)
        return;
    int64_t *ids = b->items; /* --raw-ids K: written x K (the planted labels use b->items) */
    if (o->raw_k) {
        ids = xmalloc((size_t)(b->events ? b->events : 1) * sizeof *ids);
        for (int64_t i = 0; i < b->events; i++)
            ids[i] = b->items[i] * o->raw_k;
    }
    const int bad = dataset_writer_append(w, b->users, b->lengths, ids, b->ts, b->actions, err,
                                          sizeof err);
    if (ids != b->items)
        free(ids);
    if (bad) {
        dataset_writer_abort(w);
        fatal("%s", err);
    }
    gen_features_events(w, o->feat, o->nfeat, (uint64_t)o->seed, b->u0, b->users, b->lengths);
    if (o->planted)
        planted_events(pl, w, b->u0, b->users, b->lengths, b->items);
    b->u0 += b->users;
    b->users = b->events = 0;
}

/* --raw-ids K: /items/ids = K, 2K, .. N K (every item, used or not) and
 * /user_map = 0 .. U-1 (the users' raw ids). */
static int gen_raw_lists(struct dataset_writer *w, const struct gen_opts *o, char *err,
                         size_t errlen)
{
    const int64_t n = o->items > o->users ? o->items : o->users;
    int64_t *v = xmalloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < o->items; i++)
        v[i] = (i + 1) * o->raw_k;
    int rc = dataset_writer_raw_items(w, v, o->items, err, errlen);
    for (int64_t u = 0; rc == 0 && u < o->users; u++)
        v[u] = u;
    if (rc == 0)
        rc = dataset_writer_map(w, "user_map", v, o->users, err, errlen);
    free(v);
    return rc;
}

/* Generate and write the dataset; returns the number of events. */
static int64_t gen_run(const struct gen_opts *o, struct len_dist *d)
{
    char err[4400];
    struct zipf z;
    struct item_map m;
    zipf_init(&z, o->items, o->zipf_s);
    item_map_init(&m, (uint64_t)o->items, (uint64_t)o->seed);

    struct dataset_writer *w = dataset_writer_open(o->out, o->timestamps, o->actions, err,
                                                   sizeof err);
    if (!w)
        fatal("%s", err);
    dataset_writer_guard(w, 1); /* no partial file left by a signal */
    gen_features_declare(w, (struct gen_feature *)o->feat, o->nfeat);
    struct planted pl;
    if (o->planted) {
        /* each item's probability (zipf's over ranks, through the map) */
        double *pop = xcalloc((size_t)o->items + 1, sizeof *pop), sum = 0;
        for (int64_t k = 1; k <= o->items; k++)
            sum += pop[item_map_id(&m, k)] = pow((double)k, -o->zipf_s);
        for (int64_t i = 1; i <= o->items; i++)
            pop[i] /= sum;
        planted_init(&pl, w, o->planted, (uint64_t)o->seed, o->users, o->items, pop);
        pl.scores = o->planted_scores;
    }
    struct gen_buf b = {0};
    b.cap_users = o->chunk; /* every user has >= 1 event */
    b.lengths = xmalloc((size_t)b.cap_users * sizeof *b.lengths);
    buf_reserve(&b, o, o->chunk);

    int64_t total = 0;
    for (int64_t u = 0; u < o->users; u++) {
        struct rng r;
        rng_init(&r, rng_key((uint64_t)o->seed, (uint64_t)u, KEY_LENGTH));
        int64_t len = len_draw(d, &r, o->max_len);
        if (b.users > 0 && (b.events + len > o->chunk || b.users == b.cap_users))
            gen_flush(w, &b, o, &pl);
        buf_reserve(&b, o, len); /* a user longer than a chunk goes alone */
        gen_user(o, &z, &m, u, len, b.items + b.events, o->timestamps ? b.ts + b.events : NULL,
                 o->actions ? b.actions + b.events : NULL);
        b.lengths[b.users++] = len;
        b.events += len;
        total += len;
        if (total > ((int64_t)1 << 50)) {
            dataset_writer_abort(w);
            fatal("too many events (over 2^50): reduce --users or the lengths");
        }
    }
    gen_flush(w, &b, o, &pl);
    gen_features_entities(w, o->feat, o->nfeat, (uint64_t)o->seed, o->users, o->items);
    if (o->raw_k && gen_raw_lists(w, o, err, sizeof err)) {
        dataset_writer_abort(w);
        fatal("%s", err);
    }
    free(b.lengths);
    free(b.items);
    free(b.ts);
    free(b.actions);
    if (dataset_writer_close(w, o->items, err, sizeof err))
        fatal("%s", err);
    if (o->planted)
        planted_finish(&pl, o->out);
    return total;
}

/* --- command line ------------------------------------------------------- */

static void gen_usage(FILE *f)
{
    fprintf(f,
            "usage: freescale data gen --users N --items N --length DIST -o OUT.h5 [options]\n"
            "\n"
            "Write a deterministic synthetic dataset (same options, same content).\n"
            "  --users N          number of users (sequences), >= 1; 1e6 is accepted\n"
            "  --items N          number of items, >= 1\n"
            "  --length DIST      sequence lengths, one of\n"
            "                       fixed:L  uniform:A,B  lognormal:MU,SIGMA\n"
            "                       pareto:XM,ALPHA  from:FILE.h5 (resample its lengths)\n"
            "                     rounded, then clamped to [1, --max-length]\n"
            "  -o, --output FILE  output file (written to FILE.tmp.PID, renamed at the end)\n"
            "  --zipf S           item popularity exponent, >= 0 (0 = uniform; default 1)\n"
            "  --seed N           random seed (default 1)\n"
            "  --timestamps       write /timestamps (start in 2020, exponential gaps, mean 1 h)\n"
            "  --actions          write /actions (uniform 1..5)\n"
            "  --max-length L     cap on one user's length (default and limit 1e9)\n"
            "  --chunk-events N   events per write (default 1Mi; output does not depend on it)\n"
            "  --item-feature NAME:CARD[:K]\n"
            "                     a categorical item feature /items/NAME, values uniform in\n"
            "                     1..CARD-1; K > 1: multi-valued, 1..K values per item\n"
            "  --user-feature NAME:CARD[:K]   the same per user (/users/NAME)\n"
            "  --event-feature NAME:CARD      the same per event (/events/NAME; single-valued)\n"
            "                     (each repeatable; at most %d features)\n"
            "  --labels planted[:K]  /events/click (0/1) and /events/rating (float) drawn\n"
            "                     from a known model (user and item factors, the previous\n"
            "                     item; doc/ranking.md); the optimal AUC, NE and MSE on each\n"
            "                     user's last K events (default 1) as attributes planted_*,\n"
            "                     and of what an evaluation shows as planted_visible_*,\n"
            "                     and with the users' factors from their history's\n"
            "                     posterior as planted_posterior_*\n"
            "  --planted-scores   with --labels planted: the item factors (q_i, c_i) and\n"
            "                     popularity beside, /planted_items and /planted_pop (tests)\n"
            "  --raw-ids K        raw item ids (dataset version 3, doc/data.md): item i is\n"
            "                     written as i x K (K >= 1, N x K < 2^63), /items/ids lists\n"
            "                     K .. N K, /user_map the users 0 .. U-1; the same events as\n"
            "                     without it (tests of raw ids; at most 2^28 items and users)\n"
            "  --stream           a stream of days with raw ids, new items and drifting\n"
            "                     popularity: 'freescale data gen --stream --help'\n"
            "  --yambda           a Yambda-shaped stream (event types, played ratio, tracks\n"
            "                     with albums and artists, planted taste): 'freescale data\n"
            "                     gen --yambda --help'\n",
            GEN_MAX_FEATURES);
}

int data_gen_main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) /* a stream of days: its own options (data_gen_stream.h) */
        if (!strcmp(argv[i], "--stream"))
            return data_gen_stream_main(argc, argv);
        else if (!strcmp(argv[i], "--yambda")) /* Yambda-shaped (data_gen_yambda.h) */
            return data_gen_yambda_main(argc, argv);
    struct gen_opts o = {.users = -1, .items = -1, .max_len = GEN_MAX_LENGTH,
                         .chunk = (int64_t)1 << 20, .seed = 1, .zipf_s = 1.0};
    int have_max = 0;
    enum { O_USERS = 256, O_ITEMS, O_LENGTH, O_ZIPF, O_SEED, O_TS, O_ACTIONS, O_MAXLEN, O_CHUNK,
           O_IFEAT, O_UFEAT, O_EFEAT, O_LABELS, O_RAWIDS, O_PSCORES };
    static const struct option longopts[] = {
        {"users", required_argument, NULL, O_USERS},
        {"items", required_argument, NULL, O_ITEMS},
        {"length", required_argument, NULL, O_LENGTH},
        {"output", required_argument, NULL, 'o'},
        {"zipf", required_argument, NULL, O_ZIPF},
        {"seed", required_argument, NULL, O_SEED},
        {"timestamps", no_argument, NULL, O_TS},
        {"actions", no_argument, NULL, O_ACTIONS},
        {"max-length", required_argument, NULL, O_MAXLEN},
        {"chunk-events", required_argument, NULL, O_CHUNK},
        {"item-feature", required_argument, NULL, O_IFEAT},
        {"user-feature", required_argument, NULL, O_UFEAT},
        {"event-feature", required_argument, NULL, O_EFEAT},
        {"labels", required_argument, NULL, O_LABELS},
        {"raw-ids", required_argument, NULL, O_RAWIDS},
        {"planted-scores", no_argument, NULL, O_PSCORES},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case O_USERS: o.users = cli_count("--users", optarg, 1, (int64_t)1 << 40); break;
        case O_ITEMS: o.items = cli_count("--items", optarg, 1, (int64_t)1 << 53); break;
        case O_LENGTH: o.length_text = optarg; break;
        case 'o': o.out = optarg; break;
        case O_ZIPF: o.zipf_s = cli_number("--zipf", optarg, 0.0, 100.0); break;
        case O_SEED: o.seed = cli_count("--seed", optarg, 0, INT64_MAX); break;
        case O_TS: o.timestamps = 1; break;
        case O_ACTIONS: o.actions = 1; break;
        case O_MAXLEN:
            o.max_len = cli_count("--max-length", optarg, 1, GEN_MAX_LENGTH);
            have_max = 1;
            break;
        case O_LABELS: o.planted = planted_parse(optarg); break;
        case O_PSCORES: o.planted_scores = 1; break;
        case O_RAWIDS: o.raw_k = cli_count("--raw-ids", optarg, 1, INT64_MAX); break;
        case O_CHUNK: o.chunk = cli_count("--chunk-events", optarg, 1, (int64_t)1 << 30); break;
        case O_IFEAT:
        case O_UFEAT:
        case O_EFEAT: {
            static const char *const opt[3] = {"--item-feature", "--user-feature",
                                               "--event-feature"};
            const int w = c - O_IFEAT;
            if (o.nfeat == GEN_MAX_FEATURES)
                fatal("data gen: more than %d features", GEN_MAX_FEATURES);
            gen_feature_parse(opt[w], optarg, w == 0 ? DS_ITEMS : w == 1 ? DS_USERS : DS_EVENTS,
                              &o.feat[o.nfeat]);
            for (int i = 0; i < o.nfeat; i++)
                if (o.feat[i].kind == o.feat[o.nfeat].kind &&
                    !strcmp(o.feat[i].name, o.feat[o.nfeat].name))
                    fatal("data gen: %s %s given twice", opt[w], o.feat[i].name);
            o.nfeat++;
            break;
        }
        case 'h': gen_usage(stdout); return 0;
        case ':': fatal("data gen: option '%s' needs a value", argv[optind - 1]);
        default: fatal("data gen: unknown option '%s' (see 'freescale data gen --help')",
                       argv[optind - 1]);
        }
    }
    if (optind < argc)
        fatal("data gen: unexpected argument '%s'", argv[optind]);
    if (o.users < 0)
        fatal("data gen: --users is required");
    if (o.items < 0)
        fatal("data gen: --items is required");
    if (!o.length_text)
        fatal("data gen: --length is required");
    if (!o.out || !*o.out)
        fatal("data gen: -o OUT.h5 is required");
    if (o.raw_k && (o.items > INT64_MAX / o.raw_k || o.items > ((int64_t)1 << 28) ||
                    o.users > ((int64_t)1 << 28)))
        fatal("data gen: --raw-ids %lld with --items %lld, --users %lld: the largest id N x K "
              "must stay below 2^63, and the lists (8 bytes an item and a user) at most 2^28",
              (long long)o.raw_k, (long long)o.items, (long long)o.users);
    if (o.planted_scores && !o.planted)
        fatal("data gen: --planted-scores needs --labels planted[:K] (or --yambda)");
    if (o.raw_k && o.planted)
        fatal("data gen: --raw-ids and --labels planted: the planted labels are for dense ids");

    struct len_dist d;
    len_parse(&d, o.length_text);
    if (have_max)
        len_check_max(&d, o.length_text, o.max_len);

    double t0 = clock_seconds();
    int64_t events = gen_run(&o, &d);
    double secs = clock_seconds() - t0;
    free(d.pool);

    if (d.lo_clamped)
        log_warn("data gen: %lld length draws were below 1 and clamped to 1",
                 (long long)d.lo_clamped);
    if (d.hi_clamped)
        log_warn("data gen: %lld length draws were above %lld and clamped to it%s",
                 (long long)d.hi_clamped, (long long)o.max_len,
                 have_max ? "" : " (the --max-length limit)");
    log_info("data gen: wrote %s: %lld users, %lld items, %lld events "
             "(length %s, zipf %g, seed %lld%s%s)",
             o.out, (long long)o.users, (long long)o.items, (long long)events, o.length_text,
             o.zipf_s, (long long)o.seed, o.timestamps ? ", timestamps" : "",
             o.actions ? ", actions" : "");
    log_info("data gen: %.2f s, %.3g events/s", secs, secs > 0 ? (double)events / secs : 0.0);
    return 0;
}
