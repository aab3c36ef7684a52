/* platt: model.calibrate = platt (doc/ranking.md, "Calibration"): a
 * binary task's logit z mapped to a z + b, a and b the logistic regression
 * of the task's labels on z over the validation events,
 *
 *   min over (a, b) of  sum_i softplus(a z_i + b) - y_i (a z_i + b),
 *
 * (with offset 0, model.calibrate = temperature: b = 0, a alone)
 * by Newton's method from (1, 0) (the 2 x 2 Hessian solved in closed form,
 * the step halved until the loss does not rise; sums in double in the
 * records' order: the same on any number of ranks). a > 0 keeps the order
 * of the scores, so AUC and GAUC stay as they are; a fit with a <= 0 (the
 * scores rank the validation events backwards) or without both classes is
 * refused and the task left as it is (a = 1, b = 0), and so is one whose
 * loss at the stored (float) a, b is not below the loss of the logits as
 * they are: the validation loss never rises. */
#ifndef FS_PLATT_H
#define FS_PLATT_H

#include <stdint.h>

#include "eval/metrics_ranking.h"

enum platt_status { PLATT_OK, PLATT_ONE_CLASS, PLATT_NOT_POSITIVE, PLATT_NO_GAIN };

/* The fit over n records z [i * stride], y [i * stride] (NaN: skipped,
 * != 0: positive), b fitted too unless offset is 0: ab[0] = a, ab[1] = b,
 * *loss0 and *loss1 the mean loss before and at them; ab = (1, 0) unless
 * PLATT_OK. */
enum platt_status platt_fit(int64_t n, int stride, const double *z, const float *y, int offset,
                            double *ab, double *loss0, double *loss1);
/* score [n, K] of binary[k] tasks: z = a_k z + b_k, ab [2K] (a's, then b's). */
void calib_apply(int K, const int *binary, const double *ab, int64_t n, double *score);
/* Every binary task of records r fitted (regression tasks: 1, 0) into ab
 * [2K] (rounded to floats, as the model stores them), b too unless
 * offset is 0; each fit logged. */
void calib_fit_records(const struct rank_records *r, const int *binary,
                       const char *const *names, int offset, double *ab);

#endif
