/* cuda_priv: what the CUDA backend's C files share (backend_cuda.c: the
 * state, memory, copies, GEMM and the ops table; cuda_device.c: the
 * devices, events and IPC). Nothing outside cuda/ includes it. */
#ifndef FS_CUDA_PRIV_H
#define FS_CUDA_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "cuda/kernels.h"

/* cuBLAS calls: the status number and its description */
#define CUBLAS_CHECK(call)                                                               \
    do {                                                                                 \
        cublasStatus_t cublas_check_st_ = (call);                                        \
        if (cublas_check_st_ != CUBLAS_STATUS_SUCCESS)                                   \
            cuda_check_failed((int)cublas_check_st_,                                     \
                              cublasGetStatusString(cublas_check_st_), #call, __FILE__,  \
                              __LINE__);                                                 \
    } while (0)

/* One device per process, made current by device_open (backend_cuda.c). */
struct cuda_state {
    int open;
    int device;
    cudaStream_t compute, comm, copy; /* copy: ordered by events only */
    cudaEvent_t compute_mark, comm_mark; /* "work enqueued so far" on each stream */
    cublasHandle_t blas;
    struct cuda_ws ws; /* the ops' scratch */
};
extern struct cuda_state g_cuda;

/* The state; every op before device_open ends the job with a message. */
struct cuda_state *cuda_state(void);
/* The comm stream waits for everything enqueued so far on the compute one. */
void cuda_comm_after_compute(struct cuda_state *st);

/* The ops' workspace of at least bytes, empty (backend_cuda.c). */
struct cuda_ws *cuda_ws_get(struct cuda_state *st, size_t bytes);

/* backend_cuda_ctx.c: the backend_ops entries of the same names */
void cuda_op_hstu_attn_ctx_fwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                               const int64_t *key_off, int keys, int H, int dqk, int dv, int N,
                               const float *q, const float *kb, const float *vb,
                               const float *pos_bias, const float *time_bias,
                               const int64_t *key_ts, float *out);
void cuda_op_hstu_attn_ctx_bwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                               const int64_t *key_off, int keys, int H, int dqk, int dv, int N,
                               const float *q, const float *kb, const float *vb,
                               const float *pos_bias, const float *time_bias,
                               const int64_t *key_ts, const float *dout, float *dq, float *dkb,
                               float *dvb, float *dpos_bias, float *dtime_bias);
void cuda_op_sasrec_attn_ctx_fwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                                 const int64_t *key_off, int keys, int H, int dh, const float *q,
                                 const float *kb, const float *vb, float *out, float *lse);
void cuda_op_sasrec_attn_ctx_bwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                                 const int64_t *key_off, int keys, int H, int dh, const float *q,
                                 const float *kb, const float *vb, const float *out,
                                 const float *lse, const float *dout, float *dq, float *dkb,
                                 float *dvb);
void cuda_op_softmax_loss_q(int64_t T, int d, int R, float inv_tau, const float *u, int64_t nu,
                            const float *e, const float *logq, const int64_t *pos,
                            const int64_t *neg, float scale, float *du, float *de, double *acc);
void cuda_op_softmax_block_lse(int64_t n, int64_t m, int64_t lds, float inv_tau, const float *s,
                               float *lse);
void cuda_op_softmax_block_grad(int64_t n, int64_t m, int64_t lds, float inv_tau,
                                const float *lse, const int64_t *tcol, float gscale, float *s,
                                double *acc);

/* cuda_device.c: the backend_ops entries of the same names */
int cuda_device_count(char *err, size_t errlen);
int cuda_device_open(int device, int tf32, char *err, size_t errlen);
int cuda_device_memory(size_t *free_bytes, size_t *total_bytes, char *err, size_t errlen);
int cuda_device_uuid(int device, char *buf, size_t len, char *err, size_t errlen);
void cuda_device_describe(char *buf, size_t len);
struct backend_event *cuda_event_new(int timing);
void cuda_event_free(struct backend_event *e);
void cuda_event_record(struct backend_event *e, enum backend_stream s);
int cuda_event_query(struct backend_event *e);
void cuda_event_sync(struct backend_event *e);
void cuda_stream_wait(enum backend_stream s, struct backend_event *e);
float cuda_event_ms(struct backend_event *start, struct backend_event *end);
int cuda_ipc_export(void *dev_ptr, void *handle, char *err, size_t errlen);
void *cuda_ipc_open(const void *handle, char *err, size_t errlen);
void cuda_ipc_close(void *peer_ptr);
void cuda_peer_copy(void *dst, const void *src, size_t bytes, int use_kernel);
void cuda_comm_add(float *y, const float *x, int64_t n);

#endif
