/* precision: device.precision (fp32 | tf32 | bf16) and its deprecated
 * alias device.tf32, resolved once; and the backend view that computes the
 * dense layers' GEMMs at that precision, and only those (doc/gpu.md: bf16). */
#ifndef FS_PRECISION_H
#define FS_PRECISION_H

#include <stddef.h>

#include "backend/backend.h"
#include "base/params.h"

enum precision { PRECISION_FP32, PRECISION_TF32, PRECISION_BF16 };

const char *precision_name(enum precision pr);

/* device.precision, or device.tf32 when only the alias is set (on = tf32,
 * off = fp32; *note then says so: a deprecation warning for the log, else
 * ""). Both set and disagreeing: -1 with err naming where each was set. */
int precision_resolve(const struct params *p, enum precision *out, char *note, size_t notelen,
                      char *err, size_t errlen);

/* The backend that runs the model at precision pr: be itself for fp32 and
 * tf32 (tf32 is a mode of the device: device_open), for bf16 a copy of *be
 * whose gemm_dense is be->gemm_bf16: the dense layers' GEMMs take bf16
 * operands, every other GEMM (the full softmax's logits and gradients, the
 * bias GEMMs, evaluation scoring, the peak measurement) stays be->gemm,
 * fp32, on every backend alike (the CPU's emulation follows the same rule
 * as CUDA's cublasGemmEx). Every other op, and the name, are be's: the fp32
 * path is untouched. NULL with err when be has no gemm_bf16. */
const struct backend_ops *backend_at_precision(const struct backend_ops *be, enum precision pr,
                                               char *err, size_t errlen);

#endif
