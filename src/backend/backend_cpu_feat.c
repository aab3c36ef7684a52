/* backend_cpu_feat: the CPU reference of the features' and the ranking
 * head's operations (backend.h: index_rows, col_sums, rank_loss) and the
 * evaluation's rows_match. Plain
 * loops in a fixed order; the ranking loss is task_ranking.c's arithmetic
 * term for term (its CPU form before the head moved onto the backends). */
#include <math.h>
#include <string.h>

#include "backend/backend_cpu.h"

void cpu_index_rows(int64_t n, int d, const float *src, const int64_t *sidx, float *dst,
                    const int64_t *didx, int add)
{
    for (int64_t i = 0; i < n; i++) {
        const int64_t s = sidx ? sidx[i] : i, t = didx ? didx[i] : i;
        if (s < 0 || t < 0)
            continue;
        float *y = dst + t * d;
        const float *x = src + s * d;
        if (add)
            for (int j = 0; j < d; j++)
                y[j] += x[j];
        else
            memcpy(y, x, (size_t)d * sizeof *y);
    }
}

void cpu_col_sums(int64_t n, int m, const float *x, float *acc)
{
    for (int j = 0; j < m; j++) {
        double s = 0;
        for (int64_t i = 0; i < n; i++)
            s += x[i * m + j];
        acc[j] += (float)s;
    }
}

/* softplus(z) - y z, stably. */
static double bce(double z, double y) { return (z > 0 ? z : 0) - y * z + log1p(exp(-fabs(z))); }

void cpu_rank_loss(int64_t T, int K, const float *z, const float *labels, const double *coef,
                   float *dz, double *acc)
{
    double sum = 0;
    for (int k = 0; k < K; k++) {
        const int bin = coef[4 * k] != 0;
        const double wn = coef[4 * k + 1];
        const float mean = (float)coef[4 * k + 2], sd = (float)coef[4 * k + 3];
        double s = 0;
        for (int64_t i = 0; i < T; i++) {
            const float y = labels[i * K + k], zi = z[i * K + k];
            float g = 0;
            if (!isnan(y) && bin) {
                s += bce(zi, y);
                g = (float)(1.0 / (1.0 + exp(-(double)zi)) - y);
            } else if (!isnan(y)) {
                const double u = (y - mean) / sd, e = zi - u;
                s += e * e;
                g = (float)(2 * e);
            }
            dz[i * K + k] = (float)(wn * g);
        }
        sum += wn * s;
    }
    acc[0] += sum;
    acc[1] += (double)T;
}

void cpu_rows_match(int64_t n, int d, const float *rows, const float *row, uint8_t *out)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = (uint8_t)(memcmp(rows + i * d, row, (size_t)d * sizeof *row) == 0);
}
