/* emb_cache_lfu: a min-heap of cache slots by (count, id); see
 * emb_cache_lfu.h. */
#include "embedding/emb_cache_lfu.h"

#include <stdlib.h>

#include "base/check.h"

void lfu_init(struct lfu_heap *q, int64_t S, const int64_t *freq, const int64_t *key)
{
    q->h = xmalloc((size_t)(S ? S : 1) * sizeof *q->h);
    q->pos = xmalloc((size_t)(S ? S : 1) * sizeof *q->pos);
    for (int64_t s = 0; s < S; s++)
        q->pos[s] = -1;
    q->n = 0;
    q->freq = freq;
    q->key = key;
}

void lfu_free(struct lfu_heap *q)
{
    free(q->h);
    free(q->pos);
    q->h = q->pos = NULL;
    q->n = 0;
}

/* slot a goes before slot b */
static int before(const struct lfu_heap *q, int64_t a, int64_t b)
{
    if (q->freq[a] != q->freq[b])
        return q->freq[a] < q->freq[b];
    return q->key[a] < q->key[b];
}

static void put(struct lfu_heap *q, int64_t i, int64_t s)
{
    q->h[i] = s;
    q->pos[s] = i;
}

static void up(struct lfu_heap *q, int64_t i)
{
    const int64_t s = q->h[i];
    while (i > 0) {
        const int64_t p = (i - 1) / 2;
        if (!before(q, s, q->h[p]))
            break;
        put(q, i, q->h[p]);
        i = p;
    }
    put(q, i, s);
}

static void down(struct lfu_heap *q, int64_t i)
{
    const int64_t s = q->h[i];
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= q->n)
            break;
        if (c + 1 < q->n && before(q, q->h[c + 1], q->h[c]))
            c++;
        if (!before(q, q->h[c], s))
            break;
        put(q, i, q->h[c]);
        i = c;
    }
    put(q, i, s);
}

void lfu_push(struct lfu_heap *q, int64_t s)
{
    put(q, q->n++, s);
    up(q, q->n - 1);
}

void lfu_remove(struct lfu_heap *q, int64_t s)
{
    const int64_t i = q->pos[s];
    if (i < 0)
        return;
    q->pos[s] = -1;
    const int64_t last = q->h[--q->n];
    if (i == q->n)
        return;
    put(q, i, last);
    up(q, i);
    down(q, q->pos[last]);
}

int64_t lfu_pop(struct lfu_heap *q)
{
    if (q->n == 0)
        return -1;
    const int64_t s = q->h[0];
    lfu_remove(q, s);
    return s;
}

void lfu_rebuild(struct lfu_heap *q)
{
    for (int64_t i = q->n / 2 - 1; i >= 0; i--)
        down(q, i);
}
