/* peak: a backend's matrix-multiply rate, measured: the peak that MFU is
 * reported against (doc/training.md). */
#ifndef FS_PEAK_H
#define FS_PEAK_H

#include "backend/backend.h"

/* GFLOP/s of the backend's dense-layer GEMM (backend_gemm_dense: fp32, or
 * bf16 operands under device.precision = bf16) on [n, n] x [n, n] (n = 512 on the
 * host backend, 4096 on a device: large enough to reach the kernels' rate,
 * short enough to take a few tens of ms), the best of a few timed calls
 * after a warm-up, at the BLAS threads (or device mode, e.g. TF32) the run
 * uses. Each call completes (synchronize) before it is timed. */
double backend_peak_gflops(const struct backend_ops *be);

#endif
