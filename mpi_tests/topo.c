/* Process topologies: Dims_create, Cartesian grids (rank/coords/shift/sub),
 * graphs and distributed graphs, Topo_test. */
#include "util.h"

int main(int argc, char **argv) {
    int rank, size, st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;

    int d2[2] = {0, 0};
    MPI_Dims_create(size, 2, d2);
    CHECK(d2[0] * d2[1] == size && d2[0] >= d2[1], "dims_create %d x %d", d2[0], d2[1]);
    int d3[3] = {0, 3, 0};
    MPI_Dims_create(12, 3, d3);
    CHECK(d3[1] == 3 && d3[0] * d3[2] == 4 && d3[0] >= d3[2], "dims_create fixed %d %d %d", d3[0], d3[1], d3[2]);
    int d4[2] = {0, 0};
    MPI_Dims_create(12, 2, d4);
    CHECK(d4[0] == 4 && d4[1] == 3, "dims_create 12 -> %d %d", d4[0], d4[1]);

    int periods[2] = {1, 0};
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, d2, periods, 0, &cart);
    MPI_Topo_test(cart, &st);
    CHECK(st == MPI_CART, "topo_test %d", st);
    MPI_Topo_test(MPI_COMM_WORLD, &st);
    CHECK(st == MPI_UNDEFINED, "world topology %d", st);
    int nd, dims[2], per[2], coords[2], r;
    MPI_Cartdim_get(cart, &nd);
    MPI_Cart_get(cart, 2, dims, per, coords);
    CHECK(nd == 2 && dims[0] == d2[0] && per[0] == 1 && per[1] == 0, "cart_get");
    CHECK(coords[0] == rank / d2[1] && coords[1] == rank % d2[1], "coords %d %d", coords[0], coords[1]);
    MPI_Cart_rank(cart, coords, &r);
    CHECK(r == rank, "cart_rank %d", r);
    int src, dst;
    MPI_Cart_shift(cart, 0, 1, &src, &dst);
    CHECK(src == ((coords[0] - 1 + d2[0]) % d2[0]) * d2[1] + coords[1], "periodic shift source %d", src);
    CHECK(dst == ((coords[0] + 1) % d2[0]) * d2[1] + coords[1], "periodic shift dest %d", dst);
    MPI_Cart_shift(cart, 1, 1, &src, &dst);
    CHECK(src == (coords[1] == 0 ? MPI_PROC_NULL : rank - 1), "non-periodic source %d", src);
    CHECK(dst == (coords[1] == d2[1] - 1 ? MPI_PROC_NULL : rank + 1), "non-periodic dest %d", dst);
    /* A halo exchange along dimension 0 with the shift's neighbours. */
    MPI_Cart_shift(cart, 0, 1, &src, &dst);
    int mine = rank * 7, got = -1;
    MPI_Sendrecv(&mine, 1, MPI_INT, dst, 0, &got, 1, MPI_INT, src, 0, cart, MPI_STATUS_IGNORE);
    CHECK(got == src * 7, "halo value %d from %d", got, src);
    /* Rows: keep dimension 1. */
    int remain[2] = {0, 1};
    MPI_Comm row;
    MPI_Cart_sub(cart, remain, &row);
    int rs, rr;
    MPI_Comm_size(row, &rs);
    MPI_Comm_rank(row, &rr);
    CHECK(rs == d2[1] && rr == coords[1], "cart_sub size %d rank %d", rs, rr);
    int rowsum;
    MPI_Allreduce(&rank, &rowsum, 1, MPI_INT, MPI_SUM, row);
    int expect = 0;
    for (int j = 0; j < d2[1]; j++) expect += coords[0] * d2[1] + j;
    CHECK(rowsum == expect, "row sum %d expected %d", rowsum, expect);
    MPI_Cartdim_get(row, &nd);
    CHECK(nd == 1, "sub dims %d", nd);
    int cc[2];
    MPI_Cart_coords(cart, size - 1, 2, cc);
    CHECK(cc[0] == d2[0] - 1 && cc[1] == d2[1] - 1, "coords of last");
    int nr;
    MPI_Cart_map(MPI_COMM_WORLD, 2, d2, periods, &nr);
    CHECK(nr == rank, "cart_map %d", nr);

    /* Graph: a ring. */
    int *index = malloc(sizeof(int) * size), *edges = malloc(sizeof(int) * 2 * size);
    for (int i = 0; i < size; i++) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + 1) % size;
        edges[2 * i + 1] = (i + size - 1) % size;
    }
    MPI_Comm g;
    MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g);
    MPI_Topo_test(g, &st);
    CHECK(st == MPI_GRAPH, "graph topo");
    int nn, ne, nb[2], cnt;
    MPI_Graphdims_get(g, &nn, &ne);
    CHECK(nn == size && ne == 2 * size, "graphdims");
    MPI_Graph_neighbors_count(g, rank, &cnt);
    MPI_Graph_neighbors(g, rank, 2, nb);
    CHECK(cnt == 2 && nb[0] == (rank + 1) % size && nb[1] == (rank + size - 1) % size, "graph neighbors");

    /* Distributed graph: every rank declares the edge rank -> rank+1 (and weights). */
    int s1 = rank, deg = 1, d1 = (rank + 1) % size, w1 = 10 + rank;
    MPI_Comm dg;
    MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &s1, &deg, &d1, &w1, MPI_INFO_NULL, 0, &dg);
    int indeg, outdeg, weighted, srcs[4], sw[4], dsts[4], dw[4];
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    CHECK(indeg == 1 && outdeg == 1 && weighted, "dist graph counts %d %d %d", indeg, outdeg, weighted);
    MPI_Dist_graph_neighbors(dg, 4, srcs, sw, 4, dsts, dw);
    CHECK(srcs[0] == (rank + size - 1) % size && sw[0] == 10 + (rank + size - 1) % size && dsts[0] == d1 && dw[0] == w1, "dist graph neighbors");
    int ins[2] = {(rank + size - 1) % size, (rank + 1) % size}, outs[2] = {(rank + 1) % size, (rank + size - 1) % size};
    MPI_Comm adj;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, ins, MPI_UNWEIGHTED, 2, outs, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &adj);
    MPI_Dist_graph_neighbors_count(adj, &indeg, &outdeg, &weighted);
    CHECK(indeg == 2 && outdeg == 2 && !weighted, "adjacent counts");
    MPI_Dist_graph_neighbors(adj, 2, srcs, MPI_UNWEIGHTED, 2, dsts, MPI_UNWEIGHTED);
    CHECK(srcs[1] == (rank + 1) % size && dsts[0] == (rank + 1) % size, "adjacent neighbors");
    MPI_Topo_test(adj, &st);
    CHECK(st == MPI_DIST_GRAPH, "dist graph topo");

    /* Errors. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Cartdim_get(MPI_COMM_WORLD, &nd) == MPI_ERR_TOPOLOGY, "cartdim on world");
    int big[2] = {size + 1, 1};
    MPI_Comm bad;
    CHECK(MPI_Cart_create(MPI_COMM_WORLD, 2, big, periods, 0, &bad) == MPI_ERR_DIMS, "grid too large");
    free(index);
    free(edges);
    MPI_Comm_free(&adj); MPI_Comm_free(&dg); MPI_Comm_free(&g); MPI_Comm_free(&row); MPI_Comm_free(&cart);
    MPI_Finalize();
    return 0;
}
