/* test_split_ranking: the per-user boundaries of the ranking splits
 * (data/split_ranking.c) against their definition in integers: last:K holds
 * out min(K, L) test events and as many validation events before them;
 * last:P% takes K = floor(P x L / 100), at least 1, for every whole P of
 * 1..49 and every L of 1..3000 (0.29 x 100 is 28.999.. in doubles: the
 * floor must still be 29), and a fractional P (12.5); loo is last:1.
 * Users with at least one training event train; users with candidates of
 * a split evaluate. Bad texts are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "data/split_ranking.h"

#define MAXL 3000

/* a dataset of users with lengths 1..n (offsets only: all rsplit_bounds reads) */
static struct dataset *lengths(int64_t n)
{
    struct dataset *ds = calloc(1, sizeof *ds);
    int64_t *off = malloc((size_t)(n + 1) * sizeof *off);
    assert_non_null(ds);
    assert_non_null(off);
    off[0] = 0;
    for (int64_t u = 0; u < n; u++)
        off[u + 1] = off[u] + u + 1;
    ds->offsets = off;
    ds->num_users = n;
    return ds;
}

static void drop(struct dataset *ds)
{
    free(ds->offsets);
    free(ds);
}

/* user u (length L = u + 1) holds out k test events and k validation ones */
static void expect_k(const struct rsplit *s, const struct dataset *ds, int64_t u, int64_t k)
{
    int64_t L = u + 1, a, b, c0, c1;
    rsplit_bounds(s, ds, u, &a, &b);
    int64_t eb = L - k > 0 ? L - k : 0, ea = L - 2 * k > 0 ? L - 2 * k : 0;
    if (a != ea || b != eb)
        fail_msg("%s, L = %lld: a, b = %lld, %lld, expected %lld, %lld (K = %lld)",
                 "split", (long long)L, (long long)a, (long long)b, (long long)ea, (long long)eb,
                 (long long)k);
    rsplit_candidates(s, ds, 1, u, &c0, &c1);
    assert_int_equal(c0, b);
    assert_int_equal(c1, L);
    rsplit_candidates(s, ds, 0, u, &c0, &c1);
    assert_int_equal(c0, a);
    assert_int_equal(c1, b);
}

static void test_last_pct(void **state)
{
    (void)state;
    struct dataset *ds = lengths(MAXL);
    char err[256], text[32];
    for (int p = 1; p < 50; p++) {
        struct rsplit_conf c;
        struct rsplit s;
        snprintf(text, sizeof text, "last:%d%%", p);
        assert_int_equal(rsplit_parse(text, &c, err, sizeof err), 0);
        assert_int_equal(c.mode, RSPLIT_LAST_PCT);
        assert_int_equal(rsplit_init(&s, &c, ds, err, sizeof err), 0);
        for (int64_t u = 0; u < MAXL; u++) {
            int64_t k = (int64_t)p * (u + 1) / 100;
            expect_k(&s, ds, u, k < 1 ? 1 : k);
        }
        rsplit_free(&s);
    }
    struct rsplit_conf c;
    struct rsplit s;
    assert_int_equal(rsplit_parse("last:12.5%", &c, err, sizeof err), 0);
    assert_int_equal(rsplit_init(&s, &c, ds, err, sizeof err), 0);
    for (int64_t u = 0; u < MAXL; u++) {
        int64_t k = (u + 1) / 8;
        expect_k(&s, ds, u, k < 1 ? 1 : k);
    }
    rsplit_free(&s);
    drop(ds);
}

static void test_last_k_and_loo(void **state)
{
    (void)state;
    struct dataset *ds = lengths(40);
    char err[256];
    struct rsplit_conf c;
    struct rsplit s;
    assert_int_equal(rsplit_parse("last:7", &c, err, sizeof err), 0);
    assert_int_equal(rsplit_init(&s, &c, ds, err, sizeof err), 0);
    for (int64_t u = 0; u < 40; u++)
        expect_k(&s, ds, u, 7);
    int64_t *users, n = rsplit_train_users(&s, ds, &users);
    assert_int_equal(n, 40 - 14); /* L >= 15 */
    assert_int_equal(users[0], 14);
    free(users);
    n = rsplit_eval_users(&s, ds, 0, &users); /* validation: L >= 8 */
    assert_int_equal(n, 40 - 7);
    assert_int_equal(users[0], 7);
    free(users);
    n = rsplit_eval_users(&s, ds, 1, &users); /* test: every user */
    assert_int_equal(n, 40);
    free(users);
    rsplit_free(&s);
    assert_int_equal(rsplit_parse("loo", &c, err, sizeof err), 0);
    assert_int_equal(rsplit_init(&s, &c, ds, err, sizeof err), 0);
    for (int64_t u = 0; u < 40; u++)
        expect_k(&s, ds, u, 1);
    rsplit_free(&s);
    drop(ds);
}

static void test_refused(void **state)
{
    (void)state;
    const char *bad[] = {"last:0", "last:-1", "last:x", "last:0%", "last:50%", "last:%",
                         "last:10%%", "hstu", "time:", "time:5,5", "first:3"};
    char err[256];
    struct rsplit_conf c;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = 0;
        if (rsplit_parse(bad[i], &c, err, sizeof err) != -1)
            fail_msg("data.split = %s accepted", bad[i]);
        if (!strstr(err, "data.split"))
            fail_msg("data.split = %s: message without the parameter: %s", bad[i], err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_last_pct),
        cmocka_unit_test(test_last_k_and_loo),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
