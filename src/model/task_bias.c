/* task_bias: the ranking logits' per-item and per-user terms; see
 * task_bias.h. */
#include "model/task_bias.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"

void rank_bias_init(struct rank_bias *rb, struct model *m, int K, int on)
{
    memset(rb, 0, sizeof *rb);
    rb->be = m->be;
    rb->K = K;
    if (!on)
        return;
    rb->item = model_param(m, "bias.item");
    rb->user = model_param(m, "bias.user");
    if (!rb->item || !rb->user)
        fatal("task_ranking: model.bias = on and the model has no bias.item or bias.user "
              "(task_ranking_params before model_init)");
}

/* Upload the tokens' item and user rows (staged: no host wait). */
static void bind_rows(struct rank_bias *rb, int64_t n, const int64_t *items,
                      const int64_t *users, int64_t B, const int64_t *seq_users,
                      const int64_t *offsets, const int64_t **di, const int64_t **du)
{
    if (!users) { /* each token's user from its sequence's */
        if (n > rb->cap) {
            rb->cap = n + n / 2;
            rb->tu = xrealloc(rb->tu, (size_t)rb->cap * sizeof *rb->tu);
        }
        for (int64_t b = 0; b < B; b++)
            for (int64_t t = offsets[b]; t < offsets[b + 1]; t++)
                rb->tu[t] = seq_users[b];
        users = rb->tu;
    }
    const size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(int64_t);
    *di = mirror_bind(&rb->items, rb->be, &backend_cpu, items, bytes);
    mirror_up_async(&rb->items, rb->st, 0, (size_t)n * sizeof(int64_t));
    *du = mirror_bind(&rb->users, rb->be, &backend_cpu, users, bytes);
    mirror_up_async(&rb->users, rb->st, 0, (size_t)n * sizeof(int64_t));
}

void rank_bias_fwd(struct rank_bias *rb, int64_t n, const int64_t *items, const int64_t *users,
                   int64_t B, const int64_t *seq_users, const int64_t *offsets, float *z)
{
    if (!rb->item || n <= 0)
        return;
    const struct backend_ops *be = rb->be;
    const int64_t *di, *du;
    bind_rows(rb, n, items, users, B, seq_users, offsets, &di, &du);
    if (n > rb->tcap) {
        rb->tcap = n + n / 2;
        be->free(rb->tmp);
        rb->tmp = be->alloc((size_t)(rb->tcap * rb->K) * sizeof(float));
    }
    be->gather_rows(n, rb->K, rb->item->w, di, rb->tmp);
    be->axpy(n * rb->K, 1.0f, rb->tmp, z);
    be->gather_rows(n, rb->K, rb->user->w, du, rb->tmp);
    be->axpy(n * rb->K, 1.0f, rb->tmp, z);
}

void rank_bias_bwd(struct rank_bias *rb, int64_t n, const float *dz)
{
    if (!rb->item || n <= 0)
        return;
    const struct backend_ops *be = rb->be;
    be->scatter_add_rows(n, rb->K, dz, mirror_at(&rb->items), rb->item->g);
    be->scatter_add_rows(n, rb->K, dz, mirror_at(&rb->users), rb->user->g);
}

void rank_bias_set(struct rank_bias *rb, const float *item, const float *user)
{
    if (!rb->item)
        return;
    rb->be->to_device(rb->item->w, item, (size_t)rb->item->n * sizeof(float));
    rb->be->to_device(rb->user->w, user, (size_t)rb->user->n * sizeof(float));
}

void rank_bias_get(const struct rank_bias *rb, float *item, float *user)
{
    if (!rb->item)
        return;
    rb->be->to_host(item, rb->item->w, (size_t)rb->item->n * sizeof(float));
    rb->be->to_host(user, rb->user->w, (size_t)rb->user->n * sizeof(float));
}

void rank_bias_free(struct rank_bias *rb)
{
    if (rb->be)
        rb->be->free(rb->tmp);
    mirror_free(&rb->items);
    mirror_free(&rb->users);
    free(rb->tu);
    memset(rb, 0, sizeof *rb);
}
