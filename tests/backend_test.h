/* backend_test: how the CUDA-vs-CPU tests get the backend under test.
 * backend_test_open(name) returns the backend (default "cuda") with its
 * device 0 open (TF32 off), or ends the test: exit 77 (SKIP) when the
 * backend is not compiled in or sees no device, exit 1 when the device
 * does not open. With describe, the device is printed as a "#" line.
 * backend_test_rel_err: the norm-wise relative error both tests use. */
#ifndef FS_BACKEND_TEST_H
#define FS_BACKEND_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/backend.h"

static inline const struct backend_ops *backend_test_open(const char *name, int describe)
{
    char err[512] = "";
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct backend_ops *be = backend_get(name, err, sizeof err);
    if (!be) {
        printf("SKIP: %s\n", err);
        exit(77);
    }
    if (be->device_count) {
        int n = be->device_count(err, sizeof err);
        if (n <= 0) {
            printf("SKIP: backend %s: no device (%s)\n", name, n < 0 ? err : "none visible");
            exit(77);
        }
        if (!be->device_open || be->device_open(0, 0, err, sizeof err) != 0) {
            printf("FAIL: backend %s: device_open(0): %s\n", name, err);
            exit(1);
        }
        if (describe && be->device_describe) {
            char desc[512] = "";
            be->device_describe(desc, sizeof desc);
            printf("# %s\n", desc);
        }
    }
    return be;
}

/* ||got - want|| / max(||want||, floor) over n values; *at: the index of
 * the largest |got - want| (a NaN counts as largest). */
static inline double backend_test_rel_err(const float *got, const float *want, int64_t n,
                                          double floor, int64_t *at)
{
    double num = 0, den = 0, big = -1;
    *at = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - (double)want[i]);
        num += e * e;
        den += (double)want[i] * want[i];
        if (e > big || (isnan(e) && !isnan(big))) {
            big = e;
            *at = i;
        }
    }
    return sqrt(num) / fmax(sqrt(den), floor);
}

#endif
