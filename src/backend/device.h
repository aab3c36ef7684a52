/* device: which backend and which GPU this rank runs the dense model on
 * (DESIGN.md §5: the node-local rank picks the device), and how exchanges
 * of device buffers reach MPI. Collective over c's world. */
#ifndef FS_DEVICE_H
#define FS_DEVICE_H

#include "backend/backend.h"
#include "comm/comm.h"
#include "base/params.h"

struct device_choice {
    const struct backend_ops *be;
    int device;        /* GPU index on the node, -1 on the CPU */
    int direct;        /* 1: device pointers go to MPI (CUDA-aware); 0: staged */
    char desc[256];    /* the device, for the log */
};

/* Apply device.type, device.share, device.tf32 and device.staging: picks
 * the backend, opens the node-local device. A request that cannot be met
 * (device.type=cuda without a GPU or without the CUDA build, more ranks
 * than GPUs without device.share, staging=direct without CUDA-aware MPI)
 * ends the job with a message naming the parameter and the reason. */
void device_select(struct comm *c, const struct params *p, struct device_choice *out);

/* In-place sum of the backend buffer buf[n] over group g: handed to MPI
 * directly (host memory, or device memory with CUDA-aware MPI) when stage
 * is NULL, else copied through stage[n] (pinned, from be->host_alloc). */
void device_allreduce_sum_f32(const struct backend_ops *be, struct comm *c, enum comm_group g,
                              float *buf, int64_t n, float *stage);

#endif
