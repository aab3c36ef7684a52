/* checkpoint_priv: what the checkpoint writer and reader share. */
#ifndef FS_CHECKPOINT_PRIV_H
#define FS_CHECKPOINT_PRIV_H

#define CKPT_FORMAT "freescale-ckpt"
/* 2: chunked datasets with Fletcher-32 checksums, v2 object headers;
 * 1: contiguous datasets, no checksums (still read) */
#define CKPT_VERSION 2

#endif
