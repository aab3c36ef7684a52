/* test_emb_wire: the exchange with each wire codec on P ranks (emb_codec.h,
 * emb_table.h's wire stats). For every codec and G in {P, 1}:
 *   - the rows a rank receives are exactly decode(encode(row)), those it
 *     serves itself included;
 *   - the owners' SGD update applies exactly the decoded gradients: with
 *     every requester sending the same gradient f(id) (distinct ids per
 *     rank), row = init - lr * k(id) * decode(encode(f(id))), k(id) being
 *     the number of ranks that asked for id;
 *   - the byte counters equal the formula: rows = sum over ranks of (the
 *     rank's unique ids owned by another rank) * row bytes, gradients the
 *     same with the gradient codec, fp32 = tokens owned by another rank *
 *     4 dim; none to other nodes on one node, all with debug.node_size = 1
 *     (comm_set_node_size), half of them with node_size = P / 2;
 * with the table in host memory, and in the fake device's memory with the
 * exchanges staged through pinned buffers and handed to MPI directly (the
 * device-resident exchange, the codecs on the device). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "comm/comm.h"
#include "embedding/emb_exchange.h"
#include "mpitest.h"

#define ROWS 97
#define DIM 12
#define NTOK 40

/* Rank r's tokens: ids with duplicates (each token twice); distinct ids per
 * rank differ between ranks but overlap. */
static int64_t ids_of(int r, int64_t *ids)
{
    int64_t n = 0;
    for (int i = 0; i < NTOK / 2; i++) {
        int64_t id = 1 + (r * 13 + i * 7) % ROWS;
        ids[n++] = id;
        ids[n++] = id;
    }
    return n;
}

/* The gradient every requester sends for id (per token: half of it). */
static float f_of(int64_t id, int j) { return (float)(sin(0.37 * (double)id + 0.9 * j) * 0.5); }

static int64_t count_unique_remote(const int64_t *ids, int64_t n, int G, int shard, int64_t *tok)
{
    char seen[ROWS + 1] = {0};
    int64_t u = 0;
    *tok = 0;
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] % G != shard) {
            ++*tok;
            if (!seen[ids[i]]++)
                u++;
        }
    }
    return u;
}

static void run(struct comm *c, int G, enum emb_codec cd, const struct backend_ops *place,
                int direct)
{
    char err[512];
    T_CHECK(!comm_setup_groups(c, G, err, sizeof err), "%s", err);
    struct emb_table_conf conf = {.rows = ROWS, .dim = DIM, .init = EMB_INIT_NORMAL,
                                  .init_scale = 0.3f, .seed = 5, .rows_codec = cd,
                                  .grads_codec = cd, .placement = place, .direct = direct};
    const char *where = !place ? "host" : direct ? "fake device, direct" : "fake device, staged";
    snprintf(conf.name, sizeof conf.name, "items");
    conf.optim = (struct emb_optim_conf){.kind = EMB_OPT_SGD, .lr = 0.5f};
    struct emb_registry reg = {0};
    struct emb_table *t = emb_registry_add(&reg, c, &conf);
    int64_t ids[NTOK], n = ids_of(c->rank, ids);
    const int64_t rb = emb_codec_row_bytes(cd, DIM);
    uint8_t *w = xmalloc((size_t)rb);
    float init[DIM], want[DIM];
    int64_t bad;
    /* forward: rows as the codec carries them */
    struct emb_exchange *x = emb_input_dist(t, c, ids, n, n / 2, NULL);
    emb_output_post(t, c, x, NULL);
    emb_output_wait(x, 0, NULL);
    emb_output_wait(x, 1, NULL);
    const struct backend_ops *be = t->be;
    const int64_t nu = emb_exchange_nuniq(x);
    void *o_inv, *o_rows;
    const int64_t *inv = backend_download(be, emb_exchange_inverse(x), (size_t)n * 8, &o_inv);
    const float *rows = backend_download(be, emb_exchange_rows(x), (size_t)nu * DIM * 4, &o_rows);
    for (int64_t i = 0; i < n; i++) {
        emb_init_row(&conf, ids[i], init);
        T_CHECK(!emb_codec_encode(cd, 1, DIM, init, w, &bad), "encode");
        emb_codec_decode(cd, 1, DIM, w, want);
        T_CHECK(!memcmp(rows + inv[i] * DIM, want, sizeof want), "%s G=%d %s: row of id %lld "
                "is not the codec's", emb_codec_name(cd), G, where, (long long)ids[i]);
    }
    /* backward: every token of id carries f(id) / 2, so each requester's sum is f(id) */
    float *gu = xcalloc((size_t)nu * DIM, sizeof *gu);
    for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < DIM; j++)
            gu[inv[i] * DIM + j] = f_of(ids[i], j);
    if (backend_is_host(be))
        memcpy(emb_exchange_grads(x), gu, (size_t)nu * DIM * sizeof *gu);
    else
        be->to_device(emb_exchange_grads(x), gu, (size_t)nu * DIM * sizeof *gu);
    emb_grad_post(t, c, x, NULL);
    emb_grad_finish(t, c, x, NULL);
    emb_exchange_free(x);
    free(gu);
    free(o_inv);
    free(o_rows);
    /* the rows after the update: k(id) requesters per replica group */
    int64_t k[ROWS + 1] = {0};
    for (int64_t i = 0; i < n; i += 2)
        k[ids[i]]++;
    comm_allreduce_sum_i64v(c, COMM_WORLD, k, ROWS + 1);
    float row[DIM], g[DIM], q[DIM];
    for (int64_t id = 1; id <= ROWS; id++) {
        if (id % G != t->shard)
            continue;
        emb_init_row(&conf, id, init);
        for (int j = 0; j < DIM; j++)
            g[j] = f_of(id, j);
        T_CHECK(!emb_codec_encode(cd, 1, DIM, g, w, &bad), "encode");
        emb_codec_decode(cd, 1, DIM, w, q);
        emb_shard_row(t, id, row);
        for (int j = 0; j < DIM; j++) {
            double exp = init[j] - 0.5 * (double)(k[id] * q[j]);
            T_CHECK(fabs(row[j] - exp) <= 1e-6 * (1 + fabs(exp)), "%s G=%d %s: id %lld [%d] = "
                    "%.9g, expected %.9g (k = %lld)", emb_codec_name(cd), G, where, (long long)id,
                    j, row[j], exp, (long long)k[id]);
        }
    }
    /* the counters against the formula */
    int64_t tok, u = count_unique_remote(ids, n, G, t->shard, &tok);
    int64_t v[2] = {u, tok};
    comm_allreduce_sum_i64v(c, COMM_WORLD, v, 2);
    struct emb_wire_stats s;
    emb_table_wire_take(t, c, &s);
    T_CHECK(s.lookups == 1, "lookups %lld", (long long)s.lookups);
    T_CHECK(s.rows == v[0] * rb && s.grads == v[0] * rb, "%s G=%d: rows %lld grads %lld bytes, "
            "formula %lld", emb_codec_name(cd), G, (long long)s.rows, (long long)s.grads,
            (long long)(v[0] * rb));
    T_CHECK(s.fp32 == v[1] * 4 * DIM, "fp32 %lld, formula %lld", (long long)s.fp32,
            (long long)(v[1] * 4 * DIM));
    T_CHECK(s.rows_xnode == 0 && s.grads_xnode == 0, "bytes to other nodes on one node");
    emb_table_wire_take(t, c, &s);
    T_CHECK(s.rows == 0 && s.lookups == 0, "take did not reset");
    if (c->rank == 0)
        printf("ok: %s G=%d %s: %lld row bytes (%lld unique remote ids x %lld), fp32 without "
               "de-duplication %lld\n", emb_codec_name(cd), G, where, (long long)(v[0] * rb),
               (long long)v[0], (long long)rb, (long long)(v[1] * 4 * DIM));
    emb_registry_free(&reg);
    free(w);
}

/* Bytes to other nodes: with nodes of ns ranks, the unique ids owned by a
 * rank of another node. */
static void run_nodes(struct comm *c, int ns)
{
    char err[512];
    T_CHECK(!comm_setup_groups(c, 0, err, sizeof err), "%s", err);
    comm_set_node_size(c, ns);
    struct emb_table_conf conf = {.rows = ROWS, .dim = DIM, .init_scale = 0.1f, .seed = 1,
                                  .rows_codec = EMB_CODEC_INT8};
    snprintf(conf.name, sizeof conf.name, "items");
    struct emb_registry reg = {0};
    struct emb_table *t = emb_registry_add(&reg, c, &conf);
    int64_t ids[NTOK], n = ids_of(c->rank, ids);
    struct emb_exchange *x = emb_input_dist(t, c, ids, n, n, NULL);
    emb_output_post(t, c, x, NULL);
    emb_output_wait(x, 0, NULL);
    emb_output_wait(x, 1, NULL);
    emb_exchange_free(x);
    /* rows travel owner -> requester: count on the requester's side */
    char seen[ROWS + 1] = {0};
    int64_t far = 0;
    for (int64_t i = 0; i < n; i++)
        if (!seen[ids[i]]++ && ids[i] % c->size / ns != c->rank / ns)
            far++;
    far = comm_allreduce_sum_i64(c, far);
    struct emb_wire_stats s;
    emb_table_wire_take(t, c, &s);
    T_CHECK(s.rows_xnode == far * emb_codec_row_bytes(EMB_CODEC_INT8, DIM),
            "node size %d: %lld bytes to other nodes, formula %lld", ns, (long long)s.rows_xnode,
            (long long)(far * emb_codec_row_bytes(EMB_CODEC_INT8, DIM)));
    if (c->rank == 0)
        printf("ok: nodes of %d ranks: %lld of %lld row bytes to other nodes\n", ns,
               (long long)s.rows_xnode, (long long)s.rows);
    emb_registry_free(&reg);
    comm_set_node_size(c, c->size); /* one node again */
}

int main(int argc, char **argv)
{
    struct comm c;
    comm_init(&c, &argc, &argv);
    char err[256];
    T_CHECK(!backend_fake.device_open(0, 0, err, sizeof err), "fake device: %s", err);
    for (int where = 0; where < 3; where++)
        for (int cd = 0; cd < EMB_NCODECS; cd++) {
            const struct backend_ops *place = where ? &backend_fake : NULL;
            run(&c, c.size, (enum emb_codec)cd, place, where == 2);
            if (c.size > 1)
                run(&c, 1, (enum emb_codec)cd, place, where == 2);
        }
    run_nodes(&c, 1);
    if (c.size % 2 == 0)
        run_nodes(&c, c.size / 2);
    comm_free(&c);
    return 0;
}
