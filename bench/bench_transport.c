/* bench_transport: what the intra-node transports of parallel.transport
 * cost the model's compute (doc/overlap.md, "Transports"; ratios against
 * a baseline measured in the same run). Run on one H200 at 2 and 4 ranks.
 *
 * Run under mpirun with 2 to 4 ranks on one node with a GPU (rank r opens
 * device r % count, so ranks may share a GPU, as with device.share=on).
 * Every rank maps the next node rank's buffer src [MiB] through CUDA IPC
 * and measures, the slowest rank reported:
 *   (a) float GEMMs of n^3 (be->gemm, TF32 off) alone: ms per GEMM;
 *   the copy alone: peer_copy of the whole buffer from the peer's mapping
 *   into a local one, copy engines, then the copy kernel: GB/s per rank;
 *   (b) the GEMMs again, each while a batch of copy-engine copies lasting
 *       longer than it (>= 1.25 x, from the copy alone) runs on the comm
 *       stream; (c) the same with the copy kernel.
 * It prints the GEMM slowdown of (b) and (c) over (a) and the copy GB/s
 * reached alongside the GEMMs. Each copy's result and comm_add are checked
 * once against the host. Each timed loop lasts about `seconds`.
 * Ranks sharing a GPU time-slice it, so (a) already includes that sharing.
 *
 *   build: make bench/bench_transport
 *   run:   mpirun -np 2 bench/bench_transport [n [MiB [seconds]]]   (4096 256 1)
 * Exits 77 (skip) without a CUDA build or a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/check.h"
#include "base/clock.h"
#include "comm/comm.h"
#include "base/log.h"

static const char *mode_name[2] = {"copy-engine", "kernel"};

struct bench {
    struct comm c;
    const struct backend_ops *be;
    int n;            /* GEMM size */
    float *A, *B, *C; /* [n, n] */
    size_t bytes;     /* copy size */
    float *src, *dst; /* [bytes / 4] this rank's buffers */
    const float *peer; /* the next node rank's src, mapped */
    int64_t gemms;    /* GEMMs per timed loop */
};

static double slowest(struct bench *b, double t)
{
    return comm_allreduce_max_f64(&b->c, COMM_WORLD, t);
}

/* src value i of node rank r (exact in float) */
static float pattern(int r, size_t i) { return (float)((i * 7 + (size_t)r * 13) % 1024); }

/* seconds for `count` GEMMs, all enqueued then waited for */
static double gemm_loop(struct bench *b, int64_t count)
{
    comm_barrier(&b->c);
    double t0 = clock_seconds();
    for (int64_t i = 0; i < count; i++)
        b->be->gemm(0, 0, b->n, b->n, b->n, 1.0f, b->A, b->n, b->B, b->n, 0.0f, b->C, b->n);
    b->be->synchronize();
    return clock_seconds() - t0;
}

/* seconds per copy of the buffer from the peer, alone (count copies) */
static double copy_alone(struct bench *b, int mode, int count)
{
    comm_barrier(&b->c);
    double t0 = clock_seconds();
    for (int i = 0; i < count; i++)
        b->be->peer_copy(b->dst, b->peer, b->bytes, mode);
    b->be->comm_sync();
    return (clock_seconds() - t0) / count;
}

/* dst must hold the peer's pattern; then comm_add(dst, src) on a prefix */
static int check_copy(struct bench *b, int mode)
{
    const int L = b->c.g[COMM_NODE].size, me = b->c.g[COMM_NODE].rank, from = (me + 1) % L;
    const size_t nf = b->bytes / sizeof(float);
    float *h = xmalloc(b->bytes);
    b->be->to_host(h, b->dst, b->bytes);
    size_t bad = 0;
    for (size_t i = 0; i < nf; i++)
        bad += h[i] != pattern(from, i);
    const int64_t na = (int64_t)(nf < 1048576 ? nf : 1048576);
    b->be->comm_add(b->dst, b->src, na);
    b->be->comm_sync();
    b->be->to_host(h, b->dst, (size_t)na * sizeof(float));
    for (int64_t i = 0; i < na; i++)
        bad += h[i] != pattern(from, (size_t)i) + pattern(me, (size_t)i);
    free(h);
    int64_t all = comm_allreduce_sum_i64(&b->c, (int64_t)bad);
    if (all)
        log_info("bench_transport: %s: %lld wrong values after peer_copy / comm_add", mode_name[mode],
                 (long long)all);
    return all != 0;
}

/* The GEMM loop with a batch of `per` copies started with each GEMM: the
 * copies are enqueued first (they wait for nothing: both streams are idle),
 * the GEMM is timed to its end, then the copies are waited for. Returns
 * the GEMM seconds; *copy_s: seconds the copies were in flight. */
static double gemm_with_copies(struct bench *b, int mode, int per, double *copy_s)
{
    double gemm = 0, copy = 0;
    comm_barrier(&b->c);
    for (int64_t i = 0; i < b->gemms; i++) {
        double t0 = clock_seconds();
        for (int k = 0; k < per; k++)
            b->be->peer_copy(b->dst, b->peer, b->bytes, mode);
        b->be->gemm(0, 0, b->n, b->n, b->n, 1.0f, b->A, b->n, b->B, b->n, 0.0f, b->C, b->n);
        b->be->synchronize();
        gemm += clock_seconds() - t0;
        b->be->comm_sync();
        copy += clock_seconds() - t0;
    }
    *copy_s = copy;
    return gemm;
}

/* 77 (skip) on every rank unless every rank has the CUDA backend and a GPU */
static int open_device(struct bench *b)
{
    char err[512] = "";
    b->be = backend_get("cuda", err, sizeof err);
    int count = b->be ? b->be->device_count(err, sizeof err) : -1;
    if (count == 0)
        snprintf(err, sizeof err, "the CUDA runtime sees no device");
    int64_t missing = comm_allreduce_sum_i64(&b->c, count <= 0);
    if (missing) {
        if (count <= 0)
            printf("bench_transport: skipped: rank %d: %s\n", b->c.rank, err);
        return 77;
    }
    const int dev = b->c.g[COMM_NODE].rank % count;
    if (b->be->device_open(dev, 0, err, sizeof err))
        fatal("bench_transport: cannot open GPU %d: %s", dev, err);
    return 0;
}

static void setup_buffers(struct bench *b)
{
    const struct backend_ops *be = b->be;
    const int L = b->c.g[COMM_NODE].size, me = b->c.g[COMM_NODE].rank;
    size_t nn = (size_t)b->n * (size_t)b->n, big = nn > b->bytes / 4 ? nn : b->bytes / 4;
    float *h = xmalloc(big * sizeof(float));
    for (size_t i = 0; i < nn; i++)
        h[i] = (float)(i % 7) * 0.1f;
    b->A = be->alloc(nn * sizeof(float));
    b->B = be->alloc(nn * sizeof(float));
    b->C = be->alloc(nn * sizeof(float));
    be->to_device(b->A, h, nn * sizeof(float));
    be->to_device(b->B, h, nn * sizeof(float));
    for (size_t i = 0; i < b->bytes / 4; i++)
        h[i] = pattern(me, i);
    b->src = be->alloc(b->bytes);
    b->dst = be->alloc(b->bytes);
    be->to_device(b->src, h, b->bytes);
    free(h);
    unsigned char mine[BACKEND_IPC_HANDLE_BYTES] = {0};
    unsigned char *all = xmalloc((size_t)L * BACKEND_IPC_HANDLE_BYTES);
    char err[512];
    if (be->ipc_export(b->src, mine, err, sizeof err))
        fatal("bench_transport: %s", err);
    comm_allgather_bytes(&b->c, COMM_NODE, mine, BACKEND_IPC_HANDLE_BYTES, all);
    b->peer = be->ipc_open(all + (size_t)((me + 1) % L) * BACKEND_IPC_HANDLE_BYTES, err,
                           sizeof err);
    if (!b->peer)
        fatal("bench_transport: mapping node rank %d's buffer: %s", (me + 1) % L, err);
    free(all);
}

int main(int argc, char **argv)
{
    struct bench b;
    memset(&b, 0, sizeof b);
    comm_init(&b.c, &argc, &argv);
    b.n = argc > 1 ? atoi(argv[1]) : 4096;
    const long mib = argc > 2 ? atol(argv[2]) : 256;
    const double seconds = argc > 3 ? atof(argv[3]) : 1.0;
    if (b.n < 16 || mib < 1 || !(seconds > 0)) {
        if (b.c.rank == 0)
            fprintf(stderr, "usage: mpirun -np 2..4 bench_transport [n >= 16 [MiB >= 1 "
                            "[seconds > 0]]]\n");
        comm_free(&b.c);
        return 2;
    }
    b.bytes = (size_t)mib << 20;
    int rc = open_device(&b);
    if (rc) {
        comm_free(&b.c);
        return rc;
    }
    const int L = b.c.g[COMM_NODE].size;
    if (L < 2 || L != b.c.size)
        fatal("bench_transport: run 2 or more ranks, all on one node (here %d of %d on this "
              "node): mpirun -np 2 bench/bench_transport",
              L, b.c.size);
    setup_buffers(&b);
    char desc[256];
    b.be->device_describe(desc, sizeof desc);

    /* calibrate: GEMMs per loop so that one lasts about `seconds` */
    gemm_loop(&b, 2); /* warm-up */
    double per_gemm = slowest(&b, gemm_loop(&b, 3)) / 3;
    b.gemms = (int64_t)ceil(seconds / per_gemm);
    b.gemms = b.gemms < 3 ? 3 : b.gemms > 5000 ? 5000 : b.gemms;
    const double flop = 2.0 * b.n * (double)b.n * b.n;
    double alone = slowest(&b, gemm_loop(&b, b.gemms)) / (double)b.gemms;
    log_info("bench_transport: %d ranks, %s; GEMM n = %d (fp32), %lld per loop; copies of "
             "%ld MiB from the next rank's buffer (CUDA IPC)",
             b.c.size, desc, b.n, (long long)b.gemms, mib);
    log_info("(a) GEMM alone: %.3f ms, %.1f TFLOP/s per rank", 1e3 * alone,
             flop / alone / 1e12);
    int bad = 0;
    for (int mode = 0; mode < 2; mode++) {
        copy_alone(&b, mode, 1); /* warm-up, the result checked */
        bad |= check_copy(&b, mode);
        double one = slowest(&b, copy_alone(&b, mode, 8));
        int per = (int)ceil(1.25 * alone / one);
        per = per < 1 ? 1 : per > 1000 ? 1000 : per;
        double copy_s, gemm_s = gemm_with_copies(&b, mode, per, &copy_s);
        gemm_s = slowest(&b, gemm_s) / (double)b.gemms;
        double gbs = (double)b.bytes * per * (double)b.gemms / slowest(&b, copy_s) / 1e9;
        log_info("(%c) %-11s copy alone %.1f GB/s per rank; GEMM with %d copies in flight: "
                 "%.3f ms, slowdown %.3fx; copies alongside %.1f GB/s per rank (%.1f all ranks)",
                 mode ? 'c' : 'b', mode_name[mode], (double)b.bytes / one / 1e9, per,
                 1e3 * gemm_s, gemm_s / alone, gbs, gbs * b.c.size);
    }
    b.be->ipc_close((void *)b.peer);
    comm_barrier(&b.c); /* no rank frees src while a peer maps it */
    b.be->free(b.A);
    b.be->free(b.B);
    b.be->free(b.C);
    b.be->free(b.src);
    b.be->free(b.dst);
    comm_free(&b.c);
    return bad ? 1 : 0;
}
