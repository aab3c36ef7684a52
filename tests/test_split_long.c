/* test_split_long: the pieces of parallel.split_long (balance/split_long.c)
 * against their definition: pieces cover every sequence exactly once in
 * order; a whole sequence costs c(L); chunk boundaries split G(p) = a p +
 * b p^2 evenly (later chunks shorter); the threshold, the P cap and the
 * one-tile minimum are honoured; debug.split_chunks forces k chunks of at
 * least one position; the key/value rows between ranks are counted; a
 * threshold below one tile's cost is refused; on ranking's grid (contextual
 * tokens, two tokens an event) every boundary lies on an event. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "balance/split_long.h"

static const struct cost_model cm = {.c0 = 10, .a = 100, .b = 1};

/* every sequence of len[] once, contiguous pieces in order */
static void check_cover(const struct split_pieces *sp, const int64_t *len, int64_t n)
{
    int64_t i = 0;
    for (int64_t s = 0; s < n; s++) {
        assert_true(i < sp->n);
        int k = sp->pc[i].nchunks;
        for (int j = 0; j < k; j++, i++) {
            const struct piece *p = &sp->pc[i];
            assert_int_equal(p->seq, s);
            assert_int_equal(p->chunk, j);
            assert_int_equal(p->nchunks, k);
            assert_int_equal(p->p0, j ? sp->pc[i - 1].p1 : 0);
            assert_true(p->p1 > p->p0);
        }
        assert_int_equal(sp->pc[i - 1].p1, len[s]);
    }
    assert_int_equal(i, sp->n);
}

static void test_off_and_whole(void **state)
{
    (void)state;
    struct split_conf sc = {.on = 0, .fraction = 0.5, .min_chunk = 64};
    int64_t len[4] = {5, 4000, 70, 1};
    struct split_pieces sp = {0};
    split_plan(&sc, &cm, len, 4, 8, &sp);
    assert_int_equal(sp.n, 4);
    assert_int_equal(sp.nsplit, 0);
    check_cover(&sp, len, 4);
    for (int i = 0; i < 4; i++)
        assert_true(fabs(sp.cost[i] - cost_of(&cm, len[i])) <= 1e-9 * sp.cost[i]);
    assert_true(fabs(split_piece_cost(&sc, &cm, 0, 4000) - cost_of(&cm, 4000)) < 1e-6);
    split_free(&sp);
}

static void test_cuts(void **state)
{
    (void)state;
    struct split_conf sc = {.on = 1, .fraction = 0.5, .min_chunk = 64, .kv_cost = 3};
    int64_t len[5] = {4000, 50, 60, 2000, 100};
    struct split_pieces sp = {0};
    double total = 0;
    for (int i = 0; i < 5; i++)
        total += cost_of(&cm, len[i]);
    const int P = 4;
    const double theta = 0.5 * total / P;
    split_plan(&sc, &cm, len, 5, P, &sp);
    check_cover(&sp, len, 5);
    for (int64_t i = 0; i < sp.n; i++) {
        const struct piece *p = &sp.pc[i];
        int64_t L = len[p->seq];
        double c = cost_of(&cm, L);
        if (p->nchunks == 1) {
            assert_true(!(c > theta) || L < 128);
            continue;
        }
        assert_true(c > theta);
        assert_true(p->nchunks <= P);
        assert_true(p->nchunks == P || p->nchunks == (int)ceil(c / theta));
        assert_true(p->p1 - p->p0 >= 64);
        /* equal shares of G, to a position */
        double G = cm.a * (double)L + cm.b * (double)L * L;
        double g1 = cm.a * (double)p->p1 + cm.b * (double)p->p1 * p->p1;
        double g0 = cm.a * (double)(p->p1 - 1) + cm.b * (double)(p->p1 - 1) * (p->p1 - 1);
        if (p->chunk + 1 < p->nchunks)
            assert_true(g0 <= G * (p->chunk + 1) / p->nchunks + 1e-9 &&
                        G * (p->chunk + 1) / p->nchunks <= g1 + 2 * cm.a + 4 * cm.b * L);
        if (p->chunk > 0) /* later chunks no longer */
            assert_true(p->p1 - p->p0 <= sp.pc[i - 1].p1 - sp.pc[i - 1].p0);
        assert_true(fabs(sp.cost[i] - split_piece_cost(&sc, &cm, p->p0, p->p1)) < 1e-6);
    }
    assert_int_equal(sp.nsplit, 2); /* 4000 and 2000 */
    /* the chunks of one sequence add up to its cost, plus a c0 per extra
     * chunk and the key/value rows received */
    double sum = 0, kv = 0;
    for (int64_t i = 0; i < sp.n && sp.pc[i].seq == 0; i++) {
        sum += sp.cost[i];
        kv += sc.kv_cost * (double)sp.pc[i].p0;
    }
    int k = sp.pc[0].nchunks;
    assert_true(fabs(sum - cost_of(&cm, 4000) - (k - 1) * cm.c0 - kv) < 1e-6 * sum);
    /* key/value rows: all on one rank -> none; alternating -> earlier rows to each later chunk */
    int owner[64] = {0};
    assert_int_equal(split_p2p_rows(&sp, owner), 0);
    for (int64_t i = 0; i < sp.n; i++)
        owner[i] = (int)(i % 2);
    int64_t want = 0;
    for (int64_t i = 0; i < sp.n; i++)
        for (int j = sp.pc[i].chunk + 1; j < sp.pc[i].nchunks; j++)
            want += owner[i + j - sp.pc[i].chunk] != owner[i] ? sp.pc[i].p1 - sp.pc[i].p0 : 0;
    assert_true(want > 0);
    assert_int_equal(split_p2p_rows(&sp, owner), want);
    /* one rank: nothing is cut */
    split_plan(&sc, &cm, len, 5, 1, &sp);
    assert_int_equal(sp.nsplit, 0);
    split_free(&sp);
}

static void test_min_chunk_and_force(void **state)
{
    (void)state;
    /* 150 positions: 2 chunks of >= 64 fit only if the later one is long enough */
    struct split_conf sc = {.on = 1, .threshold = 1, .min_chunk = 64};
    int64_t len[3] = {150, 127, 3};
    struct split_pieces sp = {0};
    split_plan(&sc, &cm, len, 3, 16, &sp);
    check_cover(&sp, len, 3);
    for (int64_t i = 0; i < sp.n; i++)
        assert_true(sp.pc[i].nchunks == 1 || sp.pc[i].p1 - sp.pc[i].p0 >= 64);
    assert_int_equal(sp.pc[sp.n - 1].nchunks, 1); /* 127 < 2 tiles */
    sc.force = 3; /* every sequence into 3 (the 3-long one into 3 of one) */
    split_plan(&sc, &cm, len, 3, 2, &sp);
    check_cover(&sp, len, 3);
    assert_int_equal(sp.n, 9);
    assert_int_equal(sp.nsplit, 3);
    int64_t one[1] = {2};
    split_plan(&sc, &cm, one, 1, 2, &sp); /* only 2 positions: 2 chunks */
    assert_int_equal(sp.n, 2);
    split_free(&sp);
}

static void test_check(void **state)
{
    (void)state;
    char err[256];
    struct split_conf sc = {.on = 1, .threshold = 100, .min_chunk = 64};
    assert_int_equal(split_check(&sc, &cm, err, sizeof err), -1);
    assert_non_null(strstr(err, "parallel.split_threshold"));
    sc.threshold = split_piece_cost(&sc, &cm, 0, 64);
    assert_int_equal(split_check(&sc, &cm, err, sizeof err), 0);
    sc.threshold = 0; /* relative: always accepted */
    assert_int_equal(split_check(&sc, &cm, err, sizeof err), 0);
}

/* ranking's grid (head contextual tokens, step tokens an event): every
 * boundary on head + step j, j >= 1; forced chunks capped at the events;
 * auto cuts on the grid too */
static void test_grid(void **state)
{
    (void)state;
    int64_t len[4] = {3 + 2 * 5, 3 + 2 * 1, 3 + 2 * 2, 3 + 2 * 3000};
    struct split_pieces sp = {0};
    for (int force = 2; force <= 6; force++) {
        struct split_conf sc = {.on = 1, .fraction = 0.5, .min_chunk = 64, .force = force,
                                .head = 3, .step = 2};
        split_plan(&sc, &cm, len, 4, 8, &sp);
        check_cover(&sp, len, 4);
        const int64_t events[4] = {5, 1, 2, 3000};
        for (int64_t i = 0; i < sp.n; i++) {
            const struct piece *p = &sp.pc[i];
            const int64_t want = force < events[p->seq] ? force : events[p->seq];
            assert_int_equal(p->nchunks, want);
            if (p->p0 > 0) /* on an event's first token */
                assert_true(p->p0 >= 5 && (p->p0 - 3) % 2 == 0);
        }
    }
    struct split_conf sc = {.on = 1, .threshold = 0, .fraction = 0.5, .min_chunk = 64,
                            .head = 7, .step = 2};
    int64_t big[3] = {7 + 2 * 4000, 7 + 2 * 10, 7 + 2 * 20};
    split_plan(&sc, &cm, big, 3, 4, &sp);
    check_cover(&sp, big, 3);
    assert_true(sp.nsplit == 1 && sp.pc[0].nchunks > 1);
    for (int j = 1; j < sp.pc[0].nchunks; j++)
        assert_true((sp.pc[j].p0 - 7) % 2 == 0 && sp.pc[j].p0 >= 9);
    split_free(&sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_and_whole), cmocka_unit_test(test_cuts),
        cmocka_unit_test(test_min_chunk_and_force), cmocka_unit_test(test_check),
        cmocka_unit_test(test_grid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
