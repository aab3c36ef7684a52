/* test_embedding: sharded tables on P ranks against the unsharded reference,
 * for every embedding group G in {1, 2, P} that divides P and every sparse
 * optimizer. Ids repeat within and across ranks, sit on shard boundaries,
 * and the last rank (P > 1) asks for nothing. Lookups must equal the
 * reference exactly before any update and to 1e-6 relative after; every row
 * of every shard must match the reference to 1e-6 relative at the end. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "comm/comm.h"
#include "embedding/emb_reference.h"
#include "embedding/emb_exchange.h"
#include "mpitest.h"

#define ROWS 60
#define DIM 5
#define STEPS 3

/* The ids of rank r at step s (n returned through *n). */
static int64_t *ids_of(int r, int P, int s, int64_t *n)
{
    int64_t *ids = xmalloc(64 * sizeof *ids);
    int64_t k = 0;
    if (P > 1 && r == P - 1) { /* a rank with no ids at all */
        *n = 0;
        return ids;
    }
    /* shared by every rank (duplicates across ranks), repeated (within) */
    ids[k++] = 1;
    ids[k++] = ROWS;
    ids[k++] = 1;
    /* shard boundaries for every G in {1, 2, 3, 4} */
    for (int g = 1; g <= 4; g++) {
        ids[k++] = g;
        ids[k++] = g + 1;
        ids[k++] = ROWS - g;
    }
    for (int i = 0; i < 10; i++) /* rank- and step-specific */
        ids[k++] = 1 + (r * 17 + s * 5 + i * i * 7) % ROWS;
    ids[k++] = ROWS;
    *n = k;
    return ids;
}

static float grad_of(int r, int s, int64_t i, int j)
{
    return (float)sin(0.7 * r + 1.3 * s + 0.11 * (double)i + 0.5 * j) * 0.1f;
}

static double rel_err(const float *a, const float *b, int n)
{
    double d = 0, m = 1e-30;
    for (int j = 0; j < n; j++) {
        d = fmax(d, fabs((double)a[j] - b[j]));
        m = fmax(m, fabs((double)b[j]));
    }
    return d / m;
}

static void run(struct comm *c, int G, enum emb_optimizer kind)
{
    char err[512];
    T_CHECK(!comm_setup_groups(c, G, err, sizeof err), "%s", err);
    struct emb_table_conf conf = {.rows = ROWS, .dim = DIM, .init = EMB_INIT_NORMAL,
                                  .init_scale = 0.3f, .seed = 99};
    snprintf(conf.name, sizeof conf.name, "items");
    conf.optim = (struct emb_optim_conf){.kind = kind, .lr = 0.05f, .weight_decay = 0.01f,
                                         .eps = 1e-8f, .beta1 = 0.9f, .beta2 = 0.999f};
    struct emb_registry reg = {0};
    struct emb_table *t = emb_registry_add(&reg, c, &conf);
    T_CHECK(t->G == G && t->local_rows == ROWS / G + 1, "shard shape");
    struct emb_ref ref;
    emb_ref_init(&ref, &conf);
    const int P = c->size;
    for (int s = 0; s < STEPS; s++) {
        int64_t n;
        int64_t *ids = ids_of(c->rank, P, s, &n);
        float out[64 * DIM], want[64 * DIM], grad[64 * DIM];
        struct emb_exchange *x = emb_lookup(t, c, ids, n, out, NULL);
        emb_ref_lookup(&ref, ids, n, want);
        for (int64_t i = 0; i < n; i++) {
            double e = rel_err(out + i * DIM, want + i * DIM, DIM);
            T_CHECK(s == 0 ? e == 0 : e <= 1e-6, "G=%d %s step %d: lookup of id %lld off by %g",
                    G, emb_optim_name(kind), s, (long long)ids[i], e);
        }
        for (int64_t i = 0; i < n; i++)
            for (int j = 0; j < DIM; j++)
                grad[i * DIM + j] = grad_of(c->rank, s, i, j);
        emb_backward(t, c, x, grad, NULL);
        emb_exchange_free(x);
        /* the reference takes one step with every rank's tokens, in rank order */
        int64_t *all_ids = xmalloc((size_t)P * 64 * sizeof *all_ids), total = 0;
        float *all_g = xmalloc((size_t)P * 64 * DIM * sizeof *all_g);
        for (int r = 0; r < P; r++) {
            int64_t m;
            int64_t *rids = ids_of(r, P, s, &m);
            for (int64_t i = 0; i < m; i++, total++) {
                all_ids[total] = rids[i];
                for (int j = 0; j < DIM; j++)
                    all_g[total * DIM + j] = grad_of(r, s, i, j);
            }
            free(rids);
        }
        emb_ref_update(&ref, all_ids, total, all_g);
        free(all_ids);
        free(all_g);
        free(ids);
    }
    /* every row of this rank's shard, touched or not */
    float row[DIM];
    int64_t checked = 0, moved = 0;
    for (int64_t id = 1; id <= ROWS; id++) {
        if (id % G != t->shard)
            continue;
        emb_shard_row(t, id, row);
        double e = rel_err(row, ref.w + id * DIM, DIM);
        T_CHECK(e <= 1e-6, "G=%d %s: row %lld off by %g", G, emb_optim_name(kind),
                (long long)id, e);
        float init[DIM];
        emb_init_row(&conf, id, init);
        moved += memcmp(init, row, sizeof row) != 0;
        checked++;
    }
    /* the shards cover every row exactly once per replica */
    int64_t all = comm_allreduce_sum_i64(c, checked);
    T_CHECK(all == (int64_t)ROWS * c->emb_groups, "rows covered %lld", (long long)all);
    /* only touched rows change: ids used cover 1..ROWS partly; an untouched
     * row keeps its initial value (checked above through the reference) */
    T_CHECK(comm_allreduce_sum_i64(c, moved) > 0, "no row was updated");
    emb_ref_free(&ref);
    emb_registry_free(&reg);
}

int main(int argc, char **argv)
{
    struct comm c;
    comm_init(&c, &argc, &argv);
    const int P = c.size;
    int groups[3] = {1, 2, P}, tested = 0;
    for (int gi = 0; gi < 3; gi++) {
        int G = groups[gi];
        if (P % G != 0 || (gi == 2 && (G == 1 || G == 2)))
            continue;
        for (int k = 0; k < 3; k++)
            run(&c, G, (enum emb_optimizer)k);
        tested++;
    }
    /* bad input */
    char err[512];
    T_CHECK(comm_setup_groups(&c, P + 1, err, sizeof err) == -1 &&
                strstr(err, "does not divide the"), "G = P + 1 accepted: %s", err);
    struct emb_table_conf conf = {.rows = ROWS, .dim = DIM};
    snprintf(conf.name, sizeof conf.name, "items");
    int64_t bad[3] = {3, 0, 5};
    T_CHECK(emb_check_ids(&conf, bad, 3, c.rank, err, sizeof err) == -1, "id 0 accepted");
    char want[128];
    snprintf(want, sizeof want, "table 'items': id 0 (token 1, requested by rank %d)", c.rank);
    T_CHECK(strstr(err, want) != NULL, "message: %s", err);
    bad[1] = ROWS + 1;
    T_CHECK(emb_check_ids(&conf, bad, 3, c.rank, err, sizeof err) == -1 &&
                strstr(err, "id 61 (token 1"), "id rows+1 accepted: %s", err);
    T_CHECK(emb_check_ids(&conf, bad, 1, c.rank, err, sizeof err) == 0, "good ids refused");
    if (c.rank == 0)
        printf("embedding on %d ranks: %d group sizes x 3 optimizers ok\n", P, tested);
    comm_free(&c);
    return 0;
}
