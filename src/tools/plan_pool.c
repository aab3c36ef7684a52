/* plan_pool: training lengths for 'freescale plan'; see plan_pool.h. */
#include "tools/plan_pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/rng.h"
#include "cli/cli.h"
#include "data/dataset.h"

enum { KEY_POOL = 0x706f6f6c }; /* purpose for rng_key */


static void pool_add(struct pool *pl, int64_t user_len, int hold, int64_t N)
{
    int64_t n_in = user_len - hold - 1;
    if (n_in < 1)
        return;
    pl->len[pl->n++] = n_in < N ? n_in : N;
}

/* what names the source in errors ("data.path" or "--lengths"). */
void pool_from_dataset(struct pool *pl, const char *what, const char *path, int hold,
                              int64_t N)
{
    struct dataset ds;
    char err[4400];
    if (dataset_open(&ds, path, err, sizeof err))
        fatal("%s: %s", what, err);
    pl->len = xmalloc((size_t)(ds.num_users ? ds.num_users : 1) * sizeof *pl->len);
    for (int64_t u = 0; u < ds.num_users; u++)
        pool_add(pl, dataset_length(&ds, u), hold, N);
    pl->num_items = ds.num_items;
    dataset_close(&ds);
    snprintf(pl->source, sizeof pl->source, "%s (/offsets)", path);
}

/* One user length of a distribution (as 'data gen' draws it: rounded,
 * clamped to >= 1); text names it in errors. */
static int64_t dist_draw(const char *kind, const double *v, struct rng *r)
{
    double x;
    if (!strcmp(kind, "fixed"))
        return (int64_t)v[0];
    if (!strcmp(kind, "uniform"))
        return (int64_t)v[0] + (int64_t)rng_below(r, (uint64_t)(v[1] - v[0]) + 1);
    if (!strcmp(kind, "lognormal"))
        x = exp(v[0] + v[1] * rng_normal(r));
    else /* pareto: xm U^(-1/alpha), U in (0, 1] */
        x = v[0] * pow(1.0 - rng_uniform(r), -1.0 / v[1]);
    if (!(x < 1e9))
        return 1000000000;
    int64_t l = (int64_t)floor(x + 0.5);
    return l < 1 ? 1 : l;
}

static int whole(double v) { return v == floor(v) && v >= 1 && v <= 1e9; }

void pool_from_dist(struct pool *pl, const char *text, int hold, int64_t N,
                           uint64_t seed)
{
    const char *colon = strchr(text, ':');
    if (!colon)
        fatal("--lengths: '%s' is not a distribution (expected fixed:L, uniform:A,B, "
              "lognormal:MU,SIGMA, pareto:XM,ALPHA or from:FILE.h5)", text);
    char kind[16];
    size_t nl = (size_t)(colon - text);
    snprintf(kind, sizeof kind, "%.*s", (int)(nl < 15 ? nl : 15), text);
    const char *args = colon + 1;
    if (!strcmp(kind, "from")) {
        if (!*args)
            fatal("--lengths: '%s' needs a file name after 'from:'", text);
        /* resampling the file's users, as 'data gen' does, has the
         * distribution of the file's own lengths */
        pool_from_dataset(pl, "--lengths", args, hold, N);
    } else {
        int want = !strcmp(kind, "fixed") ? 1
                   : !strcmp(kind, "uniform") || !strcmp(kind, "lognormal") ||
                           !strcmp(kind, "pareto")
                       ? 2
                       : 0;
        if (!want || nl >= 15)
            fatal("--lengths: unknown distribution '%.*s' in '%s' (expected fixed, uniform, "
                  "lognormal, pareto or from)", (int)nl, text, text);
        double v[2];
        if (cli_numbers("--lengths", args, v, 2) != want)
            fatal("--lengths: '%s' needs %d number%s after the ':'", text, want,
                  want > 1 ? "s" : "");
        if ((!strcmp(kind, "fixed") && !whole(v[0])) ||
            (!strcmp(kind, "uniform") && (!whole(v[0]) || !whole(v[1]) || v[0] > v[1])))
            fatal("--lengths: '%s': lengths must be whole numbers in [1, 1e9] (A <= B)", text);
        if (!strcmp(kind, "lognormal") && (fabs(v[0]) > 50 || v[1] < 0 || v[1] > 20))
            fatal("--lengths: '%s': need |MU| <= 50 and 0 <= SIGMA <= 20", text);
        if (!strcmp(kind, "pareto") && (!(v[0] > 0) || !(v[1] > 0)))
            fatal("--lengths: '%s': need XM > 0 and ALPHA > 0", text);
        pl->len = xmalloc((size_t)PLAN_POOL_DRAWS * sizeof *pl->len);
        for (int64_t i = 0; i < PLAN_POOL_DRAWS; i++) {
            struct rng r; /* one stream per user, like data gen */
            rng_init(&r, rng_key(seed, (uint64_t)i, KEY_POOL));
            pool_add(pl, dist_draw(kind, v, &r), hold, N);
        }
    }
    snprintf(pl->source, sizeof pl->source, "--lengths %s", text);
}

