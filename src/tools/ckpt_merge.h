/* ckpt_merge: freescale checkpoint merge (doc/embedding.md, "Dynamic
 * tables"): a delta checkpoint's chain folded into one full checkpoint. */
#ifndef FS_CKPT_MERGE_H
#define FS_CKPT_MERGE_H

/* argv[0] = "checkpoint", argv[1] = "merge". */
int ckpt_merge_main(int argc, char **argv);

#endif
