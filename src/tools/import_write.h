/* import_write: the last step of 'freescale data import': the events in
 * dense ids, grouped by user and ordered by time, their event features,
 * the id maps and the user and item features, through the dataset writer
 * (the file appears only when everything succeeded). */
#ifndef FS_IMPORT_WRITE_H
#define FS_IMPORT_WRITE_H

#include <stdint.h>

#include "tools/import_feat.h"
#include "tools/import_read.h"

/* perm [off[nu]]: event indexes grouped by dense user; off [nu + 1];
 * irank [items.n] dense item - 1; uorder [nu], iorder [ni]: the interned
 * indexes in dense order; feat: user and item features (dense order).
 * iraw [ni], uraw [nu]: with --ids raw (import_raw.h), the raw id of each
 * item and user rank (the events get iraw's ids, /items/ids = iraw,
 * /user_map = uraw); NULL: dense ids 1 .. ni. */
void import_write(const char *path, const struct import_events *ev, const int64_t *perm,
                  const int64_t *off, int64_t nu, const int32_t *irank, const int32_t *uorder,
                  const int32_t *iorder, int64_t ni, const struct import_features *feat,
                  const int64_t *iraw, const int64_t *uraw);

#endif
