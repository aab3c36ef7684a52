/* device: which backend and which device this rank runs the dense model on
 * (doc/gpu.md, "Devices": the node's ranks share out its devices), and how exchanges
 * of device buffers reach MPI. Collective over c's world. */
#ifndef FS_DEVICE_H
#define FS_DEVICE_H

#include "backend/backend.h"
#include "backend/precision.h"
#include "comm/comm.h"
#include "base/params.h"

struct device_choice {
    const struct backend_ops *be;
    int device;        /* the device's index among those this rank sees, -1 on the CPU */
    int sharers;       /* ranks of the node on this device (1: its own; 0 on the CPU) */
    int direct;        /* 1: device pointers go to MPI (CUDA-aware); 0: staged */
    char desc[256];    /* the device, for the log */
    enum precision precision; /* device.precision (be computes at it: precision.h) */
};

/* Apply device.type, device.share, device.precision (device.tf32) and
 * device.staging: picks the backend and the device, opens it; out->be is
 * the backend at that precision (precision.h: backend_at_precision). The
 * ranks of a node compare the identities of the devices they see
 * (backend.h: device_uuid): in node-rank
 * order each rank takes a device no earlier rank took, else (device.share =
 * on) the visible one with the fewest ranks so far; so one GPU per task
 * (Slurm --gpus-per-task=1), all GPUs visible to every rank, and ranks
 * sharing GPUs all work. A request that cannot be met (device.type=cuda
 * without a GPU or without the CUDA build, ranks sharing a device without
 * device.share, staging=direct without CUDA-aware MPI) ends the job with a
 * message naming the parameter and the reason. */
void device_select(struct comm *c, const struct params *p, struct device_choice *out);

/* In-place sum of the backend buffer buf[n] over group g: handed to MPI
 * directly (host memory, or device memory with CUDA-aware MPI: a blocking
 * collective) when stage is NULL, else copied through stage[n] (pinned,
 * from be->host_alloc): one host wait for the copy down; the copy up is
 * ordered before the compute stream's next work. Nothing on a group of
 * one rank. */
void device_allreduce_sum_f32(const struct backend_ops *be, struct comm *c, enum comm_group g,
                              float *buf, int64_t n, float *stage);

#endif
