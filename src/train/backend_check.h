/* backend_check: every refusal of what a run asks (its resolved parameters,
 * struct train_conf) that the backend it computes on cannot give (struct
 * backend_ops: an operation it lacks, no device memory, no CUDA IPC), in
 * one place with one message form:
 *     ASKED: WHY; use REMEDY
 * e.g. "train.loss = full: the fake backend has no full softmax; use
 * device.type = cpu". Called once at set-up, with the backend device_select
 * chose (trainer_build), and before that with the CPU backend when
 * device.type = cpu (train_conf_check: 'freescale params' and the first
 * error of a run). The operations below it (the losses, the models'
 * context-parallel attention, the transports) assume what it checked. */
#ifndef FS_BACKEND_CHECK_H
#define FS_BACKEND_CHECK_H

#include <stddef.h>

#include "backend/backend.h"
#include "train/train_conf.h"

/* 0 when be can run cf, else -1 with err: the first refusal in the order
 * of the table in backend_check.c. */
int backend_check(const struct backend_ops *be, const struct train_conf *cf, char *err,
                  size_t errlen);
/* What embedding.cache (a device cache over the host-placed item and
 * feature tables, train/train_cache.h) cannot cover in cf, whatever the backend (the run's
 * configuration check, before any backend is known; the backend's own
 * refusal, no device memory, is backend_check's): 0, or -1 with err. */
int backend_check_cache(const struct train_conf *cf, char *err, size_t errlen);

#endif
