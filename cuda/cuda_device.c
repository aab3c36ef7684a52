/* cuda_device: the CUDA backend's devices (count, open, identity,
 * memory, description), its events and the CUDA IPC of the intra-node
 * transports; the rest of the backend is backend_cuda.c (cuda_priv.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/devstats.h"
#include "base/log.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_priv.h"

/* ---- devices ---------------------------------------------------------- */

int cuda_device_count(char *err, size_t errlen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky error */
        return errorf(err, errlen, "%s (%s)", cudaGetErrorName(e), cudaGetErrorString(e));
    }
    return n;
}

/* Release what a failed device_open created (each handle is zero when not
 * created); errors are ignored on this path, the open reports its own. */
static void cuda_release_partial(struct cuda_state *st)
{
    if (st->blas)
        (void)cublasDestroy(st->blas);
    if (st->comm_mark)
        (void)cudaEventDestroy(st->comm_mark);
    if (st->compute_mark)
        (void)cudaEventDestroy(st->compute_mark);
    if (st->copy)
        (void)cudaStreamDestroy(st->copy);
    if (st->comm)
        (void)cudaStreamDestroy(st->comm);
    if (st->compute)
        (void)cudaStreamDestroy(st->compute);
    (void)cudaGetLastError();
    memset(st, 0, sizeof *st);
}

/* In device_open: a failing runtime call is the user's error to read, not a
 * crash; undo what was made and return -1 with the reason. */
#define OPEN_TRY(call)                                                                   \
    do {                                                                                 \
        cudaError_t open_try_e_ = (call);                                                \
        if (open_try_e_ != cudaSuccess) {                                                \
            cuda_release_partial(st);                                                    \
            return errorf(err, errlen, "%s failed: %s (%s)", #call,                      \
                          cudaGetErrorName(open_try_e_), cudaGetErrorString(open_try_e_)); \
        }                                                                                \
    } while (0)

#define OPEN_TRY_BLAS(call)                                                              \
    do {                                                                                 \
        cublasStatus_t open_try_s_ = (call);                                             \
        if (open_try_s_ != CUBLAS_STATUS_SUCCESS) {                                      \
            cuda_release_partial(st);                                                    \
            return errorf(err, errlen, "%s failed: %s (%s)", #call,                      \
                          cublasGetStatusName(open_try_s_),                              \
                          cublasGetStatusString(open_try_s_));                           \
        }                                                                                \
    } while (0)

int cuda_device_open(int device, int tf32, char *err, size_t errlen)
{
    struct cuda_state *st = &g_cuda;
    const cublasMath_t math = tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
    if (st->open) {
        if (device != st->device)
            return errorf(err, errlen, "device %d requested, but device %d is already open",
                          device, st->device);
        CUBLAS_CHECK(cublasSetMathMode(st->blas, math));
        return 0;
    }
    int count = cuda_device_count(err, errlen);
    if (count < 0)
        return -1;
    if (device < 0 || device >= count)
        return errorf(err, errlen, "device %d out of range: %d CUDA device%s visible", device,
                      count, count == 1 ? "" : "s");
    OPEN_TRY(cudaSetDevice(device));
    int least = 0, greatest = 0; /* numerically: least >= greatest */
    OPEN_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    OPEN_TRY(cudaStreamCreateWithPriority(&st->compute, cudaStreamNonBlocking, least));
    OPEN_TRY(cudaStreamCreateWithPriority(&st->comm, cudaStreamNonBlocking, greatest));
    OPEN_TRY(cudaStreamCreateWithPriority(&st->copy, cudaStreamNonBlocking, least));
    OPEN_TRY(cudaEventCreateWithFlags(&st->compute_mark, cudaEventDisableTiming));
    OPEN_TRY(cudaEventCreateWithFlags(&st->comm_mark, cudaEventDisableTiming));
    OPEN_TRY_BLAS(cublasCreate(&st->blas));
    OPEN_TRY_BLAS(cublasSetStream(st->blas, st->compute));
    OPEN_TRY_BLAS(cublasSetMathMode(st->blas, math));
    st->device = device;
    st->open = 1;
    return 0;
}

int cuda_device_memory(size_t *free_bytes, size_t *total_bytes, char *err, size_t errlen)
{
    cudaError_t e = cudaMemGetInfo(free_bytes, total_bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(err, errlen, "cudaMemGetInfo: %s", cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

/* "GPU-<uuid> pci 0000:65:00.0": the UUID and the PCI location */
int cuda_device_uuid(int device, char *buf, size_t len, char *err, size_t errlen)
{
    struct cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, device);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return errorf(err, errlen, "cudaGetDeviceProperties(%d): %s", device,
                      cudaGetErrorString(e));
    }
    const unsigned char *u = (const unsigned char *)prop.uuid.bytes;
    snprintf(buf, len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x "
             "pci %04x:%02x:%02x.0",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
             u[13], u[14], u[15], (unsigned)prop.pciDomainID, (unsigned)prop.pciBusID,
             (unsigned)prop.pciDeviceID);
    return 0;
}

/* "NVIDIA H200 (device 0, 139.8 GiB, sm_90, driver 13.0, runtime 13.0)";
 * informational, so a failing query is described in buf, not fatal */
void cuda_device_describe(char *buf, size_t len)
{
    int dev = g_cuda.device, drv = 0, rt = 0;
    cudaError_t e = g_cuda.open ? cudaSuccess : cudaGetDevice(&dev);
    struct cudaDeviceProp prop;
    if (e == cudaSuccess)
        e = cudaGetDeviceProperties(&prop, dev);
    if (e == cudaSuccess)
        e = cudaDriverGetVersion(&drv);
    if (e == cudaSuccess)
        e = cudaRuntimeGetVersion(&rt);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(buf, len, "CUDA device %d (no description: %s)", dev, cudaGetErrorString(e));
        return;
    }
    snprintf(buf, len, "%s (device %d, %.1f GiB, sm_%d%d, driver %d.%d, runtime %d.%d)",
             prop.name, dev, (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0),
             prop.major, prop.minor, drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
}

/* ---- events ------------------------------------------------------------- */

struct backend_event {
    cudaEvent_t ev;
    int timing;
};

static cudaStream_t stream_of(struct cuda_state *st, enum backend_stream s)
{
    return s == BACKEND_COMM ? st->comm : s == BACKEND_COPY ? st->copy : st->compute;
}

struct backend_event *cuda_event_new(int timing)
{
    (void)cuda_state();
    struct backend_event *e = calloc(1, sizeof *e);
    if (!e)
        fatal("backend cuda: out of memory for an event");
    e->timing = timing;
    CUDA_CHECK(cudaEventCreateWithFlags(&e->ev, timing ? cudaEventDefault
                                                       : cudaEventDisableTiming));
    return e;
}

void cuda_event_free(struct backend_event *e)
{
    if (!e)
        return;
    CUDA_CHECK(cudaEventDestroy(e->ev));
    free(e);
}

void cuda_event_record(struct backend_event *e, enum backend_stream s)
{
    CUDA_CHECK(cudaEventRecord(e->ev, stream_of(cuda_state(), s)));
}

int cuda_event_query(struct backend_event *e)
{
    cudaError_t r = cudaEventQuery(e->ev);
    if (r == cudaErrorNotReady)
        return 0;
    CUDA_CHECK(r);
    return 1;
}

void cuda_event_sync(struct backend_event *e)
{
    devstats_sync();
    CUDA_CHECK(cudaEventSynchronize(e->ev));
}

void cuda_stream_wait(enum backend_stream s, struct backend_event *e)
{
    CUDA_CHECK(cudaStreamWaitEvent(stream_of(cuda_state(), s), e->ev, 0));
}

float cuda_event_ms(struct backend_event *start, struct backend_event *end)
{
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start->ev, end->ev));
    return ms;
}

/* ---- CUDA IPC and the intra-node transports ---------------------------- */
/* Verified on one H200 shared by several processes; not yet between two
 * GPUs (peer access) of a node. The handles travel between the processes of a
 * node (src/train/dense_ipc.c); a mapping of a buffer on another device enables
 * peer access lazily. Failures to export or map are returned, not fatal:
 * parallel.transport=auto falls back to MPI. */

_Static_assert(sizeof(cudaIpcMemHandle_t) == BACKEND_IPC_HANDLE_BYTES,
               "BACKEND_IPC_HANDLE_BYTES must be the size of cudaIpcMemHandle_t");

int cuda_ipc_export(void *dev_ptr, void *handle, char *err, size_t errlen)
{
    (void)cuda_state();
    cudaIpcMemHandle_t h;
    cudaError_t e = cudaIpcGetMemHandle(&h, dev_ptr);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return errorf(err, errlen, "cudaIpcGetMemHandle failed: %s (%s)", cudaGetErrorName(e),
                      cudaGetErrorString(e));
    }
    memcpy(handle, &h, sizeof h);
    return 0;
}

void *cuda_ipc_open(const void *handle, char *err, size_t errlen)
{
    (void)cuda_state();
    cudaIpcMemHandle_t h;
    memcpy(&h, handle, sizeof h);
    void *p = NULL;
    cudaError_t e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        errorf(err, errlen, "cudaIpcOpenMemHandle failed: %s (%s)", cudaGetErrorName(e),
               cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

void cuda_ipc_close(void *peer_ptr)
{
    if (!peer_ptr)
        return;
    struct cuda_state *st = cuda_state();
    cuda_host_wait(st->comm); /* no copy still reads the mapping */
    CUDA_CHECK(cudaIpcCloseMemHandle(peer_ptr));
}

/* on the comm stream, after the compute stream's work so far (the buffers
 * it writes are final): the copy engines or a copy kernel (copy.cu) */
void cuda_peer_copy(void *dst, const void *src, size_t bytes, int use_kernel)
{
    struct cuda_state *st = cuda_state();
    if (!bytes || dst == src)
        return;
    cuda_comm_after_compute(st);
    if (use_kernel)
        cuda_copy_kernel(st->comm, dst, src, bytes);
    else
        CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st->comm));
}

void cuda_comm_add(float *y, const float *x, int64_t n)
{
    struct cuda_state *st = cuda_state();
    if (n <= 0)
        return;
    cuda_comm_after_compute(st);
    cuda_add(st->comm, n, y, x);
}

