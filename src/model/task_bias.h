/* task_bias: the per-item and per-user terms of the ranking logits
 * (model.bias; task_ranking.c uses it): z[t, k] += item[i_t, k] +
 * user[u_t, k], with item [num_items + 1, K] and user [num_users, K] two
 * dense parameters of the model (bias.item, bias.user: replicated on every
 * rank, all-reduced and updated by AdamW like the head; K floats a row).
 * The gradients are the rows of dz scatter-added in token order. */
#ifndef FS_MODEL_TASK_BIAS_H
#define FS_MODEL_TASK_BIAS_H

#include <stdint.h>

#include "backend/backend.h"
#include "backend/mirror.h"
#include "model/model.h"

struct rank_bias {
    const struct backend_ops *be;      /* the model's */
    int K;
    struct dense_tensor *item, *user;  /* NULL: model.bias = off */
    struct mirror items, users;        /* [n] the tokens' rows, uploaded by the forward */
    int64_t *tu;                       /* [cap] host: each token's user */
    int64_t cap;
    float *tmp;                        /* [tcap, K] the rows gathered (backend) */
    int64_t tcap;
    struct stage *st;                  /* the uploads' pinned ring (the head's), or NULL */
};

/* Find bias.item and bias.user in m (on: fatal when absent). */
void rank_bias_init(struct rank_bias *rb, struct model *m, int K, int on);
/* z [n, K] (backend) += the rows of items [n] and of the users: users [n]
 * (host) per token, or NULL with (B, seq_users [B], offsets [B + 1]) the
 * sequences' users. Keeps the indexes for rank_bias_bwd. */
void rank_bias_fwd(struct rank_bias *rb, int64_t n, const int64_t *items, const int64_t *users,
                   int64_t B, const int64_t *seq_users, const int64_t *offsets, float *z);
/* The gradients of the last forward's n rows: dz [n, K] (backend). */
void rank_bias_bwd(struct rank_bias *rb, int64_t n, const float *dz);
/* Set the values from host item [num_items + 1, K], user [num_users, K]. */
void rank_bias_set(struct rank_bias *rb, const float *item, const float *user);
/* Copy the values to host item [num_items + 1, K], user [num_users, K]. */
void rank_bias_get(const struct rank_bias *rb, float *item, float *user);
void rank_bias_free(struct rank_bias *rb);

#endif
