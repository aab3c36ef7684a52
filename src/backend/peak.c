/* peak: the measured gemm rate of a backend (peak.h). */
#include "backend/peak.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/clock.h"

double backend_peak_gflops(const struct backend_ops *be)
{
    /* a GPU reaches its rate on large products only; the host and the fake
     * device (the host's gemm behind a device's interface) on small ones */
    const int64_t n = backend_is_host(be) || !strcmp(be->name, "fake") ? 512 : 4096;
    const size_t bytes = (size_t)(n * n) * sizeof(float);
    float *h = xmalloc(bytes);
    for (int64_t i = 0; i < n * n; i++) /* any finite values: the rate does not depend on them */
        h[i] = (float)(i % 13) * 0.01f - 0.06f;
    float *a = be->alloc(bytes), *b = be->alloc(bytes), *c = be->alloc(bytes);
    be->to_device(a, h, bytes);
    be->to_device(b, h, bytes);
    free(h);
    double best = 0;
    for (int rep = 0; rep < 6; rep++) { /* the first is a warm-up */
        be->synchronize();
        double t0 = clock_seconds();
        backend_gemm_dense(be, 0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        be->synchronize();
        double dt = clock_seconds() - t0;
        if (rep > 0 && dt > 0 && 2.0 * (double)n * n * n / dt > best)
            best = 2.0 * (double)n * n * n / dt;
    }
    be->free(a);
    be->free(b);
    be->free(c);
    return best / 1e9;
}
