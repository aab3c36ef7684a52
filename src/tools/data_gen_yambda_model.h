/* data_gen_yambda_model: the structs of data gen --yambda's planted model
 * (data_gen_yambda.h) that its posterior optimum (data_gen_yambda_post.c)
 * reads. */
#ifndef FS_DATA_GEN_YAMBDA_MODEL_H
#define FS_DATA_GEN_YAMBDA_MODEL_H

#include <math.h>
#include <stdint.h>

#define Y_F 16            /* taste factors at most (--factors) */
#define Y_DAY 86400LL
#define Y_STEP 5LL        /* Yambda's timestamps: multiples of 5 seconds */
#define Y_MAX_DAYS 3650
#define Y_M63 ((UINT64_C(1) << 63) - 1)
#define Y_TASKS "listen_plus:binary:played_ratio_pct>=50"

/* The event types, in bytewise order: their categorical ids are 1 .. 5. */
enum { Y_DISLIKE = 1, Y_LIKE, Y_LISTEN, Y_UNDISLIKE, Y_UNLIKE, Y_NTYPES = 5 };

struct yopts {
    int64_t days, users, tracks, artists, albums, max_len, seed;
    int64_t factors;
    double median, sigma, zipf_s, drift, organic, taste, artist_share;
    int scores;
    const char *out, *split_dir, *csv, *items_csv;
};

/* One event; a buffer's events in user order (pos: the user's position
 * in raw id order), each user's in time order. */
struct yev {
    int64_t ts, pos;
    int32_t track, type, organic;
    float ratio, length, p;
    double pp; /* the posterior optimum's listen_plus probability (the last day's) */
};

struct ybuf {
    int64_t n, cap;
    struct yev *e;
};

/* The catalog: each track's album, artist, factors, bias and length. */
struct catalog {
    int32_t *album, *artist;  /* [T + 1], [T + 1] (track -> artist via album) */
    double *q, *c;            /* [(T + 1) F], [T + 1] */
    float *length;            /* [T + 1] seconds */
    int64_t *raw;             /* [T + 1] the track's raw id */
    int64_t *rank0;           /* [T] day 0's ranking */
    double *w;                /* [(A + 1) F] the artists' factors */
    int64_t *aoff, *atrk;     /* [A + 2], [T]: artist a's tracks atrk[aoff[a] .. aoff[a + 1]) */
};

static inline double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* The posterior optimum (doc/data.md "The optimum of what the history
 * shows"): last[0 .. n)'s pp, the listen_plus probability of the user's
 * last-day events given their earlier events hist. */
void yambda_posterior(const struct yopts *o, const struct catalog *k, const struct ybuf *hist,
                      struct yev *last, int64_t n);

#endif
