/* comm_tags: the one table of point-to-point message tags (struct
 * comm_msg's tag, 0 <= tag < 32768). Tags need only differ within a
 * communicator, but the ranges are disjoint all the same, so that a
 * message is known by its tag alone (in a trace, in a debugger), and a new
 * kind of message takes the next free range here.
 *
 *   COMM_TAG_KV        train/ctx_split.c (the world): the keys and values of
 *                      the chunks of a cut sequence, forward ([from][to][k|v],
 *                      up to SPLIT_MAX_CHUNKS^2 pairs), then their gradients
 *                      from COMM_TAG_KV_BACK
 *   COMM_TAG_XFER      embedding/emb_xfer.c (the emb group): the rows of a
 *                      device table's transfers, one tag per table and kind
 *   COMM_TAG_IPC_CTL   embedding/emb_ipc.c: the hand-off of a window's
 *                      segment (CUDA IPC), per table and kind
 *   COMM_TAG_IPC_ACK   embedding/emb_ipc.c: its acknowledgement */
#ifndef FS_COMM_TAGS_H
#define FS_COMM_TAGS_H

enum comm_tag {
    COMM_TAG_KV = 0x0000,
    COMM_TAG_KV_BACK = 0x2000,
    COMM_TAG_XFER = 0x4000,
    COMM_TAG_IPC_CTL = 0x5000,
    COMM_TAG_IPC_ACK = 0x6000,
    COMM_TAG_END = 0x7000 /* the tags in use end here (< 32768, MPI's least upper bound) */
};

/* The tag of table `table`'s transfer of kind k (nk kinds) from base. */
static inline int comm_tag_table(enum comm_tag base, int table, int nk, int k)
{
    return (int)base + table * nk + k;
}

#endif
