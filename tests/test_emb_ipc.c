/* test_emb_ipc: parallel.transport = copy-engine | kernel's embedding
 * transfers (emb_ipc.c: rows and gradients between the ranks of a node
 * through CUDA IPC) against MPI, on P ranks, on the fake device (its IPC
 * is shared memory between the processes), or on a GPU with
 * FREESCALE_TEST_DEVICE=cuda (scripts/gpu-check.sh). Six steps of lookups
 * and sparse updates whose sizes grow (so the windows grow, are mapped
 * again, and the old ones are freed), on a device table with IPC and on
 * the same without (MPI, staged or direct), and on the fake device on a
 * host table too: every row of every step bit for bit, with
 *   - all ranks on one node, nodes of 2 (IPC within, MPI across:
 *     comm_set_node_size), and nodes of 1 (IPC on, no peer on the node);
 *   - staged and direct (device buffers to MPI between nodes; on a GPU
 *     only with CUDA-aware MPI);
 *   - G = P and (P = 4) G = 2 (replicas);
 *   - fp32 and bf16 on the wire; the copy engines and the copy kernel;
 * and the byte counters: IPC bytes exactly when a node has several ranks. */
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "comm/comm.h"
#include "embedding/emb_exchange.h"
#include "emb_steps.h"
#include "mpitest.h"

#define ROWS 997
#define DIM 8
#define STEPS 6

/* step s's ids on rank r: 8 (s + 1)^2 tokens, each id twice */
static int64_t ids_of(int r, int s, int64_t *ids)
{
    const int64_t n = 8 * (int64_t)(s + 1) * (s + 1);
    for (int64_t i = 0; i < n; i += 2)
        ids[i] = ids[i + 1] = 1 + (r * 31 + i * 17 + s * 7) % ROWS;
    return n;
}

struct setup {
    int G, node, direct, kernel;
    enum emb_codec cd;
};

/* The rows of every step on a table of backend be (NULL: host memory),
 * with IPC or not, concatenated [sum n, DIM]; ipc_bytes: the IPC bytes
 * this rank counted. */
static float *steps(struct comm *c, const struct setup *u, const struct backend_ops *be, int ipc,
                    int64_t *ipc_bytes)
{
    struct emb_table_conf conf = {.rows = ROWS, .dim = DIM, .init = EMB_INIT_NORMAL,
                                  .init_scale = 0.3f, .seed = 5, .rows_codec = u->cd,
                                  .grads_codec = u->cd, .direct = u->direct, .placement = be};
    snprintf(conf.name, sizeof conf.name, "items");
    conf.optim = (struct emb_optim_conf){.kind = EMB_OPT_ADAGRAD, .lr = 0.5f, .eps = 1e-8f};
    struct emb_registry reg = {0};
    struct emb_table *t = emb_registry_add(&reg, c, &conf);
    char err[512];
    if (ipc)
        T_CHECK(!emb_ipc_init(t, c, u->kernel, err, sizeof err), "%s", err);
    const struct comm_counters before = c->counters;
    int64_t total = 0;
    for (int s = 0; s < STEPS; s++)
        total += 8 * (int64_t)(s + 1) * (s + 1);
    float *out = xmalloc((size_t)total * DIM * sizeof *out);
    int64_t *ids = xmalloc((size_t)total * sizeof *ids), at = 0;
    for (int s = 0; s < STEPS; s++) {
        const int64_t n = ids_of(c->rank, s, ids);
        struct emb_exchange *x = emb_input_dist(t, c, ids, n, n / 2, NULL);
        emb_output_post(t, c, x, NULL);
        emb_output_wait(x, 0, NULL);
        emb_output_wait(x, 1, NULL);
        float *rows = emb_steps_rows(t, x, n, DIM);
        memcpy(out + at * DIM, rows, (size_t)n * DIM * sizeof *out);
        free(rows);
        at += n;
        emb_steps_grads(t, x, c->rank, DIM);
        emb_grad_post(t, c, x, NULL);
        emb_grad_finish(t, c, x, NULL);
        emb_exchange_free(x);
    }
    *ipc_bytes = 0;
    for (int ph = 0; ph < COMM_NPHASES; ph++)
        *ipc_bytes += c->counters.ipc[ph] - before.ipc[ph];
    free(ids);
    emb_registry_free(&reg);
    return out;
}

/* every row of a and b the same bits */
static void same_rows(const float *a, const float *b, int64_t total, const char *what,
                      const char *against)
{
    for (int64_t i = 0; i < total; i++)
        T_CHECK(!memcmp(a + i * DIM, b + i * DIM, DIM * sizeof *a),
                "%s: token %lld's row differs from %s: %.9g vs %.9g", what, (long long)i,
                against, a[i * DIM], b[i * DIM]);
}

static void run(struct comm *c, const struct backend_ops *be, const struct setup *u)
{
    char err[512];
    T_CHECK(!comm_setup_groups(c, u->G, err, sizeof err), "%s", err);
    comm_set_node_size(c, u->node);
    int64_t total = 0, ipc_ref, ipc_got;
    for (int s = 0; s < STEPS; s++)
        total += 8 * (int64_t)(s + 1) * (s + 1);
    char what[256];
    snprintf(what, sizeof what, "%s, G=%d, nodes of %d, %s, %s, %s", be->name, u->G, u->node,
             u->direct ? "direct" : "staged", emb_codec_name(u->cd),
             u->kernel ? "copy kernel" : "copy engines");
    float *ref = steps(c, u, be, 0, &ipc_ref);
    float *got = steps(c, u, be, 1, &ipc_got);
    same_rows(got, ref, total, what, "MPI's");
    if (!strcmp(be->name, "fake")) { /* the fake device runs the CPU's operations */
        int64_t none;
        float *host = steps(c, u, NULL, 0, &none);
        same_rows(got, host, total, what, "a host table's");
        free(host);
    }
    const int64_t ipc = comm_allreduce_sum_i64(c, ipc_got);
    const int peers_on_node = u->node > 1 && u->G > 1; /* some emb peer shares the node */
    T_CHECK(ipc_ref == 0, "%s: MPI alone counted %lld IPC bytes", what, (long long)ipc_ref);
    T_CHECK(peers_on_node ? ipc > 0 : ipc == 0, "%s: %lld bytes through IPC", what,
            (long long)ipc);
    if (c->rank == 0)
        printf("ok: %s: %d steps bitwise MPI's, %lld bytes through IPC\n", what, STEPS,
               (long long)ipc);
    free(ref);
    free(got);
    comm_set_node_size(c, c->size); /* the real layout: one node */
}

int main(int argc, char **argv)
{
    struct comm c;
    comm_init(&c, &argc, &argv);
    char err[256];
    const char *dev = getenv("FREESCALE_TEST_DEVICE");
    const struct backend_ops *be = backend_get(dev ? dev : "fake", err, sizeof err);
    T_CHECK(be && !backend_is_host(be), "FREESCALE_TEST_DEVICE=%s: %s", dev ? dev : "fake",
            be ? "not a device" : err);
    T_CHECK(!be->device_open(0, 0, err, sizeof err), "%s device: %s", be->name, err);
    /* the fake device lends MPI its memory in any case (FREESCALE_FAKE_AWARE
     * only changes what it reports) */
    const int aware = !strcmp(be->name, "fake") ||
                      (be->mpi_direct ? be->mpi_direct() : comm_cuda_aware());
    const int P = c.size;
    const struct setup cases[] = {
        {.G = P, .node = P, .cd = EMB_CODEC_FP32},
        {.G = P, .node = P, .cd = EMB_CODEC_BF16, .kernel = 1},
        {.G = P, .node = 2, .cd = EMB_CODEC_FP32},
        {.G = P, .node = 2, .cd = EMB_CODEC_FP32, .direct = 1},
        {.G = P, .node = 1, .cd = EMB_CODEC_FP32},
        {.G = P / 2 > 1 ? P / 2 : P, .node = P, .cd = EMB_CODEC_FP32, .direct = 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cases[i].direct && !aware) {
            if (c.rank == 0)
                printf("not run: direct (this MPI is not CUDA-aware)\n");
            continue;
        }
        run(&c, be, &cases[i]);
    }
    comm_free(&c);
    return 0;
}
