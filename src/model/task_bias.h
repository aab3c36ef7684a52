/* task_bias: the per-item and per-user terms of the ranking logits
 * (model.bias; task_ranking.c uses it): z[t, k] += item[i_t, k] +
 * user[u_t, k], with item [num_items + 1, K] and user [num_users, K], K
 * floats a row. Two ways to hold them:
 *   - dense parameters of the model (bias.item, bias.user: replicated on
 *     every rank, all-reduced and updated by AdamW like the head); the
 *     gradients are the rows of dz scatter-added in token order;
 *   - rows held outside the model (tc->bias_rows: the trainer's, sharded
 *     over the ranks; train/bias_rows.h), reached through struct
 *     rank_bias_rows: a forward asks for the unique rows of its tokens
 *     (host), uploads them and gathers each token's as the dense way does;
 *     the backward scatter-adds dz in token order into the gradient per
 *     unique row, brings it to the host and hands it back. */
#ifndef FS_MODEL_TASK_BIAS_H
#define FS_MODEL_TASK_BIAS_H

#include <stdint.h>

#include "backend/backend.h"
#include "backend/mirror.h"
#include "model/model.h"

/* The rows held outside the model: lookup returns the unique rows
 * [*nu, K] (host) of n tokens' items [n] and users [n] with each token's
 * row indexes (every rank calls it together; train: a training step,
 * whose gradients follow); grads the last training lookup's gradient per
 * unique row [nu, K] (host, zeroed), push sends it (collective); set and
 * get the whole tables (host item [num_items + 1, K], user [num_users, K];
 * collective). */
struct rank_bias_rows {
    void *ctx;
    const float *(*lookup)(void *ctx, int64_t n, const int64_t *items, const int64_t *users,
                           int train, const int64_t **inv_item, const int64_t **inv_user,
                           int64_t *nu);
    float *(*grads)(void *ctx);
    void (*push)(void *ctx);
    /* push later: fetch(arg) fills grads when the owners need them, then
     * they are pushed (a device's gradients come down meanwhile) */
    void (*defer)(void *ctx, void (*fetch)(void *arg), void *arg);
    void (*set)(void *ctx, const float *item, const float *user);
    void (*get)(void *ctx, float *item, float *user);
};

struct rank_bias {
    const struct backend_ops *be;      /* the model's */
    int on;                            /* model.bias */
    const struct rank_bias_rows *ext;  /* the rows held outside (rank_bias_attach), or NULL */
    struct mirror rows, grads;         /* [nu, K] the step's unique rows, their gradients */
    int64_t nu;
    float *hg;                         /* [hcap] pinned: a device's gradients coming down */
    size_t hcap;                       /* its bytes */
    struct backend_event *down;        /* their copy's end on the comm stream */
    int K;
    struct dense_tensor *item, *user;  /* the dense way's, else NULL */
    struct mirror items, users;        /* [n] the tokens' rows (outside: their indexes among
                                        * the unique rows), uploaded by the forward */
    int64_t *tu;                       /* [cap] host: each token's user */
    int64_t cap;
    float *tmp;                        /* [tcap, K] the rows gathered (backend) */
    int64_t tcap;
    struct stage *st;                  /* the uploads' pinned ring (the head's), or NULL */
};

/* Find bias.item and bias.user in m (on: fatal when absent), or with
 * outside = 1 expect the rows from rank_bias_attach. */
void rank_bias_init(struct rank_bias *rb, struct model *m, int K, int on, int outside);
/* The rows held outside the model (kept by the caller). */
void rank_bias_attach(struct rank_bias *rb, const struct rank_bias_rows *ext);
/* z [n, K] (backend) += the rows of items [n] and of the users: users [n]
 * (host) per token, or NULL with (B, seq_users [B], offsets [B + 1]) the
 * sequences' users. Keeps the indexes for rank_bias_bwd. train: a
 * training step's (rank_bias_bwd follows); with rows held outside, every
 * rank calls it together, n = 0 too. */
void rank_bias_fwd(struct rank_bias *rb, int64_t n, const int64_t *items, const int64_t *users,
                   int64_t B, const int64_t *seq_users, const int64_t *offsets, int train,
                   float *z);
/* The gradients of the last forward's n rows: dz [n, K] (backend); with
 * rows held outside, collective (n = 0 too): in host memory they are
 * pushed at once; on a device they come down on the comm stream and are
 * pushed when the optimizer needs them (no host wait once the copy is
 * done). */
void rank_bias_bwd(struct rank_bias *rb, int64_t n, const float *dz);
/* Set the values from host item [num_items + 1, K], user [num_users, K]. */
void rank_bias_set(struct rank_bias *rb, const float *item, const float *user);
/* Copy the values to host item [num_items + 1, K], user [num_users, K]. */
void rank_bias_get(const struct rank_bias *rb, float *item, float *user);
void rank_bias_free(struct rank_bias *rb);

#endif
