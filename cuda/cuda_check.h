/* cuda_check: the checking macros of the CUDA code (as src/base/check.h). Every
 * CUDA runtime and cuBLAS call is wrapped; a failure prints the call, the
 * file:line and the library's reason, and ends the job through fatal().
 * Usable from C (backend_cuda.c) and from .cu files (nvcc, C++). */
#ifndef FS_CUDA_CHECK_H
#define FS_CUDA_CHECK_H

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

void cuda_check_failed(int err, const char *reason, const char *call, const char *file,
                       int line) __attribute__((noreturn));
/* The host waits of the CUDA code, counted (src/backend/devstats.h): every
 * stream synchronisation goes through cuda_host_wait (backend_cuda.c), so
 * that `git grep cudaStreamSynchronize` finds it there alone. */
void cuda_host_wait(cudaStream_t s);

#ifdef __cplusplus
}
#endif

#define CUDA_CHECK(call)                                                                 \
    do {                                                                                 \
        cudaError_t cuda_check_err_ = (call);                                            \
        if (cuda_check_err_ != cudaSuccess)                                              \
            cuda_check_failed((int)cuda_check_err_, cudaGetErrorString(cuda_check_err_),  \
                              #call, __FILE__, __LINE__);                                \
    } while (0)

/* After a kernel launch: configuration errors are reported here; with
 * FREESCALE_CUDA_SYNC=1 in the environment the device is synchronised and
 * checked too, so that a kernel's fault is reported at its launch, named
 * (backend_cuda.c). */
#ifdef __cplusplus
extern "C"
#endif
void cuda_check_launch(const char *name, const char *file, int line);
#define CUDA_CHECK_LAUNCH(name) cuda_check_launch((name), __FILE__, __LINE__)

#endif
