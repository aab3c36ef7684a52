/* comm_nodes: which ranks share a node, for the byte counters (bytes to
 * other nodes, comm.h); see comm_priv.h. */
#include <mpi.h>
#include <stdlib.h>

#include "base/check.h"
#include "comm/comm_priv.h"

void comm_nodes_init(struct comm *c)
{
    int leader = c->rank; /* a node is named by its lowest world rank */
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN,
                            *(MPI_Comm *)c->g[COMM_NODE].mpi));
    c->node_of = xmalloc((size_t)c->size * sizeof *c->node_of);
    MPI_CHECK(MPI_Allgather(&leader, 1, MPI_INT, c->node_of, 1, MPI_INT,
                            *(MPI_Comm *)c->g[COMM_WORLD].mpi));
    for (int grp = COMM_WORLD; grp <= COMM_XNODE; grp++)
        comm_group_nodes(c, (enum comm_group)grp);
}

/* remote[] of group grp from c->node_of (ranks translated to world ranks). */
void comm_group_nodes(struct comm *c, enum comm_group grp)
{
    struct comm_group_info *gi = &c->g[grp];
    if (!gi->mpi || !c->node_of)
        return;
    MPI_Group gg, wg;
    MPI_CHECK(MPI_Comm_group(*(MPI_Comm *)gi->mpi, &gg));
    MPI_CHECK(MPI_Comm_group(*(MPI_Comm *)c->g[COMM_WORLD].mpi, &wg));
    int *in = xmalloc((size_t)gi->size * sizeof *in), *w = xmalloc((size_t)gi->size * sizeof *w);
    for (int p = 0; p < gi->size; p++)
        in[p] = p;
    MPI_CHECK(MPI_Group_translate_ranks(gg, gi->size, in, wg, w));
    free(gi->remote);
    gi->remote = in; /* reused */
    for (int p = 0; p < gi->size; p++)
        gi->remote[p] = c->node_of[w[p]] != c->node_of[c->rank];
    free(w);
    MPI_CHECK(MPI_Group_free(&gg));
    MPI_CHECK(MPI_Group_free(&wg));
}

int comm_peer_remote(const struct comm *c, enum comm_group g, int p)
{
    return c->g[g].remote ? c->g[g].remote[p] : 0;
}

void comm_set_node_size(struct comm *c, int n)
{
    if (n < 1)
        fatal("comm_set_node_size: %d ranks per node", n);
    for (int r = 0; r < c->size; r++)
        c->node_of[r] = r / n * n;
    for (int grp = 0; grp < COMM_NGROUPS; grp++)
        comm_group_nodes(c, (enum comm_group)grp);
}

