/* lr_schedule: see lr_schedule.h. */
#include "train/lr_schedule.h"

#include <math.h>
#include <string.h>

double lr_schedule_factor(enum lr_schedule s, int64_t step, int64_t warmup, int64_t total)
{
    if (s == LR_CONSTANT || step < warmup || total <= warmup)
        return 1.0;
    double p = (double)(step - warmup) / (double)(total - warmup);
    p = p < 0 ? 0 : p > 1 ? 1 : p;
    return s == LR_COSINE ? 0.5 * (1.0 + cos(M_PI * p)) : 1.0 - p;
}

enum lr_schedule lr_schedule_parse(const char *s)
{
    return !strcmp(s, "cosine") ? LR_COSINE : !strcmp(s, "linear") ? LR_LINEAR : LR_CONSTANT;
}

const char *lr_schedule_name(enum lr_schedule s)
{
    return s == LR_COSINE ? "cosine" : s == LR_LINEAR ? "linear" : "constant";
}
