/* test_stream_files: window files as one stream (data/stream_files.h).
 *   - history: random events over F window files (raw ids, written here)
 *     and the same events in one file; stream_files_history on the F files
 *     (and on the one file) against a brute-force scan of the one file, for
 *     random users (some absent), times, max_len and history_files;
 *     and the event labels of each history event (its where) read back;
 *     with files released (closed) at random and opened again on use;
 *   - a file rewritten after it was opened is refused when opened again;
 *   - a glob opens the files in name order; resume and later;
 *   - refusals naming the files: a file older than the one before it,
 *     overlapping files, a file without /timestamps, a glob matching
 *     nothing, dense files in a list, history_files < 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/rng.h"
#include "data/dataset.h"
#include "data/stream_files.h"
#include "tmpdir.h"

#define F 6          /* window files */
#define U 40         /* users */
#define T0 1700000000
#define SPAN 1000    /* seconds a file */
#define MAXE 4096


struct ev {
    int64_t user, ts, item;
    int32_t act;
};

static float label_of(int64_t item, int32_t act) { return (float)(item % 997) + 0.25f * (float)act; }

/* Write events ev[n] (sorted by user raw id, then time) as a dataset. */
static void write_events(const char *path, const struct ev *ev, int64_t n, int raw, int with_ts)
{
    char err[4400];
    int64_t lengths[U + 8], umap[U + 8], items[MAXE], ts[MAXE], ids[MAXE];
    int32_t act[MAXE];
    int64_t nu = 0, ni = 0;
    for (int64_t e = 0; e < n; e++) {
        if (e == 0 || ev[e].user != ev[e - 1].user) {
            umap[nu] = ev[e].user;
            lengths[nu++] = 0;
        }
        lengths[nu - 1]++;
        items[e] = raw ? ev[e].item : 1 + ev[e].item % 7;
        ts[e] = ev[e].ts;
        act[e] = ev[e].act;
        int seen = 0;
        for (int64_t i = 0; i < ni; i++)
            seen |= ids[i] == items[e];
        if (!seen)
            ids[ni++] = items[e];
    }
    for (int64_t i = 1; i < ni; i++) /* insertion sort of the item list */
        for (int64_t j = i; j > 0 && ids[j] < ids[j - 1]; j--) {
            int64_t t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    struct dataset_writer *w = dataset_writer_open(path, with_ts, 1, err, sizeof err);
    assert_non_null(w);
    /* an event label: a function of the event (checked through the where list) */
    static float lab[MAXE];
    for (int64_t e = 0; e < n; e++)
        lab[e] = label_of(ev[e].item, ev[e].act);
    const int k = dataset_writer_event_feature(w, "like", 1, 0, err, sizeof err);
    assert_true(k >= 0);
    assert_int_equal(dataset_writer_append(w, nu, lengths, items, with_ts ? ts : NULL, act, err,
                                           sizeof err), 0);
    assert_int_equal(dataset_writer_append_feature(w, k, n, NULL, lab, err, sizeof err), 0);
    if (raw)
        assert_int_equal(dataset_writer_raw_items(w, ids, ni, err, sizeof err), 0);
    assert_int_equal(dataset_writer_map(w, "user_map", umap, nu, err, sizeof err), 0);
    assert_int_equal(dataset_writer_close(w, raw ? ni : 7, err, sizeof err), 0);
}

static int ev_cmp(const void *a, const void *b)
{
    const struct ev *x = a, *y = b;
    if (x->user != y->user)
        return x->user < y->user ? -1 : 1;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

/* The scenario: per file k events at T0 + k SPAN + [0, SPAN); file k's
 * events in file[k], all of them in all[] (user-major: the one file). */
static struct ev g_file[F][MAXE / F], g_all[MAXE];
static int64_t g_nfile[F], g_nall, g_users[U], g_first[F];

static void make_scenario(uint64_t seed)
{
    struct rng r;
    rng_init(&r, seed);
    for (int u = 0; u < U; u++)
        g_users[u] = 1 + (int64_t)(rng_u64(&r) >> 2);
    g_nall = 0;
    for (int k = 0; k < F; k++) {
        g_nfile[k] = 0;
        g_first[k] = INT64_MAX;
        for (int u = 0; u < U; u++) {
            if (rng_uniform(&r) < 0.35)
                continue;
            int len = (int)rng_below(&r, 9); /* 0 .. 8 events */
            for (int i = 0; i < len; i++) {
                /* times from a few values: ties within a user happen */
                struct ev e = {g_users[u], T0 + k * SPAN + (int64_t)rng_below(&r, 40) * 25,
                               1 + (int64_t)rng_below(&r, 50) * 1000003, (int32_t)rng_below(&r, 6)};
                g_file[k][g_nfile[k]++] = e;
                if (e.ts < g_first[k])
                    g_first[k] = e.ts;
            }
        }
        /* stable by (user, ts): mergesort-free: insertion sort keeps ties' order */
        for (int64_t i = 1; i < g_nfile[k]; i++)
            for (int64_t j = i; j > 0 && ev_cmp(&g_file[k][j], &g_file[k][j - 1]) < 0; j--) {
                struct ev t = g_file[k][j];
                g_file[k][j] = g_file[k][j - 1];
                g_file[k][j - 1] = t;
            }
        for (int64_t i = 0; i < g_nfile[k]; i++)
            g_all[g_nall++] = g_file[k][i];
    }
    for (int64_t i = 1; i < g_nall; i++) /* stable: files' order kept for each user */
        for (int64_t j = i; j > 0 && g_all[j].user < g_all[j - 1].user; j--) {
            struct ev t = g_all[j];
            g_all[j] = g_all[j - 1];
            g_all[j - 1] = t;
        }
}

static void file_name(char *out, size_t len, const char *what, int k)
{
    snprintf(out, len, "%s/%s-%04d.h5", g_dir, what, k);
}

/* Brute force over the one file's events (read back through the reader). */
static int64_t brute(const struct dataset *one, const int64_t *umap, const int64_t *items,
                     const int64_t *ts, const int32_t *act, int64_t x, int64_t before,
                     int64_t max_len, int hist, int64_t *o_items, int64_t *o_ts, int32_t *o_act)
{
    int64_t lo = INT64_MIN;
    if (hist) { /* the oldest file read: the hist-th with events before `before` */
        int seen = 0;
        for (int k = F - 1; k >= 0; k--)
            if (g_first[k] < before && ++seen == hist)
                lo = g_first[k];
    }
    int64_t n = 0;
    for (int64_t u = 0; u < one->num_users; u++) {
        if (umap[u] != x)
            continue;
        for (int64_t e = one->offsets[u + 1] - 1; e >= one->offsets[u] && n < max_len; e--)
            if (ts[e] < before && ts[e] >= lo) {
                o_items[n] = items[e];
                o_ts[n] = ts[e];
                o_act[n++] = act[e];
            }
    }
    return n;
}

static void test_history_vs_brute_force(void **state)
{
    (void)state;
    char err[4400], path[256], spec[256], one_path[256];
    make_scenario(12345);
    for (int k = 0; k < F; k++) {
        file_name(path, sizeof path, "day", k);
        write_events(path, g_file[k], g_nfile[k], 1, 1);
    }
    snprintf(one_path, sizeof one_path, "%s/one.h5", g_dir);
    write_events(one_path, g_all, g_nall, 1, 1);

    struct dataset one;
    assert_int_equal(dataset_open(&one, one_path, err, sizeof err), 0);
    int64_t *umap = dataset_read_map(&one, "user_map", err, sizeof err);
    assert_non_null(umap);
    static int64_t items[MAXE], ts[MAXE];
    static int32_t act[MAXE];
    assert_int_equal(dataset_read_users(&one, 0, one.num_users, items, ts, act, err, sizeof err), 0);

    snprintf(spec, sizeof spec, "%s/day-*.h5", g_dir);
    struct rng q;
    rng_init(&q, 777);
    int64_t b_items[64], b_ts[64], s_items[64], s_ts[64];
    int32_t b_act[64], s_act[64];
    float s_like[64];
    struct stream_where where[64];
    int64_t checked = 0, nonempty = 0;
    for (int hist = 0; hist <= F + 1; hist++) {
        struct stream_files s, s1;
        assert_int_equal(stream_files_open(&s, spec, hist, err, sizeof err), 0);
        assert_int_equal(s.n, F);
        for (int k = 0; k < F; k++)
            assert_int_equal(s.f[k].t_first, g_first[k]);
        assert_int_equal(stream_files_open(&s1, one_path, 0, err, sizeof err), 0);
        for (int t = 0; t < 60; t++) {
            int64_t x = rng_below(&q, 8) ? g_users[rng_below(&q, U)] : 5 + (int64_t)t;
            int64_t before = T0 - 10 + (int64_t)rng_below(&q, F * SPAN + 20);
            int64_t max_len = 1 + (int64_t)rng_below(&q, 40);
            int64_t nb = brute(&one, umap, items, ts, act, x, before, max_len, hist, b_items,
                               b_ts, b_act);
            int64_t ns;
            assert_int_equal(stream_files_history(&s, x, before, max_len, s_items, s_ts, s_act,
                                                  where, &ns, err, sizeof err), 0);
            assert_int_equal(ns, nb);
            for (int64_t i = 0; i < nb; i++) {
                assert_int_equal(s_items[i], b_items[i]);
                assert_int_equal(s_ts[i], b_ts[i]);
                assert_int_equal(s_act[i], b_act[i]);
                /* where: the file whose window holds the time, and its event */
                assert_int_equal(where[i].file, (s_ts[i] - T0) / SPAN);
                int64_t wi, wt;
                int32_t wa;
                const struct dataset *wd = stream_files_dataset(&s, where[i].file, err,
                                                                sizeof err);
                assert_non_null(wd);
                int64_t wu = 0;
                while (wd->offsets[wu + 1] <= where[i].event)
                    wu++;
                int64_t buf_i[64], buf_t[64];
                int32_t buf_a[64];
                assert_true(dataset_length(wd, wu) <= 64);
                assert_int_equal(dataset_read_users(wd, wu, wu + 1, buf_i, buf_t, buf_a, err,
                                                    sizeof err), 0);
                wi = buf_i[where[i].event - wd->offsets[wu]];
                wt = buf_t[where[i].event - wd->offsets[wu]];
                wa = buf_a[where[i].event - wd->offsets[wu]];
                assert_int_equal(wi, s_items[i]);
                assert_int_equal(wt, s_ts[i]);
                assert_int_equal(wa, s_act[i]);
            }
            assert_int_equal(stream_files_event_values(&s, "like", where, ns, s_like, err,
                                                       sizeof err), 0);
            for (int64_t i = 0; i < ns; i++)
                assert_true(s_like[i] == label_of(s_items[i], s_act[i]));
            if (ns > 0) {
                assert_int_equal(stream_files_event_values(&s, "nothere", where, ns, s_like, err,
                                                           sizeof err), -1);
                assert_non_null(strstr(err, "has no event column /events/nothere"));
            }
            if (hist == 0) { /* the one file gives the same */
                assert_int_equal(stream_files_history(&s1, x, before, max_len, s_items, s_ts,
                                                      NULL, NULL, &ns, err, sizeof err), 0);
                assert_int_equal(ns, nb);
                for (int64_t i = 0; i < nb; i++)
                    assert_int_equal(s_items[i], b_items[i]);
            }
            checked++;
            nonempty += nb > 0;
            if (t % 7 == 3) /* closed files open again when used */
                stream_files_release(&s, (int)rng_below(&q, F + 1));
        }
        stream_files_close(&s);
        stream_files_close(&s1);
    }
    /* a file rewritten after it was added (closed meanwhile) is refused */
    {
        struct stream_files s2;
        char p2[256];
        assert_int_equal(stream_files_open(&s2, spec, 0, err, sizeof err), 0);
        file_name(p2, sizeof p2, "day", 2);
        char keep[300];
        snprintf(keep, sizeof keep, "%s.keep", p2);
        assert_int_equal(rename(p2, keep), 0);
        write_events(p2, g_file[2], g_nfile[2] / 2, 1, 1);
        assert_null(stream_files_dataset(&s2, 2, err, sizeof err));
        print_message("refused: %s\n", err);
        assert_non_null(strstr(err, p2));
        assert_non_null(strstr(err, "changed since it was opened"));
        assert_int_equal(rename(keep, p2), 0);
        assert_non_null(stream_files_dataset(&s2, 2, err, sizeof err));
        stream_files_close(&s2);
    }
    print_message("history: %lld lookups against the brute force, %lld non-empty\n",
                  (long long)checked, (long long)nonempty);
    assert_true(nonempty > checked / 3); /* the comparison is not vacuous */
    free(umap);
    dataset_close(&one);
}

static void test_resume_and_list(void **state)
{
    (void)state;
    char err[4400], spec[1024], p[3][256];
    for (int k = 0; k < 3; k++)
        file_name(p[k], sizeof p[k], "day", k);
    snprintf(spec, sizeof spec, "%s,%s,%s", p[0], p[1], p[2]);
    struct stream_files s;
    assert_int_equal(stream_files_open(&s, spec, 0, err, sizeof err), 0);
    assert_int_equal(s.n, 3);
    int next = -1;
    assert_int_equal(stream_files_resume(&s, s.f[1].t_last, &next, err, sizeof err), 0);
    assert_int_equal(next, 2);
    assert_int_equal(stream_files_resume(&s, s.f[2].t_last, &next, err, sizeof err), 0);
    assert_int_equal(next, 3);
    assert_int_equal(stream_files_resume(&s, T0 - 1, &next, err, sizeof err), 0);
    assert_int_equal(next, 0);
    /* a checkpoint that ended inside file 1: file 1 is refused by name */
    assert_int_equal(stream_files_resume(&s, s.f[1].t_first, &next, err, sizeof err), -1);
    print_message("refused: %s\n", err);
    assert_non_null(strstr(err, p[1]));
    assert_non_null(strstr(err, "is not later than the last window trained"));
    assert_int_equal(stream_files_later(&s, 2, s.f[1].t_last, err, sizeof err), 0);
    assert_int_equal(stream_files_later(&s, 1, s.f[1].t_last, err, sizeof err), -1);
    assert_non_null(strstr(err, p[1]));
    stream_files_close(&s);
    assert_true(stream_files_is_list(spec) && stream_files_is_list("a/*.h5") &&
                !stream_files_is_list("a.h5"));
}

static void expect_refused(const char *spec, const char *what, const char *name1,
                           const char *name2)
{
    char err[4400] = "";
    struct stream_files s;
    assert_int_equal(stream_files_open(&s, spec, 0, err, sizeof err), -1);
    print_message("refused: %s\n", err);
    assert_non_null(strstr(err, what));
    assert_non_null(strstr(err, name1));
    if (name2)
        assert_non_null(strstr(err, name2));
    assert_int_equal(s.n, 0);
}

static void test_refusals(void **state)
{
    (void)state;
    char spec[2048], p[F][256], over[256], nots[256], dense[2][256], pat[256];
    for (int k = 0; k < F; k++)
        file_name(p[k], sizeof p[k], "day", k);
    /* older: day 2 listed before day 1 */
    snprintf(spec, sizeof spec, "%s,%s,%s", p[0], p[2], p[1]);
    expect_refused(spec, "is older than the file before it", p[1], p[2]);
    /* overlapping: a file from the middle of day 1 to the middle of day 2 */
    struct ev ov[2] = {{g_users[0], T0 + SPAN + SPAN / 2, 3, 1},
                       {g_users[0], T0 + 2 * SPAN + SPAN / 2, 4, 1}};
    snprintf(over, sizeof over, "%s/overlap.h5", g_dir);
    write_events(over, ov, 2, 1, 1);
    snprintf(spec, sizeof spec, "%s,%s,%s", p[0], p[1], over);
    expect_refused(spec, "overlaps the file before it", over, p[1]);
    /* no timestamps */
    snprintf(nots, sizeof nots, "%s/nots.h5", g_dir);
    write_events(nots, g_file[3], g_nfile[3], 1, 0);
    snprintf(spec, sizeof spec, "%s,%s", p[0], nots);
    expect_refused(spec, "has no /timestamps", nots, NULL);
    /* a glob matching nothing, alone or in a list */
    snprintf(pat, sizeof pat, "%s/none-*.h5", g_dir);
    expect_refused(pat, "matches no file", pat, NULL);
    snprintf(spec, sizeof spec, "%s,%s", p[0], pat);
    expect_refused(spec, "matches no file", pat, NULL);
    /* dense ids in a list of files */
    for (int k = 0; k < 2; k++) {
        file_name(dense[k], sizeof dense[k], "dense", k);
        write_events(dense[k], g_file[k], g_nfile[k], 0, 1);
    }
    snprintf(spec, sizeof spec, "%s,%s", dense[0], dense[1]);
    expect_refused(spec, "need raw item ids", dense[1], NULL);
    /* a missing file, an empty name, history_files < 0 */
    snprintf(spec, sizeof spec, "%s/missing.h5", g_dir);
    expect_refused(spec, "missing.h5", spec, NULL);
    snprintf(spec, sizeof spec, "%s,,%s", p[0], p[1]);
    expect_refused(spec, "an empty file name", p[0], NULL);
    char err[256];
    struct stream_files s;
    assert_int_equal(stream_files_open(&s, p[0], -1, err, sizeof err), -1);
    assert_non_null(strstr(err, "data.history_files = -1"));
    /* one dense file alone is accepted (one dataset: nothing to match) */
    struct stream_files d;
    char err2[4400];
    assert_int_equal(stream_files_open(&d, dense[0], 0, err2, sizeof err2), 0);
    stream_files_close(&d);
}

static int setup(void **state)
{
    (void)state;
    return tmpdir_make("stream_files");
}

static int teardown(void **state)
{
    (void)state;
    return tmpdir_remove();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_history_vs_brute_force),
        cmocka_unit_test(test_resume_and_list),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
