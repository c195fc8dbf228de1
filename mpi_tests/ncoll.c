/* MPI_Alltoallw and neighbourhood collectives on Cartesian and distributed
 * graph topologies, blocking and nonblocking. */
#include "util.h"

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;

    /* A periodic size x 1 grid: dimension 1 is always its own neighbour,
     * dimension 0 too at 1 and 2 ranks. The block sent in the negative
     * direction of a dimension lands in the neighbour's positive block and
     * the other way round (MPI-4.0 errata): block s arrives as block s ^ 1,
     * also where both neighbours are the same rank. */
    {
        int dims[2] = {size, 1}, periods[2] = {1, 1}, src[4];
        MPI_Comm g;
        MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &g);
        for (int d = 0; d < 2; d++) MPI_Cart_shift(g, d, 1, &src[2 * d], &src[2 * d + 1]);
        int sb[4], rb[4], cnt[4] = {1, 1, 1, 1}, dsp[4] = {0, 1, 2, 3};
        for (int form = 0; form < 3; form++) {
            for (int k = 0; k < 4; k++) sb[k] = rank * 10 + k, rb[k] = -1;
            if (form == 0) {
                MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, g);
            } else if (form == 1) {
                MPI_Request q;
                MPI_Ineighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, g, &q);
                MPI_Wait(&q, MPI_STATUS_IGNORE);
            } else {
                MPI_Neighbor_alltoallv(sb, cnt, dsp, MPI_INT, rb, cnt, dsp, MPI_INT, g);
            }
            for (int t = 0; t < 4; t++)
                CHECK(rb[t] == src[t] * 10 + (t ^ 1), "form %d: periodic grid block %d from %d = %d, want %d", form, t,
                      src[t], rb[t], src[t] * 10 + (t ^ 1));
        }
        MPI_Comm_free(&g);
    }

    /* Alltoallw: to rank j send j+1 ints, receive from rank j as doubles' bytes? keep ints and doubles alternately. */
    {
        int *sc = malloc(sizeof(int) * size), *rc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
        MPI_Datatype *st = malloc(sizeof(MPI_Datatype) * size), *rt = malloc(sizeof(MPI_Datatype) * size);
        char *sbuf = malloc(64 * size), *rbuf = malloc(64 * size);
        for (int j = 0; j < size; j++) {
            int isd = (j % 2 == 0);
            sc[j] = 2; st[j] = isd ? MPI_DOUBLE : MPI_INT; sd[j] = 64 * j;
            int isd_r = (rank % 2 == 0);
            rc[j] = 2; rt[j] = isd_r ? MPI_DOUBLE : MPI_INT; rd[j] = 64 * j;
            if (isd) { double *p = (double *)(sbuf + 64 * j); p[0] = rank + 0.5; p[1] = j + 0.25; }
            else { int *p = (int *)(sbuf + 64 * j); p[0] = rank; p[1] = j; }
        }
        MPI_Alltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD);
        for (int j = 0; j < size; j++) {
            if (rank % 2 == 0) { double *p = (double *)(rbuf + 64 * j); CHECK(p[0] == j + 0.5 && p[1] == rank + 0.25, "alltoallw double from %d", j); }
            else { int *p = (int *)(rbuf + 64 * j); CHECK(p[0] == j && p[1] == rank, "alltoallw int from %d", j); }
        }
        free(sc); free(rc); free(sd); free(rd); free(st); free(rt); free(sbuf); free(rbuf);
    }

    /* 2-D periodic Cartesian grid. */
    int dims[2] = {0, 0}, periods[2] = {1, 1}, coords[2];
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Cart_coords(cart, rank, 2, coords);
    int nb[4];
    MPI_Cart_shift(cart, 0, 1, &nb[0], &nb[1]);
    MPI_Cart_shift(cart, 1, 1, &nb[2], &nb[3]);
    int got[4];
    MPI_Neighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, cart);
    for (int k = 0; k < 4; k++) CHECK(got[k] == nb[k], "neighbor_allgather slot %d: %d vs %d", k, got[k], nb[k]);
    /* alltoall: what I send towards direction k arrives in the neighbour's slot of the opposite direction */
    int out[4], in[4];
    for (int k = 0; k < 4; k++) out[k] = rank * 10 + k;
    MPI_Request rq;
    MPI_Ineighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, cart, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    if (dims[0] > 2 && dims[1] > 2) {
        CHECK(in[0] == nb[0] * 10 + 1 && in[1] == nb[1] * 10 + 0, "neighbor_alltoall dim 0");
        CHECK(in[2] == nb[2] * 10 + 3 && in[3] == nb[3] * 10 + 2, "neighbor_alltoall dim 1");
    }
    for (int k = 0; k < 4; k++) CHECK(in[k] / 10 == nb[k], "neighbor_alltoall source of slot %d", k);

    /* Distributed graph: rank -> rank+1 and rank+2; neighbor_allgatherv with counts 1 and 2. */
    int dst[2] = {(rank + 1) % size, (rank + 2) % size};
    int src[2] = {(rank + size - 1) % size, (rank + size - 2) % size};
    MPI_Comm dg;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, MPI_UNWEIGHTED, 2, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg);
    int mine[2] = {rank, rank * 2}, rcounts[2] = {2, 2}, displs[2] = {0, 3}, all[5] = {-1, -1, -1, -1, -1};
    MPI_Neighbor_allgatherv(mine, 2, MPI_INT, all, rcounts, displs, MPI_INT, dg);
    CHECK(all[0] == src[0] && all[1] == src[0] * 2 && all[2] == -1 && all[3] == src[1] && all[4] == src[1] * 2, "neighbor_allgatherv");
    int sc2[2] = {1, 1}, sd2[2] = {0, 1}, s2[2] = {rank * 100 + 1, rank * 100 + 2}, r2[2];
    MPI_Neighbor_alltoallv(s2, sc2, sd2, MPI_INT, r2, sc2, sd2, MPI_INT, dg);
    CHECK(r2[0] == src[0] * 100 + 1 && r2[1] == src[1] * 100 + 2, "neighbor_alltoallv %d %d", r2[0], r2[1]);
    /* The same exchange as a persistent request, started three times. */
    MPI_Request pr;
    MPI_Neighbor_alltoallv_init(s2, sc2, sd2, MPI_INT, r2, sc2, sd2, MPI_INT, dg, MPI_INFO_NULL, &pr);
    for (int it = 0; it < 3; it++) {
        s2[0] = rank * 100 + it; s2[1] = rank * 100 + 10 + it;
        MPI_Start(&pr);
        MPI_Wait(&pr, MPI_STATUS_IGNORE);
        CHECK(r2[0] == src[0] * 100 + it && r2[1] == src[1] * 100 + 10 + it, "persistent neighbor_alltoallv iteration %d", it);
    }
    MPI_Request_free(&pr);
    MPI_Comm_free(&dg);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}
