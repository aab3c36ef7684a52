/* comm_priv: what the files of the comm module share (comm.c,
 * comm_nodes.c); everything else uses comm.h. */
#ifndef FS_COMM_PRIV_H
#define FS_COMM_PRIV_H

#include "comm/comm.h"

/* c->node_of from the node communicator, and every built group's remote[]
 * (after comm_init has built world, node and xnode). */
void comm_nodes_init(struct comm *c);
/* Group grp's remote[] from c->node_of (its ranks translated to world
 * ranks); nothing before comm_nodes_init. */
void comm_group_nodes(struct comm *c, enum comm_group grp);

#endif
