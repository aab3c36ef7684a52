/* test_dataset_bad: malformed HDF5 datasets, made here with the HDF5 API,
 * are each refused with their own message naming the file, the dataset and
 * the first bad index. */
#include <hdf5.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "data/dataset.h"
#include "ckpt/ckpt.h"

/* A small valid file: 3 users with 2, 0 and 3 events, 5 items. Each field
 * can be spoiled before writing. */
struct spec {
    const char *format;
    int64_t version, num_items, num_users;
    int omit_attr;            /* 1: no num_items attribute */
    int64_t offsets[5];
    int64_t n_offsets;
    int64_t items[5];
    int items_as_double;      /* /item_ids stored as float64 */
    int64_t ts[5];
    int with_ts;
    int omit_items;
};

static struct spec good(void)
{
    struct spec s = {.format = "freescale-seq", .version = 1, .num_items = 5, .num_users = 3,
                     .offsets = {0, 2, 2, 5}, .n_offsets = 4, .items = {1, 2, 5, 3, 4},
                     .ts = {10, 20, 5, 5, 6}, .with_ts = 1};
    return s;
}

static char g_path[64];

static void put_attr_i64(hid_t f, const char *name, int64_t v)
{
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0);
    H5Aclose(a);
    H5Sclose(sp);
}

static void put_i64(hid_t f, const char *name, const int64_t *v, int64_t n, int as_double)
{
    hsize_t dim = (hsize_t)n;
    hid_t sp = H5Screate_simple(1, &dim, NULL);
    double dv[8];
    for (int64_t i = 0; i < n; i++)
        dv[i] = (double)v[i];
    hid_t d = H5Dcreate2(f, name, as_double ? H5T_IEEE_F64LE : H5T_STD_I64LE, sp, H5P_DEFAULT,
                         H5P_DEFAULT, H5P_DEFAULT);
    assert_true(d >= 0);
    assert_true(H5Dwrite(d, as_double ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64, H5S_ALL, H5S_ALL,
                         H5P_DEFAULT, as_double ? (void *)dv : (void *)v) >= 0);
    H5Dclose(d);
    H5Sclose(sp);
}

static const char *make_file(const struct spec *s)
{
    snprintf(g_path, sizeof g_path, "/tmp/fs-test-bad-XXXXXX");
    int fd = mkstemp(g_path);
    assert_true(fd >= 0);
    close(fd);
    hid_t f = H5Fcreate(g_path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(s->format));
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, "format", t, sp, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0 && H5Awrite(a, t, s->format) >= 0);
    H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
    put_attr_i64(f, "version", s->version);
    if (!s->omit_attr)
        put_attr_i64(f, "num_items", s->num_items);
    put_attr_i64(f, "num_users", s->num_users);
    put_i64(f, "/offsets", s->offsets, s->n_offsets, 0);
    if (!s->omit_items)
        put_i64(f, "/item_ids", s->items, 5, s->items_as_double);
    if (s->with_ts)
        put_i64(f, "/timestamps", s->ts, 5, 0);
    assert_true(H5Fclose(f) >= 0);
    return g_path;
}

/* Opening and validating s must fail with an error that starts with the
 * path and contains want. */
static void expect_error(const struct spec *s, const char *want)
{
    const char *path = make_file(s);
    struct dataset ds;
    char err[1024] = "";
    int rc = dataset_open(&ds, path, err, sizeof err);
    if (rc == 0) {
        rc = dataset_validate(&ds, err, sizeof err);
        dataset_close(&ds);
    }
    unlink(path);
    if (rc != -1 || strncmp(err, path, strlen(path)) || !strstr(err, want))
        fail_msg("expected '%s', got rc=%d '%s'", want, rc, err);
}

static void test_good_is_accepted(void **state)
{
    (void)state;
    struct spec s = good();
    const char *path = make_file(&s);
    struct dataset ds;
    char err[1024];
    assert_int_equal(dataset_open(&ds, path, err, sizeof err), 0);
    assert_int_equal(dataset_validate(&ds, err, sizeof err), 0);
    assert_int_equal(ds.num_events, 5);
    assert_true(ds.has_timestamps);
    dataset_close(&ds);
    unlink(path);
}

static void test_attributes(void **state)
{
    (void)state;
    struct spec s = good();
    s.omit_attr = 1;
    expect_error(&s, "missing attribute 'num_items' on /");
    s = good();
    s.format = "something-else";
    expect_error(&s, "attribute format = 'something-else', expected 'freescale-seq'");
    s = good();
    s.version = 4;
    expect_error(&s, "attribute version = 4, this program reads versions 1, 2 and 3");
    s = good();
    s.version = 3; /* raw ids: needs the ids attribute and /items/ids */
    expect_error(&s, "attribute ids = '(none)' with version = 3");
}

static void test_types_and_shapes(void **state)
{
    (void)state;
    struct spec s = good();
    s.items_as_double = 1;
    expect_error(&s, "/item_ids has type float64, expected int64");
    s = good();
    s.omit_items = 1;
    expect_error(&s, "missing dataset /item_ids");
    s = good();
    s.n_offsets = 3;
    expect_error(&s, "/offsets has 3 elements, expected 4");
}

static void test_offsets(void **state)
{
    (void)state;
    struct spec s = good();
    s.offsets[1] = 3;
    s.offsets[2] = 2;
    expect_error(&s, "/offsets decreases at index 2 (2 after 3)");
    s = good();
    s.offsets[0] = 1;
    expect_error(&s, "/offsets[0] = 1, expected 0");
    s = good();
    s.offsets[3] = 4;
    expect_error(&s, "/offsets[3] = 4, expected the event count 5");
}

static void test_ids_and_times(void **state)
{
    (void)state;
    struct spec s = good();
    s.items[3] = 0;
    expect_error(&s, "/item_ids[3] = 0, outside 1..5");
    s = good();
    s.items[4] = 6;
    expect_error(&s, "/item_ids[4] = 6, outside 1..5");
    s = good();
    s.ts[4] = 4; /* user 2: 5, 5, 4 */
    expect_error(&s, "/timestamps[4] = 4 decreases within user 2");
}

static void test_truncated_and_missing(void **state)
{
    (void)state;
    /* a real dataset, cut in half */
    char path[96], err[1024];
    snprintf(path, sizeof path, "/tmp/fs-test-trunc-%ld.h5", (long)getpid());
    struct dataset_writer *w = dataset_writer_open(path, 1, 0, err, sizeof err);
    assert_non_null(w);
    enum { N = 100000 };
    int64_t *items = malloc(N * sizeof *items), *ts = malloc(N * sizeof *ts), len = N;
    for (int64_t i = 0; i < N; i++) {
        items[i] = 1 + (i * 7919) % 1000;
        ts[i] = i;
    }
    assert_int_equal(dataset_writer_append(w, 1, &len, items, ts, NULL, err, sizeof err), 0);
    assert_int_equal(dataset_writer_close(w, 1000, err, sizeof err), 0);
    free(items);
    free(ts);
    FILE *f = fopen(path, "r+");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_int_equal(truncate(path, size / 2), 0);
    struct dataset ds;
    int rc = dataset_open(&ds, path, err, sizeof err);
    unlink(path);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "not a readable HDF5 file (truncated or corrupt?)"));
    assert_int_equal(dataset_open(&ds, "/nonexistent/d.h5", err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/d.h5: cannot open dataset: No such file"));
}

/* The inputs that once hung or crashed HDF5 1.10 (tests/fuzz/hdf5-crashes/README),
 * kept among the fuzz seeds: each refused with the file and the object named, before
 * HDF5 reads what is damaged; a healthy checkpoint with dense groups still verifies. */
static void test_damaged_storage(void **state)
{
    (void)state;
    static const struct {
        const char *file, *want;
    } cases[] = {
        {"dataset/dataset-vlen-format-global-heap.h5",
         "attribute 'format' on /: its global heap collection at 9960 has an object larger"},
        {"dataset/dataset-vlen-format-global-heap-hang.h5",
         "attribute 'format' on /: its global heap collection at 9960 has an object of size 0"},
        {"dataset/dataset-offsets-short-storage.h5",
         "/offsets: the chunk at [0] stores 18 bytes, expected 56"},
        {"dataset/dataset-root-attribute-message-overread.h5",
         "/: an attribute message of its object header has a name, type or space that"},
        {"checkpoint/checkpoint-dense-links-fractal-heap.h5", "group /dense cannot be listed"},
        {"checkpoint/hstu-adagrad-dense-links.h5", NULL},
    };
    const char *top = getenv("srcdir") ? getenv("srcdir") : ".";
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char path[4096], err[1024] = "";
        snprintf(path, sizeof path, "%s/tests/fuzz/seeds/%s", top, cases[i].file);
        struct dataset ds;
        int rc = strncmp(cases[i].file, "dataset/", 8)
                     ? checkpoint_verify(path, err, sizeof err)
                     : dataset_open(&ds, path, err, sizeof err);
        print_message("%s: %s\n", cases[i].file, rc ? err : "accepted");
        assert_int_equal(rc, cases[i].want ? -1 : 0);
        if (cases[i].want) {
            assert_non_null(strstr(err, path));
            assert_non_null(strstr(err, cases[i].want));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_is_accepted), cmocka_unit_test(test_attributes),
        cmocka_unit_test(test_types_and_shapes), cmocka_unit_test(test_offsets),
        cmocka_unit_test(test_ids_and_times),    cmocka_unit_test(test_truncated_and_missing),
        cmocka_unit_test(test_damaged_storage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
