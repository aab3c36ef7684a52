/* task_bias: the ranking logits' per-item and per-user terms; see
 * task_bias.h. */
#include "model/task_bias.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"

void rank_bias_init(struct rank_bias *rb, struct model *m, int K, int on, int outside)
{
    memset(rb, 0, sizeof *rb);
    rb->be = m->be;
    rb->K = K;
    rb->on = on;
    if (!on || outside)
        return;
    rb->item = model_param(m, "bias.item");
    rb->user = model_param(m, "bias.user");
    if (!rb->item || !rb->user)
        fatal("task_ranking: model.bias = on and the model has no bias.item or bias.user "
              "(task_ranking_params before model_init)");
}

void rank_bias_attach(struct rank_bias *rb, const struct rank_bias_rows *ext) { rb->ext = ext; }

/* Each token's user (host): users, or the sequences' expanded. */
static const int64_t *token_users(struct rank_bias *rb, int64_t n, const int64_t *users,
                                  int64_t B, const int64_t *seq_users, const int64_t *offsets)
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
    return users;
}

/* Upload the tokens' item and user rows (staged: no host wait). */
static void bind_rows(struct rank_bias *rb, int64_t n, const int64_t *items,
                      const int64_t *users, const int64_t **di, const int64_t **du)
{
    const size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(int64_t);
    *di = mirror_bind(&rb->items, rb->be, &backend_cpu, items, bytes);
    mirror_up_async(&rb->items, rb->st, 0, (size_t)n * sizeof(int64_t));
    *du = mirror_bind(&rb->users, rb->be, &backend_cpu, users, bytes);
    mirror_up_async(&rb->users, rb->st, 0, (size_t)n * sizeof(int64_t));
}

/* The rows held outside: the tokens' unique rows (host), uploaded with
 * each token's indexes; the tables the gathers read. */
static void outside_rows(struct rank_bias *rb, int64_t n, const int64_t *items,
                         const int64_t *users, int train, const float **ti, const float **tu,
                         const int64_t **di, const int64_t **du)
{
    const int64_t *ii, *iu;
    const float *rows =
        rb->ext->lookup(rb->ext->ctx, n, items, users, train, &ii, &iu, &rb->nu);
    const size_t bytes = (size_t)(rb->nu > 0 ? rb->nu : 1) * (size_t)rb->K * sizeof(float);
    *ti = *tu = mirror_bind(&rb->rows, rb->be, &backend_cpu, rows, bytes);
    mirror_up_async(&rb->rows, rb->st, 0, (size_t)(rb->nu * rb->K) * sizeof(float));
    bind_rows(rb, n, ii, iu, di, du);
}

void rank_bias_fwd(struct rank_bias *rb, int64_t n, const int64_t *items, const int64_t *users,
                   int64_t B, const int64_t *seq_users, const int64_t *offsets, int train,
                   float *z)
{
    if (!rb->on || (n <= 0 && !rb->ext))
        return;
    const struct backend_ops *be = rb->be;
    const int64_t *di, *du;
    const float *ti, *tu;
    users = token_users(rb, n, users, B, seq_users, offsets);
    if (rb->ext) {
        outside_rows(rb, n, items, users, train, &ti, &tu, &di, &du);
    } else {
        if (!rb->item)
            fatal("task_ranking: model.bias's rows held outside the model and none attached");
        bind_rows(rb, n, items, users, &di, &du);
        ti = rb->item->w;
        tu = rb->user->w;
    }
    if (n <= 0)
        return;
    if (n > rb->tcap) {
        rb->tcap = n + n / 2;
        be->free(rb->tmp);
        rb->tmp = be->alloc((size_t)(rb->tcap * rb->K) * sizeof(float));
    }
    be->gather_rows(n, rb->K, ti, di, rb->tmp);
    be->axpy(n * rb->K, 1.0f, rb->tmp, z);
    be->gather_rows(n, rb->K, tu, du, rb->tmp);
    be->axpy(n * rb->K, 1.0f, rb->tmp, z);
}

/* The device's gradients, come down (rank_bias_bwd), into the host
 * buffer the owners' push reads: a wait only when the copy has not ended. */
static void fetch_grads(void *arg)
{
    struct rank_bias *rb = arg;
    const struct backend_ops *be = rb->be;
    if (!be->event_query(rb->down))
        be->event_sync(rb->down);
    const size_t bytes = (size_t)(rb->nu * rb->K) * sizeof(float);
    if (bytes)
        memcpy(rb->ext->grads(rb->ext->ctx), rb->hg, bytes);
}

void rank_bias_bwd(struct rank_bias *rb, int64_t n, const float *dz)
{
    if (!rb->on || (n <= 0 && !rb->ext))
        return;
    const struct backend_ops *be = rb->be;
    if (!rb->ext) {
        be->scatter_add_rows(n, rb->K, dz, mirror_at(&rb->items), rb->item->g);
        be->scatter_add_rows(n, rb->K, dz, mirror_at(&rb->users), rb->user->g);
        return;
    }
    /* the gradient per unique row, in token order (the dense way's sums) */
    const size_t bytes = (size_t)(rb->nu * rb->K) * sizeof(float);
    float *g = mirror_bind(&rb->grads, be, &backend_cpu, rb->ext->grads(rb->ext->ctx),
                           bytes ? bytes : sizeof(float));
    if (n > 0) {
        be->zero(g, bytes);
        be->scatter_add_rows(n, rb->K, dz, mirror_at(&rb->items), g);
        be->scatter_add_rows(n, rb->K, dz, mirror_at(&rb->users), g);
    }
    if (rb->grads.alias) { /* host memory: the gradients are where the owners read */
        rb->ext->push(rb->ext->ctx);
        return;
    }
    /* a device: down on the comm stream (after the scatters) while the
     * model's backward runs; fetch_grads when the owners need them */
    if (bytes > rb->hcap) {
        be->host_free(rb->hg);
        rb->hcap = bytes + bytes / 2;
        rb->hg = be->host_alloc(rb->hcap);
    }
    if (!rb->down)
        rb->down = be->event_new(0);
    be->to_host_async(rb->hg, g, bytes);
    be->event_record(rb->down, BACKEND_COMM);
    rb->ext->defer(rb->ext->ctx, fetch_grads, rb);
}

void rank_bias_set(struct rank_bias *rb, const float *item, const float *user)
{
    if (rb->ext) {
        rb->ext->set(rb->ext->ctx, item, user);
        return;
    }
    if (!rb->item)
        return;
    rb->be->to_device(rb->item->w, item, (size_t)rb->item->n * sizeof(float));
    rb->be->to_device(rb->user->w, user, (size_t)rb->user->n * sizeof(float));
}

void rank_bias_get(const struct rank_bias *rb, float *item, float *user)
{
    if (rb->ext) {
        rb->ext->get(rb->ext->ctx, item, user);
        return;
    }
    if (!rb->item)
        return;
    rb->be->to_host(item, rb->item->w, (size_t)rb->item->n * sizeof(float));
    rb->be->to_host(user, rb->user->w, (size_t)rb->user->n * sizeof(float));
}

void rank_bias_free(struct rank_bias *rb)
{
    if (rb->be)
        rb->be->free(rb->tmp);
    if (rb->hg)
        rb->be->host_free(rb->hg);
    if (rb->down)
        rb->be->event_free(rb->down);
    mirror_free(&rb->rows);
    mirror_free(&rb->grads);
    mirror_free(&rb->items);
    mirror_free(&rb->users);
    free(rb->tu);
    memset(rb, 0, sizeof *rb);
}
