/* test_params: the parameter table, INI files through inih, overrides, and
 * every class of error with its file:line and message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/params.h"

static char g_path[64];

/* Write text to a fresh temporary file (path in g_path). */
static const char *file_with(const char *text)
{
    snprintf(g_path, sizeof g_path, "/tmp/fs-test-params-XXXXXX");
    int fd = mkstemp(g_path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return g_path;
}

/* The same with n bytes (which may hold NUL). */
static const char *file_with_bytes(const char *bytes, size_t n)
{
    snprintf(g_path, sizeof g_path, "/tmp/fs-test-params-XXXXXX");
    int fd = mkstemp(g_path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, n), (ssize_t)n);
    close(fd);
    return g_path;
}

/* Reading text must fail with an error containing want (after "PATH:"). */
static void expect_file_error(const char *text, const char *want)
{
    struct params p;
    char err[PARAM_ERR_MAX];
    params_defaults(&p);
    const char *path = file_with(text);
    int rc = params_read_file(&p, path, err, sizeof err);
    unlink(path);
    if (rc != -1 || strncmp(err, path, strlen(path)) || !strstr(err, want))
        fail_msg("expected error '%s', got rc=%d '%s'", want, rc, rc ? err : "");
}

static void test_defaults(void **state)
{
    (void)state;
    struct params p;
    params_defaults(&p);
    assert_int_equal(params_i64(&p, P_data_max_seq_len), 200);
    assert_int_equal(params_i64(&p, P_model_dim), 50);
    assert_string_equal(params_str(&p, P_model_type), "hstu");
    assert_int_equal(params_i64(&p, P_model_type), 0);
    assert_true(params_f64(&p, P_train_lr) == 1e-3);
    assert_int_equal(params_i64(&p, P_data_timestamps), 1);
    assert_string_equal(params_str(&p, P_data_path), "");
    for (int i = 0; i < P_COUNT; i++)
        assert_string_equal(p.origin[i], "");
}

static void test_good_file(void **state)
{
    (void)state;
    struct params p;
    char err[PARAM_ERR_MAX];
    params_defaults(&p);
    const char *path = file_with("# comment\n; other comment\n\n[data]\n"
                                 "path = data/ml-1m.h5\nmax_seq_len = 1e3   # inline\n"
                                 "[model]\ntype = sasrec  # hstu | sasrec\n"
                                 "dropout=0.25\n[train]\nlr = 2.5e-4\n[data]\ntimestamps = Off\n");
    int rc = params_read_file(&p, path, err, sizeof err);
    if (rc)
        fail_msg("%s", err);
    assert_string_equal(params_str(&p, P_data_path), "data/ml-1m.h5");
    assert_int_equal(params_i64(&p, P_data_max_seq_len), 1000);
    assert_string_equal(params_str(&p, P_model_type), "sasrec");
    assert_int_equal(params_i64(&p, P_model_type), 1);
    assert_true(params_f64(&p, P_model_dropout) == 0.25);
    assert_true(params_f64(&p, P_train_lr) == 2.5e-4);
    assert_int_equal(params_i64(&p, P_data_timestamps), 0);
    char where[128];
    snprintf(where, sizeof where, "%s:6", path);
    assert_string_equal(p.origin[P_data_max_seq_len], where);
    unlink(path);
}

static void test_unknown_names(void **state)
{
    (void)state;
    expect_file_error("[train]\nlr = 1e-3\nlrr = 1\n",
                      ":3: unknown key 'lrr' in section [train]; did you mean 'train.lr'?");
    expect_file_error("[trian]\nlr = 1\n",
                      ":2: unknown section [trian] (key 'lr'); did you mean [train]?");
    expect_file_error("[model]\nbatch_size = 1\n",
                      ":2: unknown key 'batch_size' in section [model]; did you mean "
                      "'train.batch_size'?");
    expect_file_error("[model]\nlr = 1\n",
                      ":2: unknown key 'lr' in section [model]; did you mean 'train.lr' or "
                      "'embedding.lr' or 'features.lr'?");
    expect_file_error("[model]\nzzzzzz = 1\n", "valid keys in [model]: type dim layers");
    expect_file_error("lr = 1\n", ":1: key 'lr' outside any [section]");
}

static void test_bad_values(void **state)
{
    (void)state;
    expect_file_error("[model]\ndim = abc\n", ":2: model.dim = 'abc': not an integer");
    expect_file_error("[model]\ndim = 12.5\n", ":2: model.dim = '12.5': not an integer");
    expect_file_error("[model]\ntype = bert\n", "model.type = 'bert': expected one of hstu|sasrec");
    expect_file_error("[data]\ntimestamps = maybe\n", "expected on or off");
    expect_file_error("[train]\nlr = nan\n", "train.lr = 'nan': not a finite number");
    expect_file_error("[train]\nlr = \n", "train.lr = '': empty value");
}

static void test_out_of_range(void **state)
{
    (void)state;
    expect_file_error("[model]\n\ndim = 0\n", ":3: model.dim = '0': out of range [1, 65536]");
    expect_file_error("[model]\ndropout = 1.5\n", "model.dropout = '1.5': out of range [0, 0.95]");
    expect_file_error("[train]\nbatch_size = -4\n", "out of range");
    expect_file_error("[train]\nepochs = 99999999999999999999\n", "not an integer");
}

static void test_syntax(void **state)
{
    (void)state;
    expect_file_error("[train]\nlr = 1e-3\nlr = 2e-3\n",
                      ":3: duplicate key 'lr' in section [train] (first set at line 2)");
    expect_file_error("[model]\ndim = 8\n[train\nlr = 1\n",
                      ":3: unterminated section header '[train' (expected '[name]')");
    expect_file_error("[model]\njust words\n", ":2: expected 'key = value'");
    char longline[400] = "[data]\npath = ";
    memset(longline + strlen(longline), 'x', 250);
    expect_file_error(longline, ":2: line longer than");
    /* a NUL byte would silently cut the value: refused with its line */
    static const char nul[] = "[model]\ndim = 8\n[data]\npath = a\0b.h5\n";
    struct params pn;
    char errn[PARAM_ERR_MAX];
    params_defaults(&pn);
    const char *pathn = file_with_bytes(nul, sizeof nul - 1);
    int rcn = params_read_file(&pn, pathn, errn, sizeof errn);
    unlink(pathn);
    if (rcn != -1 || !strstr(errn, ":4: a NUL byte in the line"))
        fail_msg("a NUL byte: got rc=%d '%s'", rcn, rcn ? errn : "");
    struct params p;
    char err[PARAM_ERR_MAX];
    params_defaults(&p);
    assert_int_equal(params_read_file(&p, "/nonexistent/x.in", err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/x.in: cannot open parameter file"));
}

static void test_overrides(void **state)
{
    (void)state;
    struct params p;
    char err[PARAM_ERR_MAX];
    params_defaults(&p);
    assert_int_equal(params_override(&p, "train.lr=0.5", "command line", err, sizeof err), 0);
    assert_true(params_f64(&p, P_train_lr) == 0.5);
    assert_string_equal(p.origin[P_train_lr], "command line");
    assert_int_equal(params_override(&p, "train.lrr=1", "command line", err, sizeof err), -1);
    assert_non_null(strstr(err, "command line: unknown key 'lrr' in section [train]; did you mean"));
    assert_int_equal(params_override(&p, "train.lr", "command line", err, sizeof err), -1);
    assert_non_null(strstr(err, "is not of the form section.key=value"));
    assert_int_equal(params_override(&p, "model.heads=0", "command line", err, sizeof err), -1);
    assert_non_null(strstr(err, "model.heads = '0': out of range"));
}

/* The dump of effective parameters is itself a valid parameter file that
 * gives the same values. */
static void test_dump_roundtrip(void **state)
{
    (void)state;
    struct params p, q;
    char err[PARAM_ERR_MAX];
    params_defaults(&p);
    assert_int_equal(params_override(&p, "model.type=sasrec", "x", err, sizeof err), 0);
    assert_int_equal(params_override(&p, "train.lr=0.1", "x", err, sizeof err), 0);
    assert_int_equal(params_override(&p, "data.path=a b/c.h5", "x", err, sizeof err), 0);
    snprintf(g_path, sizeof g_path, "/tmp/fs-test-dump-XXXXXX");
    int fd = mkstemp(g_path);
    FILE *f = fdopen(fd, "w");
    params_dump(&p, f);
    fclose(f);
    params_defaults(&q);
    int rc = params_read_file(&q, g_path, err, sizeof err);
    unlink(g_path);
    if (rc)
        fail_msg("%s", err);
    char *a = params_serialize(&p), *b = params_serialize(&q);
    assert_string_equal(a, b);
    free(a);
    free(b);
}

static void test_help_lists_everything(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    params_help(f);
    fclose(f);
    for (int i = 0; i < P_COUNT; i++) {
        assert_non_null(strstr(buf, param_defs[i].key));
        assert_non_null(strstr(buf, param_defs[i].help));
    }
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),       cmocka_unit_test(test_good_file),
        cmocka_unit_test(test_unknown_names),  cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_out_of_range),   cmocka_unit_test(test_syntax),
        cmocka_unit_test(test_overrides),      cmocka_unit_test(test_dump_roundtrip),
        cmocka_unit_test(test_help_lists_everything),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
