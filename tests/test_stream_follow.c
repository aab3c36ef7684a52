/* test_stream_follow: waiting for the next window file (data/stream_follow.h).
 * Each case builds a stream of day files in a directory of its own,
 * follows the glob DIR/day-* and delivers the next file from a forked
 * child (which only renames or signals: no HDF5 in the child):
 *   - a file renamed into place after a delay is picked up, and its events
 *     are in the history lookup;
 *   - a truncated copy under a matching name is not opened (the wait ends
 *     at the timeout with an error naming it, the stream unchanged), and the
 *     full file renamed over it is picked up; writers' temporaries (NAME.tmp,
 *     NAME.tmp.PID, .NAME) are never looked at;
 *   - a file written in place: its attribute `complete` wrong or missing
 *     (the stream's files have it) is waited for, then taken once set;
 *   - refusals naming the file: a new name sorting before the last file,
 *     a file overlapping the last one;
 *   - an empty stream (a follower started before the first file) takes
 *     the first file renamed into place;
 *   - one look (stream_follow_look): nothing yet, or the next name
 *     pending and why;
 *   - the timeout: FOLLOW_TIMEOUT after at least the timeout;
 *   - the stop flag, set by a signal handler while waiting: FOLLOW_STOP;
 *   - the data writer leaves only the final name (no NAME.tmp.PID);
 *   - durations and the pattern parsed, bad ones refused.
 * Timeouts here are hang guards (120 s) or the thing tested; no wall time
 * is asserted. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <hdf5.h>

#include "data/dataset.h"
#include "data/stream_follow.h"
#include "tmpdir.h"

#define T0 1700000000
#define SPAN 1000  /* seconds a day file */
#define USERS 5
#define PER 3      /* events a user a day */
#define GUARD 120.0 /* seconds: a hang guard, never reached when the code works */
#define POLL 0.05

static volatile sig_atomic_t g_stop;

static int64_t user_id(int u) { return 1000 + 17 * (int64_t)u; }
static int64_t item_id(int u, int j, int day) { return 500 + (u * 7 + j + day) % 20; }

/* Day `day`'s events (at T0 + day SPAN + shift ..) as a dataset at path. */
static void write_day(const char *path, int day, int64_t shift)
{
    char err[4400];
    int64_t lengths[USERS], umap[USERS], items[USERS * PER], ts[USERS * PER], ids[USERS * PER];
    int64_t n = 0, ni = 0;
    for (int u = 0; u < USERS; u++) {
        umap[u] = user_id(u);
        lengths[u] = PER;
        for (int j = 0; j < PER; j++, n++) {
            items[n] = item_id(u, j, day);
            ts[n] = T0 + (int64_t)day * SPAN + shift + u * 10 + j;
            int seen = 0;
            for (int64_t i = 0; i < ni; i++)
                seen |= ids[i] == items[n];
            if (!seen)
                ids[ni++] = items[n];
        }
    }
    for (int64_t i = 1; i < ni; i++)
        for (int64_t j = i; j > 0 && ids[j] < ids[j - 1]; j--) {
            int64_t t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    struct dataset_writer *w = dataset_writer_open(path, 1, 0, err, sizeof err);
    assert_non_null(w);
    assert_int_equal(dataset_writer_append(w, USERS, lengths, items, ts, NULL, err, sizeof err), 0);
    assert_int_equal(dataset_writer_raw_items(w, ids, ni, err, sizeof err), 0);
    assert_int_equal(dataset_writer_map(w, "user_map", umap, USERS, err, sizeof err), 0);
    assert_int_equal(dataset_writer_close(w, ni, err, sizeof err), 0);
}

/* A case's directory DIR/NAME with day files 0 .. days-1, and the stream
 * opened on its glob; its staging directory DIR/NAME.in. */
static void make_stream(const char *name, int days, struct stream_files *s, char *dir,
                        char *pattern)
{
    char err[4400], path[256];
    sprintf(dir, "%s/%s", g_dir, name);
    assert_int_equal(mkdir(dir, 0755), 0);
    sprintf(path, "%s.in", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    for (int d = 0; d < days; d++) {
        sprintf(path, "%s/day-%d.h5", dir, d);
        write_day(path, d, 0);
    }
    sprintf(pattern, "%s/day-*", dir);
    if (stream_files_open(s, pattern, 0, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(s->n, days);
}

/* Fork a child that sleeps `delay` seconds and renames from -> to (to
 * NULL: sends SIGUSR1 to the parent). Returns its pid. */
static pid_t later(double delay, const char *from, const char *to)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct timespec ts = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
        nanosleep(&ts, NULL);
        int rc = to ? rename(from, to) : kill(getppid(), SIGUSR1);
        _exit(rc == 0 ? 0 : 1);
    }
    return pid;
}

static void reap(pid_t pid)
{
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The first half of from's bytes as to. */
static void truncated_copy(const char *from, const char *to)
{
    FILE *f = fopen(from, "rb");
    assert_non_null(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_true(n > 100 && n < sizeof buf);
    FILE *g = fopen(to, "wb");
    assert_non_null(g);
    assert_int_equal(fwrite(buf, 1, n / 2, g), n / 2);
    assert_int_equal(fclose(g), 0);
}

static int follow(struct stream_files *s, const char *pattern, double timeout, double *waited,
                  char *err, size_t errlen)
{
    const struct stream_follow o = {pattern, timeout, POLL, &g_stop};
    return stream_follow_next(s, &o, waited, err, errlen);
}

static void test_rename_picked_up(void **state)
{
    (void)state;
    struct stream_files s;
    char dir[128], pattern[160], from[256], to[256], err[4400];
    make_stream("rename", 2, &s, dir, pattern);
    sprintf(from, "%s.in/day-2.h5", dir);
    sprintf(to, "%s/day-2.h5", dir);
    write_day(from, 2, 0);
    pid_t pid = later(0.3, from, to);
    double waited;
    int rc = follow(&s, pattern, GUARD, &waited, err, sizeof err);
    reap(pid);
    if (rc != FOLLOW_NEW)
        fail_msg("rc %d: %s", rc, err);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.f[2].path, to);
    /* the new file's events are in the history lookup: user 1's newest */
    int64_t items[8], ts[8], n;
    struct stream_where where[8];
    assert_int_equal(stream_files_history(&s, user_id(1), INT64_MAX, 8, items, ts, NULL, where,
                                          &n, err, sizeof err), 0);
    assert_int_equal(n, 3 * PER > 8 ? 8 : 3 * PER);
    assert_int_equal(where[0].file, 2);
    assert_int_equal(ts[0], T0 + 2 * SPAN + 10 + PER - 1);
    assert_int_equal(items[0], item_id(1, PER - 1, 2));
    assert_int_equal(where[PER].file, 1);
    /* nothing newer: the timeout */
    rc = follow(&s, pattern, 0.2, &waited, err, sizeof err);
    assert_int_equal(rc, FOLLOW_TIMEOUT);
    stream_files_close(&s);
}

/* A follower started before the stream's first file (train.follow on a
 * glob that matches nothing yet): the empty stream waits, then takes the
 * first file renamed into place, a temporary beside it never looked at. */
static void test_first_file(void **state)
{
    (void)state;
    struct stream_files s = {0};
    char dir[128], pattern[160], from[256], to[256], tmp[256], err[4400], why[1024];
    sprintf(dir, "%s/first", g_dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    sprintf(from, "%s/first.in", g_dir);
    assert_int_equal(mkdir(from, 0755), 0);
    sprintf(pattern, "%s/day-*", dir);
    int pending = 1;
    assert_int_equal(stream_follow_look(&s, pattern, &pending, why, sizeof why, err, sizeof err),
                     FOLLOW_NONE);
    assert_int_equal(pending, 0);
    sprintf(tmp, "%s/day-0.h5.tmp", dir); /* a writer's temporary: not the first file */
    write_day(tmp, 0, 0);
    sprintf(from, "%s/first.in/day-0.h5", g_dir);
    sprintf(to, "%s/day-0.h5", dir);
    write_day(from, 0, 0);
    pid_t pid = later(0.3, from, to);
    double waited;
    int rc = follow(&s, pattern, GUARD, &waited, err, sizeof err);
    reap(pid);
    if (rc != FOLLOW_NEW)
        fail_msg("rc %d: %s", rc, err);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.f[0].path, to);
    assert_int_equal(s.f[0].t_first, T0);
    stream_files_close(&s);
}

static void test_truncated_then_complete(void **state)
{
    (void)state;
    struct stream_files s;
    char dir[128], pattern[160], full[256], to[256], path[256], err[4400];
    make_stream("trunc", 2, &s, dir, pattern);
    sprintf(full, "%s.in/day-2.h5", dir);
    sprintf(to, "%s/day-2.h5", dir);
    write_day(full, 2, 0);
    truncated_copy(full, to);
    /* temporaries sorting first: never looked at (a truncated one each) */
    sprintf(path, "%s/day-1.h5.tmp.4242", dir);
    truncated_copy(full, path);
    sprintf(path, "%s/day-1.h5.tmp", dir);
    truncated_copy(full, path);
    sprintf(path, "%s/.day-1.h5", dir);
    truncated_copy(full, path);
    /* one look (a job's rank 0): not complete, and why, naming it */
    int pending;
    char why[2048];
    assert_int_equal(stream_follow_look(&s, pattern, &pending, why, sizeof why, err, sizeof err),
                     FOLLOW_NONE);
    assert_int_equal(pending, 1);
    assert_non_null(strstr(why, to));
    double waited;
    int rc = follow(&s, pattern, 0.3, &waited, err, sizeof err);
    assert_int_equal(rc, FOLLOW_ERROR);
    print_message("refused: %s\n", err);
    assert_non_null(strstr(err, to));
    assert_non_null(strstr(err, "still not complete"));
    assert_true(waited >= 0.3);
    assert_int_equal(s.n, 2); /* not opened into the stream */
    /* the full file renamed over it */
    pid_t pid = later(0.2, full, to);
    rc = follow(&s, pattern, GUARD, &waited, err, sizeof err);
    reap(pid);
    if (rc != FOLLOW_NEW)
        fail_msg("rc %d: %s", rc, err);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.f[2].path, to);
    assert_int_equal(s.f[2].num_events, USERS * PER);
    stream_files_close(&s);
}

/* Set day file path's attribute `complete` to v (-1: delete it), in place. */
static void set_marker(const char *path, int64_t v)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    if (v < 0) {
        assert_true(H5Adelete(f, DATASET_COMPLETE_ATTR) >= 0);
    } else {
        hid_t a = H5Aopen(f, DATASET_COMPLETE_ATTR, H5P_DEFAULT);
        if (a < 0) {
            hid_t sp = H5Screate(H5S_SCALAR);
            a = H5Acreate2(f, DATASET_COMPLETE_ATTR, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
            H5Sclose(sp);
        }
        assert_true(a >= 0);
        assert_true(H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0);
        H5Aclose(a);
    }
    assert_true(H5Fclose(f) >= 0);
}

static void test_in_place_marker(void **state)
{
    (void)state;
    struct stream_files s;
    char dir[128], pattern[160], path[256], err[4400];
    make_stream("inplace", 2, &s, dir, pattern);
    sprintf(path, "%s/day-2.h5", dir);
    write_day(path, 2, 0);
    double waited;
    /* the count wrong: still being written */
    set_marker(path, 2);
    int rc = follow(&s, pattern, 0.2, &waited, err, sizeof err);
    assert_int_equal(rc, FOLLOW_ERROR);
    print_message("refused: %s\n", err);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "complete = 2, but it holds 15 events"));
    /* missing, while the stream's files have it */
    set_marker(path, -1);
    rc = follow(&s, pattern, 0.2, &waited, err, sizeof err);
    assert_int_equal(rc, FOLLOW_ERROR);
    print_message("refused: %s\n", err);
    assert_non_null(strstr(err, "has no root attribute complete yet"));
    assert_int_equal(s.n, 2);
    /* set last, as a writer in place does: taken */
    set_marker(path, USERS * PER);
    rc = follow(&s, pattern, GUARD, &waited, err, sizeof err);
    if (rc != FOLLOW_NEW)
        fail_msg("rc %d: %s", rc, err);
    assert_int_equal(s.n, 3);
    stream_files_close(&s);
    /* a stream whose files lack the attribute (older writers) takes a new
     * file without it: such files are renamed into place */
    for (int d = 0; d < 3; d++) {
        sprintf(path, "%s/day-%d.h5", dir, d);
        set_marker(path, -1);
    }
    assert_int_equal(stream_files_open(&s, pattern, 0, err, sizeof err), 0);
    sprintf(path, "%s/day-3.h5", dir);
    write_day(path, 3, 0);
    set_marker(path, -1);
    rc = follow(&s, pattern, GUARD, &waited, err, sizeof err);
    if (rc != FOLLOW_NEW)
        fail_msg("rc %d: %s", rc, err);
    assert_int_equal(s.n, 4);
    stream_files_close(&s);
}

static void test_refusals(void **state)
{
    (void)state;
    struct stream_files s;
    char dir[128], pattern[160], path[256], err[4400];
    make_stream("refuse", 3, &s, dir, pattern);
    double waited;
    /* a new name sorting before the last file: late */
    sprintf(path, "%s/day-1b.h5", dir);
    write_day(path, 1, SPAN / 2);
    int rc = follow(&s, pattern, GUARD, &waited, err, sizeof err);
    assert_int_equal(rc, FOLLOW_ERROR);
    print_message("refused: %s\n", err);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "sorts before the last file trained"));
    assert_int_equal(unlink(path), 0);
    /* overlapping the last file (day 2's events again, from inside its range) */
    sprintf(path, "%s/day-3.h5", dir);
    write_day(path, 2, 20);
    rc = follow(&s, pattern, GUARD, &waited, err, sizeof err);
    assert_int_equal(rc, FOLLOW_ERROR);
    print_message("refused: %s\n", err);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "overlaps the file before it"));
    /* older than the last file */
    write_day(path, 0, 0);
    rc = follow(&s, pattern, GUARD, &waited, err, sizeof err);
    assert_int_equal(rc, FOLLOW_ERROR);
    print_message("refused: %s\n", err);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "is older than the file before it"));
    assert_int_equal(s.n, 3);
    /* fixed: day 3 itself */
    write_day(path, 3, 0);
    rc = follow(&s, pattern, GUARD, &waited, err, sizeof err);
    assert_int_equal(rc, FOLLOW_NEW);
    assert_int_equal(s.n, 4);
    stream_files_close(&s);
}

static void on_usr1(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void test_timeout_and_stop(void **state)
{
    (void)state;
    struct stream_files s;
    char dir[128], pattern[160], err[4400];
    make_stream("stop", 1, &s, dir, pattern);
    int pending = 1;
    char why[256];
    assert_int_equal(stream_follow_look(&s, pattern, &pending, why, sizeof why, err, sizeof err),
                     FOLLOW_NONE);
    assert_int_equal(pending, 0); /* no next name at all */
    double waited;
    int rc = follow(&s, pattern, 0.25, &waited, err, sizeof err);
    assert_int_equal(rc, FOLLOW_TIMEOUT);
    assert_true(waited >= 0.25);
    /* the stop flag set by a signal handler while waiting (forever) */
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    g_stop = 0;
    pid_t pid = later(0.3, NULL, NULL);
    const struct stream_follow forever = {pattern, 0, 10.0, &g_stop}; /* a long poll: the nap */
    rc = stream_follow_next(&s, &forever, &waited, err, sizeof err);
    reap(pid);
    assert_int_equal(rc, FOLLOW_STOP);
    assert_true(waited < GUARD);
    /* already set: stops before looking */
    rc = stream_follow_next(&s, &forever, &waited, err, sizeof err);
    assert_int_equal(rc, FOLLOW_STOP);
    assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
    g_stop = 0;
    assert_int_equal(s.n, 1);
    stream_files_close(&s);
}

static void test_writer_renames(void **state)
{
    (void)state;
    char dir[128], path[256];
    sprintf(dir, "%s/writer", g_dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    sprintf(path, "%s/day-0.h5", dir);
    write_day(path, 0, 0);
    /* only the final name: the temporary was renamed */
    char cmd[300];
    sprintf(cmd, "test \"$(ls -A '%s')\" = day-0.h5", dir);
    assert_int_equal(system(cmd), 0);
    char err[4400];
    assert_int_equal(stream_follow_complete(path, 1, err, sizeof err), 1);
}

static void test_parse(void **state)
{
    (void)state;
    char err[512], buf[64];
    double v;
    const char *good[] = {"0", "3600", "0.5", "30s", "10m", "1h", "2d", "1.5h", "2w"};
    const double want[] = {0, 3600, 0.5, 30, 600, 3600, 172800, 5400, 1209600};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        assert_int_equal(stream_duration_parse("train.follow_timeout", good[i], &v, err,
                                               sizeof err), 0);
        assert_true(v == want[i]);
    }
    const char *bad[] = {"", "-1", "1x", "10mm", "h", "nan", "inf", "1e400", " 5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(stream_duration_parse("train.follow_timeout", bad[i], &v, err,
                                               sizeof err), -1);
        assert_non_null(strstr(err, "train.follow_timeout = '"));
    }
    assert_int_equal(stream_follow_pattern("a.h5,logs/day-*.h5", buf, sizeof buf, err,
                                           sizeof err), 0);
    assert_string_equal(buf, "logs/day-*.h5");
    assert_int_equal(stream_follow_pattern("logs/*,b.h5", buf, sizeof buf, err, sizeof err), -1);
    assert_non_null(strstr(err, "needs its last element to be a glob"));
}

static int setup(void **state)
{
    (void)state;
    return tmpdir_make("stream_follow");
}

static int teardown(void **state)
{
    (void)state;
    return tmpdir_remove();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rename_picked_up),
        cmocka_unit_test(test_first_file),
        cmocka_unit_test(test_truncated_then_complete),
        cmocka_unit_test(test_in_place_marker),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_timeout_and_stop),
        cmocka_unit_test(test_writer_renames),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
