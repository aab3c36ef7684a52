/* stage: host-to-device uploads through a pinned ring; see stage.h. */
#include "backend/stage.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"

#define STAGE_SEGS 4
#define STAGE_MIN ((size_t)1 << 20) /* bytes per segment at first */

struct stage {
    const struct backend_ops *be;
    char *ring;                          /* [STAGE_SEGS * seg] pinned */
    size_t seg, off;                     /* segment bytes; the offset in the current one */
    int cur;
    struct backend_event *done[STAGE_SEGS]; /* the copies out of each segment */
    int used[STAGE_SEGS];                /* done[] recorded */
};

struct stage *stage_new(const struct backend_ops *be)
{
    struct stage *s = xcalloc(1, sizeof *s);
    s->be = be;
    return s;
}

static void release(struct stage *s)
{
    for (int i = 0; i < STAGE_SEGS; i++) {
        if (s->done[i])
            s->be->event_free(s->done[i]);
        s->done[i] = NULL;
        s->used[i] = 0;
    }
    if (s->ring)
        s->be->host_free(s->ring); /* after the comm stream's copies */
    s->ring = NULL;
}

void stage_free(struct stage *s)
{
    if (!s)
        return;
    release(s);
    free(s);
}

static size_t round64(size_t b) { return (b + 63) / 64 * 64; }

void stage_up(struct stage *s, void *dst, const void *src, size_t bytes)
{
    const struct backend_ops *be = s->be;
    if (!bytes)
        return;
    if (backend_is_host(be)) {
        if (dst != src)
            memcpy(dst, src, bytes);
        return;
    }
    if (round64(bytes) > s->seg) { /* grow: a larger ring, from segment 0 */
        release(s);
        s->seg = STAGE_MIN;
        while (s->seg < 2 * round64(bytes))
            s->seg *= 2;
        s->ring = be->host_alloc(STAGE_SEGS * s->seg);
        for (int i = 0; i < STAGE_SEGS; i++)
            s->done[i] = be->event_new(0);
        s->cur = 0;
        s->off = 0;
    } else if (s->off + round64(bytes) > s->seg) { /* the next segment, once free */
        be->event_record(s->done[s->cur], BACKEND_COMM);
        s->used[s->cur] = 1;
        s->cur = (s->cur + 1) % STAGE_SEGS;
        s->off = 0;
        if (s->used[s->cur] && !be->event_query(s->done[s->cur]))
            be->event_sync(s->done[s->cur]);
    }
    char *p = s->ring + (size_t)s->cur * s->seg + s->off;
    memcpy(p, src, bytes);
    be->to_device_async(dst, p, bytes);
    s->off += round64(bytes);
}
