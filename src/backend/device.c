/* device: backend and GPU choice; see device.h. */
#include "backend/device.h"

#include <stdio.h>
#include <string.h>

#include "base/log.h"

void device_allreduce_sum_f32(const struct backend_ops *be, struct comm *c, enum comm_group g,
                              float *buf, int64_t n, float *stage)
{
    if (!stage) {
        be->synchronize(); /* the values are final where MPI reads them */
        comm_allreduce_sum_f32(c, g, buf, n, COMM_PH_DENSE);
        return;
    }
    be->to_host_async(stage, buf, (size_t)n * sizeof(float));
    be->comm_sync();
    comm_allreduce_sum_f32(c, g, stage, n, COMM_PH_DENSE);
    be->to_device_async(buf, stage, (size_t)n * sizeof(float));
    be->comm_sync();
}

void device_select(struct comm *c, const struct params *p, struct device_choice *out)
{
    memset(out, 0, sizeof *out);
    out->be = &backend_cpu;
    out->device = -1;
    snprintf(out->desc, sizeof out->desc, "cpu");
    const char *type = params_str(p, P_device_type);
    const char *staging = params_str(p, P_device_staging);
    if (!strcmp(type, "cpu")) {
        if (!strcmp(staging, "direct"))
            fatal("device.staging=direct needs device.type=cuda (the CPU backend has no device "
                  "buffers)");
        return;
    }
    int want = !strcmp(type, "cuda"); /* else auto */
    char err[512] = "";
    const struct backend_ops *cuda = backend_get("cuda", err, sizeof err);
    int count = -1;
    if (cuda) {
        count = cuda->device_count(err, sizeof err);
        if (count == 0)
            snprintf(err, sizeof err, "the CUDA runtime sees no device");
    }
    /* every rank must take the same backend */
    int64_t have = cuda && count > 0;
    int64_t nhave = comm_allreduce_sum_i64(c, have);
    if (want && !have) {
        if (!cuda)
            fatal("device.type=cuda: %s (configure --with-cuda to build the CUDA backend)", err);
        fatal("device.type=cuda: no usable GPU on this rank: %s", err);
    }
    if (!want && nhave < c->size) {
        log_info("notice: device.type=auto: running on the CPU (%s)",
                 !cuda        ? "this build has no CUDA backend"
                 : nhave == 0 ? err
                              : "some ranks see no GPU");
        return;
    }
    const struct comm_group_info *node = &c->g[COMM_NODE];
    if (node->size > count && !params_i64(p, P_device_share))
        fatal("device: %d ranks on this node but %d GPU%s visible: start one rank per GPU, or "
              "set device.share=on to let ranks share GPUs",
              node->size, count, count == 1 ? "" : "s");
    int dev = node->rank % count;
    if (cuda->device_open(dev, (int)params_i64(p, P_device_tf32), err, sizeof err))
        fatal("device: cannot open GPU %d: %s", dev, err);
    out->be = cuda;
    out->device = dev;
    cuda->device_describe(out->desc, sizeof out->desc);
    int aware = comm_cuda_aware();
    if (!strcmp(staging, "direct") && !aware)
        fatal("device.staging=direct: this MPI is not CUDA-aware (MPIX_Query_cuda_support() is "
              "0); use device.staging=host or auto");
    out->direct = !strcmp(staging, "host") ? 0 : aware;
    log_info("device: %s; exchanges of device buffers %s", out->desc,
                 out->direct ? "go to CUDA-aware MPI directly"
                             : "are staged through pinned host memory");
}
