/* ckpt_dyn_sort: records of a dynamic table (a row, a probation pair, an
 * evicted id: an id first), spread over the ranks, sorted by id among them
 * (a sample sort, collective over world), so that a checkpoint's
 * /emb/NAME datasets are in ascending id order whatever P and G wrote
 * them; and the record exchange it and ckpt_dyn.c's read use. */
#ifndef FS_CHECKPOINT_DYN_SORT_H
#define FS_CHECKPOINT_DYN_SORT_H

#include <stdint.h>

#include "comm/comm.h"

/* The records packed in send for each rank q (sc[q] records of rb bytes
 * from record sd[q]; cnt = [4P]: sc, sd, then rc, rd filled here) to their
 * ranks (collective over world): what this rank receives, in rank order,
 * into *recv (grown as needed); returns their count. */
int64_t ckpt_dyn_exchange(struct comm *c, int64_t *cnt, int64_t rb, const void *send,
                          char **recv);

/* A record's key and place: ascending key (the id as an unsigned 64-bit
 * number: id 0, the shared unadmitted row, first), then place. */
struct ckpt_dyn_key {
    uint64_t key;
    int64_t at;
};

/* This rank's run after the sort: the records of its range of ids, the
 * i-th in id order at rec + ord[i].at * rb; the runs of ranks 0, 1, ...
 * one after the other are every rank's records in ascending id order. */
struct ckpt_dyn_run {
    char *rec;
    struct ckpt_dyn_key *ord;
    int64_t n, rb;
};

/* Packs this rank's i-th record (of rb bytes, its id first) into out. */
typedef void (*ckpt_dyn_pack)(const void *ctx, int64_t i, char *out);

/* Collective over world: this rank's n records (ids[i], packed by pack)
 * sorted by id among all ranks into *run (the splitters from an all-gather
 * of samples of every rank's ids; the records sent in rounds of at most
 * block each). */
void ckpt_dyn_sort(struct comm *c, const int64_t *ids, int64_t n, int64_t rb, ckpt_dyn_pack pack,
                   const void *ctx, int64_t block, struct ckpt_dyn_run *run);
void ckpt_dyn_run_free(struct ckpt_dyn_run *run);

#endif
