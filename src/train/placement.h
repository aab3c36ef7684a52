/* placement: embedding.placement, where the item table's shard and its
 * optimizer state live (doc/gpu.md, "What runs where").
 *
 *   host    host memory (any backend)
 *   device  the backend's device memory (CUDA, the fake device): refused
 *           on the CPU backend and where the shard and its state need more
 *           than half of the device's free memory per rank sharing it
 *   auto    device when the run is one that device placement takes
 *           (train_conf_device_refusal: none of its refusals) and the
 *           shard with its optimizer state (a dynamic table: its pool and
 *           index grown to embedding.capacity) and the step's workspace
 *           (the model's buffers for a training batch, reserved now and
 *           measured) fit in half of the device's free memory per rank
 *           sharing it, on every rank; host otherwise. The start-up line
 *           says which and why, in MiB. With embedding.cache set, a
 *           host answer becomes a device cache over the host table when
 *           the cache fits (train/train_cache.h: train_cache_apply). */
#ifndef FS_TRAIN_PLACEMENT_H
#define FS_TRAIN_PLACEMENT_H

#include <stddef.h>

struct trainer;
struct backend_ops;

/* The item table's placement: tr->be (device memory) or NULL (host
 * memory). Collective over the world (every rank gets the same answer);
 * a refused device placement fails the job with the figures. */
const struct backend_ops *train_placement(struct trainer *tr);
/* The room for tables on this rank's device: half of its free memory
 * (*free_b, read now) per rank sharing it. Collective: a rank's failed
 * read fails the job. */
double train_placement_room(struct trainer *tr, size_t *free_b);

#endif
