/* test_emb_prefetch: parallel.overlap = prefetch's exchange (emb_exchange.h:
 * emb_prefetch_*) against the blocking one, on P ranks. Two lookups x then
 * y; the reference serves y's rows after x's sparse update
 * (emb_output_post); the prefetch plans y against x before the update,
 * posts the clean rows (or holds them, to post them with the late ones:
 * emb_prefetch_post's hold), then the colliding ones after it. y's rows must be
 * the reference's bit for bit, with
 *   - every id of y colliding (y asks for ids x asked for: nothing comes
 *     ahead), none colliding (disjoint ids: nothing late), and a mix;
 *   - G = P, G = 1 and (P = 4) G = 2: with replicas a row that another
 *     replica's requesters updated collides too;
 *   - fp32 and bf16 rows on the wire;
 *   - the clean rows posted at once and held (the mixed case; the fake
 *     device's: held);
 *   - the table in host memory (every case), and in the fake device's
 *     memory staged (mixed, both codecs) and direct (mixed, fp32);
 * and the counters (wire stats pf_rows, pf_late) agree with the case. */
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "comm/comm.h"
#include "embedding/emb_exchange.h"
#include "emb_steps.h"
#include "mpitest.h"

#define ROWS 997
#define DIM 8
#define NTOK 40

enum { ALL, NONE, MIX };
static const char *case_name[] = {"all collide", "none collide", "mixed"};

/* x's ids: 1..400, duplicated; y's: x's of another rank (ALL), 501..900
 * (NONE), or half of each (MIX). */
static int64_t ids_of(int r, int P, int which, int kase, int64_t *ids)
{
    int64_t n = 0;
    for (int i = 0; i < NTOK / 2; i++) {
        int64_t near = 1 + ((which ? (r + 1) % P : r) * 13 + i * 7) % 400;
        int64_t far = 501 + (r * 11 + i * 5) % 400;
        int64_t id = !which || kase == ALL ? near : kase == NONE ? far : i % 2 ? near : far;
        ids[n++] = id;
        ids[n++] = id;
    }
    return n;
}

static struct emb_table *table(struct emb_registry *reg, struct comm *c, enum emb_codec cd,
                               const struct backend_ops *place, int direct)
{
    struct emb_table_conf conf = {.rows = ROWS, .dim = DIM, .init = EMB_INIT_NORMAL,
                                  .init_scale = 0.3f, .seed = 5, .rows_codec = cd,
                                  .grads_codec = cd, .placement = place, .direct = direct};
    snprintf(conf.name, sizeof conf.name, "items");
    conf.optim = (struct emb_optim_conf){.kind = EMB_OPT_ADAGRAD, .lr = 0.5f, .eps = 1e-8f};
    return emb_registry_add(reg, c, &conf);
}

static void run(struct comm *c, int G, int kase, enum emb_codec cd,
                const struct backend_ops *place, int direct, int hold)
{
    char err[512];
    T_CHECK(!comm_setup_groups(c, G, err, sizeof err), "%s", err);
    const char *where = !place ? "host" : direct ? "fake device, direct" : "fake device, staged";
    int64_t xi[NTOK], yi[NTOK];
    const int64_t nx = ids_of(c->rank, c->size, 0, kase, xi);
    const int64_t ny = ids_of(c->rank, c->size, 1, kase, yi);
    float *ref, *got;
    { /* the reference: y's rows served after x's update */
        struct emb_registry reg = {0};
        struct emb_table *t = table(&reg, c, cd, place, direct);
        struct emb_exchange *x = emb_input_dist(t, c, xi, nx, nx / 2, NULL);
        emb_output_post(t, c, x, NULL);
        emb_output_wait(x, 0, NULL);
        emb_output_wait(x, 1, NULL);
        emb_steps_grads(t, x, c->rank, DIM);
        emb_grad_post(t, c, x, NULL);
        emb_grad_finish(t, c, x, NULL);
        struct emb_exchange *y = emb_input_dist(t, c, yi, ny, ny / 2, NULL);
        emb_output_post(t, c, y, NULL);
        emb_output_wait(y, 0, NULL);
        emb_output_wait(y, 1, NULL);
        ref = emb_steps_rows(t, y, ny, DIM);
        emb_exchange_free(x);
        emb_exchange_free(y);
        emb_registry_free(&reg);
    }
    struct emb_wire_stats s;
    { /* the prefetch, in the training step's order */
        struct emb_registry reg = {0};
        struct emb_table *t = table(&reg, c, cd, place, direct);
        struct emb_exchange *x = emb_input_dist(t, c, xi, nx, nx / 2, NULL);
        emb_output_post(t, c, x, NULL);
        struct emb_exchange *y = emb_input_dist(t, c, yi, ny, ny / 2, NULL);
        emb_input_post_ids(c, y);
        emb_output_wait(x, 0, NULL);
        emb_output_wait(x, 1, NULL);
        emb_prefetch_plan(t, c, y, x);
        emb_steps_grads(t, x, c->rank, DIM);
        emb_prefetch_post(t, c, y, hold);
        emb_grad_post(t, c, x, NULL);
        emb_grad_finish(t, c, x, NULL);
        emb_prefetch_late(t, c, y);
        emb_output_wait(y, 0, NULL);
        emb_output_wait(y, 1, NULL);
        got = emb_steps_rows(t, y, ny, DIM);
        emb_exchange_free(x);
        emb_exchange_free(y);
        emb_table_wire_take(t, c, &s);
        emb_registry_free(&reg);
    }
    for (int64_t i = 0; i < ny; i++)
        T_CHECK(!memcmp(ref + i * DIM, got + i * DIM, DIM * sizeof *ref),
                "%s, G=%d, %s, %s: the row of id %lld (token %lld) differs from the blocking "
                "lookup's: %.9g vs %.9g", case_name[kase], G, emb_codec_name(cd), where,
                (long long)yi[i], (long long)i, got[i * DIM], ref[i * DIM]);
    int64_t u = 0; /* y's unique ids, over ranks */
    for (int64_t i = 0; i < ny; i += 2)
        u++;
    u = comm_allreduce_sum_i64(c, u);
    T_CHECK(s.pf_rows + s.pf_late == u, "%s: %lld + %lld rows counted, %lld unique",
            case_name[kase], (long long)s.pf_rows, (long long)s.pf_late, (long long)u);
    if (kase == ALL)
        T_CHECK(s.pf_rows == 0, "all collide: %lld rows came ahead", (long long)s.pf_rows);
    if (kase == NONE)
        T_CHECK(s.pf_late == 0, "none collide: %lld rows came late", (long long)s.pf_late);
    if (kase == MIX)
        T_CHECK(s.pf_rows > 0 && s.pf_late > 0, "mixed: %lld ahead, %lld late",
                (long long)s.pf_rows, (long long)s.pf_late);
    if (c->rank == 0)
        printf("ok: %s, G=%d, %s, %s%s: %lld rows ahead, %lld late, bitwise the blocking "
               "lookup's\n", case_name[kase], G, emb_codec_name(cd), where,
               hold ? " (held behind the gradients)" : "", (long long)s.pf_rows,
               (long long)s.pf_late);
    free(ref);
    free(got);
}

int main(int argc, char **argv)
{
    struct comm c;
    comm_init(&c, &argc, &argv);
    char err[256];
    T_CHECK(!backend_fake.device_open(0, 0, err, sizeof err), "fake device: %s", err);
    const enum emb_codec codecs[] = {EMB_CODEC_FP32, EMB_CODEC_BF16};
    int Gs[3] = {c.size, 1, c.size / 2}; /* sharded; replicated; both (P = 4) */
    const int nG = c.size == 1 ? 1 : c.size == 4 ? 3 : 2;
    /* host tables: every case; the fake device's: the mixed case (both
     * parts), staged with both codecs, direct in fp32 */
    for (int where = 0; where < 3; where++)
        for (int g = 0; g < nG; g++)
            for (int kase = where ? MIX : 0; kase < 3; kase++)
                for (int k = 0; k < (where == 2 ? 1 : 2); k++)
                    for (int hold = where ? 1 : 0; hold < (kase == MIX ? 2 : 1); hold++)
                        run(&c, Gs[g], kase, codecs[k], where ? &backend_fake : NULL,
                            where == 2, hold);
    comm_free(&c);
    return 0;
}
