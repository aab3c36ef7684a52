/* device: backend and device choice; see device.h. */
#include "backend/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "comm/comm_fail.h"

void device_allreduce_sum_f32(const struct backend_ops *be, struct comm *c, enum comm_group g,
                              float *buf, int64_t n, float *stage)
{
    if (c->g[g].size == 1 || n <= 0)
        return;
    const size_t bytes = (size_t)n * sizeof(float);
    if (!stage) {
        be->synchronize(); /* the values are final where MPI reads them */
        if (be->mpi_expose)
            be->mpi_expose(buf, bytes, 1);
        comm_allreduce_sum_f32(c, g, buf, n, COMM_PH_DENSE);
        if (be->mpi_expose)
            be->mpi_expose(buf, bytes, 0);
        return;
    }
    be->to_host_async(stage, buf, bytes);
    be->comm_sync();
    comm_allreduce_sum_f32(c, g, stage, n, COMM_PH_DENSE);
    /* the compute stream waits for the copy up; the comm stream runs it
     * before it next overwrites stage */
    be->to_device_async(buf, stage, bytes);
}

#define DEV_MAX_SEEN 16  /* devices a rank's choice considers */
#define DEV_ID_BYTES 96  /* an identity (device_uuid) */

/* What one rank sees: its devices' identities. */
struct seen {
    int32_t count;
    char id[DEV_MAX_SEEN][DEV_ID_BYTES];
};

/* Share out the node's devices (device.h): *device = this rank's index
 * among the devices it sees, *sharers = the node's ranks on it, and
 * *other = the lowest other node rank on it (-1: none). Every rank of the
 * node computes the same assignment. */
static void assign(struct comm *c, const struct backend_ops *be, int count, int *device,
                   int *sharers, int *other)
{
    const int L = c->g[COMM_NODE].size, me = c->g[COMM_NODE].rank;
    struct seen mine;
    memset(&mine, 0, sizeof mine);
    mine.count = count < DEV_MAX_SEEN ? count : DEV_MAX_SEEN;
    char err[256];
    for (int k = 0; k < mine.count; k++)
        if (be->device_uuid(k, mine.id[k], DEV_ID_BYTES, err, sizeof err))
            fatal("device: cannot identify device %d: %s", k, err);
    struct seen *all = xmalloc((size_t)L * sizeof *all);
    comm_allgather_bytes(c, COMM_NODE, &mine, sizeof mine, all);
    int *pick = xmalloc((size_t)L * sizeof *pick); /* node rank -> index in its own list */
    for (int r = 0; r < L; r++) {
        int best = 0, best_users = -1;
        for (int k = 0; k < all[r].count; k++) {
            int users = 0;
            for (int q = 0; q < r; q++)
                users += !strcmp(all[q].id[pick[q]], all[r].id[k]);
            if (best_users < 0 || users < best_users) {
                best = k;
                best_users = users;
            }
        }
        pick[r] = best;
    }
    *device = pick[me];
    *sharers = 0;
    *other = -1;
    for (int q = 0; q < L; q++)
        if (!strcmp(all[q].id[pick[q]], all[me].id[pick[me]])) {
            (*sharers)++;
            if (q != me && *other < 0)
                *other = q;
        }
    free(pick);
    free(all);
}

static void choose(struct comm *c, const struct params *p, enum precision pr,
                   struct device_choice *out)
{
    memset(out, 0, sizeof *out);
    out->be = &backend_cpu;
    out->device = -1;
    snprintf(out->desc, sizeof out->desc, "cpu");
    const char *type = params_str(p, P_device_type);
    const char *staging = params_str(p, P_device_staging);
    if (!strcmp(type, "cpu"))
        return;
    const int fake = !strcmp(type, "fake"), want = fake || !strcmp(type, "cuda"); /* else auto */
    const char *name = fake ? "fake" : "cuda";
    char err[512] = "";
    const struct backend_ops *be = backend_get(name, err, sizeof err);
    int count = -1;
    if (be) {
        count = be->device_count(err, sizeof err);
        if (count == 0)
            snprintf(err, sizeof err, "the CUDA runtime sees no device");
    }
    /* every rank must take the same backend */
    int64_t have = be && count > 0;
    int64_t nhave = comm_allreduce_sum_i64(c, have);
    /* an error every rank may meet: the lowest failing rank's, once (comm_fail_agree) */
    char msg[2048];
    if (!be)
        snprintf(msg, sizeof msg, "device.type=cuda: %s (configure --with-cuda to build the CUDA "
                 "backend)", err);
    else
        snprintf(msg, sizeof msg, "device.type=%s: no usable %s on this rank: %s", name,
                 fake ? "device" : "GPU", err);
    comm_fail_agree(c, want && !have, msg);
    if (!want && nhave < c->size) {
        log_info("notice: device.type=auto: running on the CPU (%s)",
                 !be          ? "this build has no CUDA backend"
                 : nhave == 0 ? err
                              : "some ranks see no GPU");
        return;
    }
    if (want && nhave < c->size)
        fatal("device.type=%s: some ranks see no device (every rank needs one)", name);
    const int share = (int)params_i64(p, P_device_share);
    int dev, sharers, other;
    assign(c, be, count, &dev, &sharers, &other);
    snprintf(msg, sizeof msg, "device: node rank %d would share its device (index %d of the %d it "
             "sees) with node rank %d: start one rank per device (e.g. srun --gpus-per-task=1), "
             "or set device.share=on to let ranks share devices%s",
             c->g[COMM_NODE].rank, dev, count, other,
             fake ? "; the fake device shows each process the devices named in "
                    "FREESCALE_FAKE_GPUS (comma-separated names, default fake0; processes "
                    "seeing the same name share that device): FREESCALE_FAKE_GPUS=fake0,fake1 "
                    "gives 2 ranks one each"
                  : "");
    comm_fail_agree(c, sharers > 1 && !share, msg);
    int bad = be->device_open(dev, pr == PRECISION_TF32, err, sizeof err) != 0;
    snprintf(msg, sizeof msg, "device: cannot open device %d: %s", dev, err);
    comm_fail_agree(c, bad, msg);
    out->be = be;
    out->device = dev;
    out->sharers = sharers;
    be->device_describe(out->desc, sizeof out->desc);
    int aware = be->mpi_direct ? be->mpi_direct() : comm_cuda_aware();
    snprintf(msg, sizeof msg, "device.staging=direct: this MPI is not CUDA-aware "
             "(MPIX_Query_cuda_support() is 0%s); use device.staging=host or auto",
             fake ? "; the fake device acts CUDA-aware with FREESCALE_FAKE_AWARE=1" : "");
    comm_fail_agree(c, !strcmp(staging, "direct") && !aware, msg);
    out->direct = !strcmp(staging, "host") ? 0 : aware;
    log_info("device: %s; %s; exchanges of device buffers %s", out->desc,
             sharers > 1 ? "shared by ranks of this node (device.share)" : "this rank's own",
             out->direct ? "go to CUDA-aware MPI directly"
                         : "are staged through pinned host memory");
}

void device_select(struct comm *c, const struct params *p, struct device_choice *out)
{
    enum precision pr;
    char note[1024], err[2048];
    if (precision_resolve(p, &pr, note, sizeof note, err, sizeof err))
        fatal("%s", err); /* train_conf_check refused it first */
    if (note[0] && c->rank == 0)
        log_warn("%s", note);
    choose(c, p, pr, out);
    out->precision = pr;
    if (pr == PRECISION_TF32 && backend_is_host(out->be))
        log_info("notice: device.precision = tf32: the CPU backend has no TF32; its GEMMs are "
                 "fp32");
    const struct backend_ops *be = backend_at_precision(out->be, pr, err, sizeof err);
    if (!be) /* no bf16 GEMM: backend_check refuses the run */
        be = out->be;
    if (pr == PRECISION_BF16 && be->gemm_bf16)
        log_info("device.precision = bf16: the dense GEMMs take bf16 operands and accumulate "
                 "in fp32 (%s)", backend_is_host(be) || !strcmp(be->name, "fake")
                                     ? "the CPU's emulation" : "cublasGemmEx");
    out->be = be;
}
