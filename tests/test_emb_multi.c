/* test_emb_multi: one lookup of several tables (emb_multi.h), sharded and
 * replicated, of different widths and optimizers, on P ranks against the
 * unsharded reference, for every embedding group G in {1, 2, P} dividing
 * P: lookups exact before any update, 1e-6 relative after, every row at
 * the end. The same table placed replicated and placed sharded gives
 * bitwise the same rows when G = P (the same sums in the same order). The
 * last rank (P > 1) asks nothing of one table. The same tables in the fake
 * device's memory (embedding.placement = device: rows gathered there,
 * updates applied there) give the host tables' lookups and rows bit for
 * bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "comm/comm.h"
#include "embedding/emb_multi.h"
#include "embedding/emb_reference.h"
#include "mpitest.h"

#define NT 3
#define STEPS 3
static const int64_t rows_of[NT] = {40, 7, 25};
static const int width_of[NT] = {5, 3, 4};
static const enum emb_optimizer opt_of[NT] = {EMB_OPT_ADAGRAD, EMB_OPT_SGD, EMB_OPT_ADAM};

static int64_t ids_of(int k, int r, int P, int s, int64_t *ids)
{
    if (k == 2 && P > 1 && r == P - 1)
        return 0;
    int64_t n = 0;
    const int64_t R = rows_of[k];
    ids[n++] = 1;
    ids[n++] = R;
    ids[n++] = 1;
    for (int i = 0; i < 9; i++)
        ids[n++] = 1 + (r * 13 + s * 7 + i * i * 5 + k) % R;
    return n;
}

static float grad_of(int k, int r, int s, int64_t i, int j)
{
    return (float)cos(0.3 * k + 0.7 * r + 1.1 * s + 0.13 * (double)i + 0.4 * j) * 0.1f;
}

static struct emb_table_conf conf_of(int k, int replicated)
{
    struct emb_table_conf cf = {.rows = rows_of[k], .dim = width_of[k], .init = EMB_INIT_NORMAL,
                                .init_scale = 0.3f, .seed = 5, .replicated = replicated};
    snprintf(cf.name, sizeof cf.name, "feat.%c", 'a' + k);
    cf.optim = (struct emb_optim_conf){.kind = opt_of[k], .lr = 0.05f, .weight_decay = 0.01f,
                                       .eps = 1e-8f, .beta1 = 0.9f, .beta2 = 0.999f};
    return cf;
}

/* One variant: placement[k] = 1 replicated. Returns nothing; checks
 * against refs; leaves the registry for the caller to compare. */
static void run(struct comm *c, const int *replicated, struct emb_registry *reg, int G,
                const struct backend_ops *placement)
{
    const int P = c->size;
    struct emb_table *t[NT];
    struct emb_ref ref[NT];
    for (int k = 0; k < NT; k++) {
        struct emb_table_conf cf = conf_of(k, replicated[k]);
        cf.placement = placement; /* NULL: host memory */
        t[k] = emb_registry_add(reg, c, &cf);
        emb_ref_init(&ref[k], &cf);
    }
    for (int s = 0; s < STEPS; s++) {
        int64_t idbuf[NT][16], n[NT];
        const int64_t *ids[NT];
        for (int k = 0; k < NT; k++) {
            n[k] = ids_of(k, c->rank, P, s, idbuf[k]);
            ids[k] = idbuf[k];
        }
        struct emb_multi *x = emb_multi_input(t, NT, c, ids, n);
        emb_multi_lookup(x);
        float *gu[NT];
        for (int k = 0; k < NT; k++) {
            const int w = width_of[k];
            const float *rows = emb_multi_rows(x, k);
            const int64_t *inv = emb_multi_inverse(x, k), nu = emb_multi_nuniq(x, k);
            float want[16 * 8];
            emb_ref_lookup(&ref[k], ids[k], n[k], want);
            for (int64_t i = 0; i < n[k]; i++)
                for (int j = 0; j < w; j++) {
                    double a = rows[inv[i] * w + j], b = want[i * w + j];
                    T_CHECK(s == 0 ? a == b : fabs(a - b) <= 1e-6 * (1 + fabs(b)),
                            "G=%d table %d step %d id %lld: %g vs %g", G, k, s,
                            (long long)ids[k][i], a, b);
                }
            /* per unique row, the tokens in order, in double */
            double *acc = xcalloc((size_t)(nu ? nu : 1) * w, sizeof *acc);
            for (int64_t i = 0; i < n[k]; i++)
                for (int j = 0; j < w; j++)
                    acc[inv[i] * w + j] += grad_of(k, c->rank, s, i, j);
            gu[k] = xmalloc((size_t)(nu ? nu : 1) * w * sizeof(float));
            for (int64_t q = 0; q < nu * w; q++)
                gu[k][q] = (float)acc[q];
            free(acc);
        }
        emb_multi_backward(x, gu);
        emb_multi_free(x);
        for (int k = 0; k < NT; k++) { /* the reference: every rank's tokens in rank order */
            int64_t all[16 * 8], total = 0;
            float g[16 * 8 * 8];
            for (int r = 0; r < P; r++) {
                int64_t rid[16];
                int64_t m = ids_of(k, r, P, s, rid);
                for (int64_t i = 0; i < m; i++, total++) {
                    all[total] = rid[i];
                    for (int j = 0; j < width_of[k]; j++)
                        g[total * width_of[k] + j] = grad_of(k, r, s, i, j);
                }
            }
            emb_ref_update(&ref[k], all, total, g);
            free(gu[k]);
        }
    }
    for (int k = 0; k < NT; k++) {
        float row[8];
        for (int64_t id = 1; id <= rows_of[k]; id++) {
            if (id % t[k]->G != t[k]->shard)
                continue;
            emb_shard_row(t[k], id, row);
            for (int j = 0; j < width_of[k]; j++) {
                double a = row[j], b = ref[k].w[id * width_of[k] + j];
                T_CHECK(fabs(a - b) <= 1e-6 * (1 + fabs(b)), "G=%d table %d row %lld: %g vs %g",
                        G, k, (long long)id, a, b);
            }
        }
        emb_ref_free(&ref[k]);
    }
}

int main(int argc, char **argv)
{
    struct comm c;
    comm_init(&c, &argc, &argv);
    const int P = c.size;
    int groups[3] = {1, 2, P}, tested = 0;
    char err[512];
    T_CHECK(!backend_fake.device_open(0, 0, err, sizeof err), "the fake device: %s", err);
    for (int gi = 0; gi < 3; gi++) {
        const int G = groups[gi];
        if (P % G != 0 || (gi == 2 && (G == 1 || G == 2)))
            continue;
        T_CHECK(!comm_setup_groups(&c, G, err, sizeof err), "%s", err);
        const int mixed[NT] = {0, 1, 0}, all_rep[NT] = {1, 1, 1};
        struct emb_registry a = {0}, b = {0}, dv = {0};
        run(&c, mixed, &a, G, NULL);
        run(&c, all_rep, &b, G, NULL);
        run(&c, mixed, &dv, G, &backend_fake);
        for (int k = 0; k < NT; k++) { /* device tables: the host tables' rows, bitwise */
            struct emb_table *th = &a.tables[k], *td = &dv.tables[k];
            float r1[8], r2[8];
            for (int64_t id = 1; id <= rows_of[k]; id++) {
                if (id % th->G != th->shard)
                    continue;
                emb_shard_row(th, id, r1);
                emb_shard_row(td, id, r2);
                T_CHECK(!memcmp(r1, r2, (size_t)width_of[k] * sizeof(float)),
                        "G=%d table %d row %lld: device and host tables differ", G, k,
                        (long long)id);
            }
        }
        emb_registry_free(&dv);
        emb_multi_device_free();
        if (G == P) /* sharded and replicated: bitwise the same rows */
            for (int k = 0; k < NT; k++) {
                struct emb_table *ts = &a.tables[k], *tr = &b.tables[k];
                float r1[8], r2[8];
                for (int64_t id = 1; id <= rows_of[k]; id++) {
                    if (id % ts->G != ts->shard)
                        continue;
                    emb_shard_row(ts, id, r1);
                    emb_shard_row(tr, id, r2);
                    T_CHECK(!memcmp(r1, r2, (size_t)width_of[k] * sizeof(float)),
                            "table %d row %lld: sharded and replicated differ", k, (long long)id);
                }
            }
        emb_registry_free(&a);
        emb_registry_free(&b);
        tested++;
    }
    if (c.rank == 0)
        printf("emb_multi on %d ranks: %d group sizes ok (host and fake device tables)\n", P,
               tested);
    comm_free(&c);
    return 0;
}
