/* gputime: device-side phase timers; see gputime.h. */
#include "train/gputime.h"

#include <string.h>

#include "base/log.h"

void gputime_init(struct gputime *g, const struct backend_ops *be)
{
    memset(g, 0, sizeof *g);
    if (!be->event_new)
        return;
    g->be = be;
    for (int p = 0; p < GPU_NPHASES; p++)
        for (int s = 0; s < GPU_SPANS; s++)
            for (int k = 0; k < 2; k++)
                g->ev[p][s][k] = be->event_new(1);
}

void gputime_free(struct gputime *g)
{
    if (g->be)
        for (int p = 0; p < GPU_NPHASES; p++)
            for (int s = 0; s < GPU_SPANS; s++)
                for (int k = 0; k < 2; k++)
                    g->be->event_free(g->ev[p][s][k]);
    memset(g, 0, sizeof *g);
}

void gputime_begin(struct gputime *g, enum gpu_phase ph)
{
    if (!g->be || g->spans[ph] == GPU_SPANS)
        return;
    if (g->open)
        fatal("gputime: phase %s begun inside another", gputime_name(ph));
    g->be->event_record(g->ev[ph][g->spans[ph]][0], BACKEND_COMPUTE);
    g->open = 1;
}

void gputime_end(struct gputime *g, enum gpu_phase ph)
{
    if (!g->be || g->spans[ph] == GPU_SPANS)
        return;
    g->be->event_record(g->ev[ph][g->spans[ph]][1], BACKEND_COMPUTE);
    g->spans[ph]++;
    g->open = 0;
}

void gputime_step(struct gputime *g, double wall_s)
{
    if (!g->be)
        return;
    for (int p = 0; p < GPU_NPHASES; p++) {
        for (int s = 0; s < g->spans[p]; s++)
            g->ms[p] += g->be->event_ms(g->ev[p][s][0], g->ev[p][s][1]);
        g->spans[p] = 0;
    }
    g->wall_ms += 1e3 * wall_s;
    g->steps++;
}

int gputime_take(struct gputime *g, double ms[GPU_NPHASES], double *gpu_ms, double *busy)
{
    const double n = g->steps > 0 ? (double)g->steps : 1;
    *gpu_ms = 0;
    for (int p = 0; p < GPU_NPHASES; p++) {
        ms[p] = g->ms[p] / n;
        *gpu_ms += ms[p];
        g->ms[p] = 0;
    }
    *busy = g->wall_ms > 0 ? *gpu_ms * n / g->wall_ms : 0;
    g->wall_ms = 0;
    g->steps = 0;
    return g->be != NULL;
}

const char *gputime_name(enum gpu_phase ph)
{
    static const char *names[GPU_NPHASES] = {"forward", "backward", "exchange", "optimizer"};
    return names[ph];
}
