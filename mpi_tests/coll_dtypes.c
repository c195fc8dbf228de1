/* The gather, scatter, allgather, alltoall and reduce-scatter families with a
 * non-contiguous datatype: "pair" is two ints with a gap between them and a
 * gap after (extent 4 ints). Every call is checked value by value, and the
 * gaps must stay untouched; also with MPI_IN_PLACE and v-forms with
 * reversed displacements. */
#include "util.h"

#define GAP -7
static MPI_Datatype pair;
static int rank, size;

/* n pairs in a buffer of 4n ints, gaps set. */
static int *pairs(int n) {
    int *b = malloc(sizeof(int) * 4 * (n ? n : 1));
    for (int i = 0; i < 4 * n; i++) b[i] = GAP;
    return b;
}
static void setp(int *b, int i, int x, int y) { b[4 * i] = x; b[4 * i + 2] = y; }
static void checkp(const int *b, int i, int x, int y, const char *what) {
    CHECK(b[4 * i] == x && b[4 * i + 2] == y, "%s: pair %d = (%d, %d), expected (%d, %d)", what, i, b[4 * i],
          b[4 * i + 2], x, y);
    CHECK(b[4 * i + 1] == GAP && b[4 * i + 3] == GAP, "%s: gap of pair %d written", what, i);
}
static int V(int src, int k) { return src * 1000 + k; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    MPI_Datatype v;
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 4 * sizeof(int), &pair);
    MPI_Type_commit(&pair);
    MPI_Type_free(&v);
    const int K = 3; /* pairs per rank */
    int root = size - 1;
    int ints[6];
    for (int k = 0; k < 6; k++) ints[k] = V(rank, k);

    /* Gather: ints in, pairs out at the root. */
    int *g = pairs(K * size);
    MPI_Gather(ints, 2 * K, MPI_INT, g, K, pair, root, MPI_COMM_WORLD);
    if (rank == root)
        for (int r = 0; r < size; r++)
            for (int k = 0; k < K; k++) checkp(g, r * K + k, V(r, 2 * k), V(r, 2 * k + 1), "gather");
    /* Gather in place at the root, pairs in and out. */
    int *mine = pairs(K);
    for (int k = 0; k < K; k++) setp(mine, k, V(rank, 2 * k), V(rank, 2 * k + 1));
    int *g2 = pairs(K * size);
    if (rank == root)
        for (int k = 0; k < K; k++) setp(g2, root * K + k, V(root, 2 * k), V(root, 2 * k + 1));
    MPI_Gather(rank == root ? MPI_IN_PLACE : mine, K, pair, g2, K, pair, root, MPI_COMM_WORLD);
    if (rank == root)
        for (int r = 0; r < size; r++)
            for (int k = 0; k < K; k++) checkp(g2, r * K + k, V(r, 2 * k), V(r, 2 * k + 1), "gather in place");
    /* Gatherv: rank r sends r+1 pairs, stored in reverse rank order. */
    int *cnt = malloc(sizeof(int) * size), *dsp = malloc(sizeof(int) * size), tot = 0;
    for (int r = size - 1; r >= 0; r--) { cnt[r] = r + 1; dsp[r] = tot; tot += r + 1; }
    int *send = pairs(rank + 1);
    for (int k = 0; k <= rank; k++) setp(send, k, V(rank, 10 + k), V(rank, 20 + k));
    int *gv = pairs(tot);
    MPI_Gatherv(send, rank + 1, pair, gv, cnt, dsp, pair, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int r = 0; r < size; r++)
            for (int k = 0; k <= r; k++) checkp(gv, dsp[r] + k, V(r, 10 + k), V(r, 20 + k), "gatherv");

    /* Scatter: pairs at the root, ints out; scatterv with the gatherv layout. */
    int *sc = pairs(K * size);
    if (rank == root)
        for (int r = 0; r < size; r++)
            for (int k = 0; k < K; k++) setp(sc, r * K + k, V(r, 40 + 2 * k), V(r, 41 + 2 * k));
    int got[6];
    MPI_Scatter(sc, K, pair, got, 2 * K, MPI_INT, root, MPI_COMM_WORLD);
    for (int k = 0; k < 2 * K; k++) CHECK(got[k] == V(rank, 40 + k), "scatter %d: %d", k, got[k]);
    int *back = pairs(rank + 1);
    MPI_Scatterv(gv, cnt, dsp, pair, back, rank + 1, pair, 0, MPI_COMM_WORLD);
    for (int k = 0; k <= rank; k++) checkp(back, k, V(rank, 10 + k), V(rank, 20 + k), "scatterv");

    /* Allgather, then in place; allgatherv with reversed displacements. */
    int *ag = pairs(K * size);
    MPI_Allgather(mine, K, pair, ag, K, pair, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int k = 0; k < K; k++) checkp(ag, r * K + k, V(r, 2 * k), V(r, 2 * k + 1), "allgather");
    int *ag2 = pairs(K * size);
    for (int k = 0; k < K; k++) setp(ag2, rank * K + k, V(rank, 2 * k), V(rank, 2 * k + 1));
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag2, K, pair, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int k = 0; k < K; k++) checkp(ag2, r * K + k, V(r, 2 * k), V(r, 2 * k + 1), "allgather in place");
    int *agv = pairs(tot);
    MPI_Allgatherv(send, rank + 1, pair, agv, cnt, dsp, pair, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int k = 0; k <= r; k++) checkp(agv, dsp[r] + k, V(r, 10 + k), V(r, 20 + k), "allgatherv");

    /* Alltoall: block for rank d holds (V(me, 100 + d), V(me, 200 + d)); then in place. */
    int *a2s = pairs(size), *a2r = pairs(size);
    for (int d = 0; d < size; d++) setp(a2s, d, V(rank, 100 + d), V(rank, 200 + d));
    MPI_Alltoall(a2s, 1, pair, a2r, 1, pair, MPI_COMM_WORLD);
    for (int s = 0; s < size; s++) checkp(a2r, s, V(s, 100 + rank), V(s, 200 + rank), "alltoall");
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a2s, 1, pair, MPI_COMM_WORLD);
    for (int s = 0; s < size; s++) checkp(a2s, s, V(s, 100 + rank), V(s, 200 + rank), "alltoall in place");
    /* Alltoallv: rank s sends d+1 pairs to rank d; blocks stored in reverse order. */
    int *sc2 = malloc(sizeof(int) * size), *sd2 = malloc(sizeof(int) * size);
    int *rc2 = malloc(sizeof(int) * size), *rd2 = malloc(sizeof(int) * size), st = 0, rt = 0;
    for (int d = size - 1; d >= 0; d--) { sc2[d] = d + 1; sd2[d] = st; st += d + 1; }
    for (int s = size - 1; s >= 0; s--) { rc2[s] = rank + 1; rd2[s] = rt; rt += rank + 1; }
    int *avs = pairs(st), *avr = pairs(rt);
    for (int d = 0; d < size; d++)
        for (int k = 0; k <= d; k++) setp(avs, sd2[d] + k, V(rank, 300 + 10 * d + k), V(rank, 600 + 10 * d + k));
    MPI_Alltoallv(avs, sc2, sd2, pair, avr, rc2, rd2, pair, MPI_COMM_WORLD);
    for (int s = 0; s < size; s++)
        for (int k = 0; k <= rank; k++)
            checkp(avr, rd2[s] + k, V(s, 300 + 10 * rank + k), V(s, 600 + 10 * rank + k), "alltoallv");

    /* Reduce_scatter_block and reduce_scatter (counts r+1), SUM over ranks; in place too. */
    int *rsb = pairs(K * size), *rso = pairs(K);
    for (int i = 0; i < K * size; i++) setp(rsb, i, rank + i, 2 * rank - i);
    MPI_Reduce_scatter_block(rsb, rso, K, pair, MPI_SUM, MPI_COMM_WORLD);
    int rs = size * (size - 1) / 2;
    for (int k = 0; k < K; k++) {
        int i = rank * K + k;
        checkp(rso, k, rs + size * i, 2 * rs - size * i, "reduce_scatter_block");
    }
    MPI_Reduce_scatter_block(MPI_IN_PLACE, rsb, K, pair, MPI_SUM, MPI_COMM_WORLD);
    for (int k = 0; k < K; k++) {
        int i = rank * K + k;
        checkp(rsb, k, rs + size * i, 2 * rs - size * i, "reduce_scatter_block in place");
    }
    int *rc = malloc(sizeof(int) * size), pre = 0, all = 0;
    for (int r = 0; r < size; r++) { rc[r] = r + 1; if (r < rank) pre += r + 1; all += r + 1; }
    int *rsv = pairs(all), *rsvo = pairs(rank + 1);
    for (int i = 0; i < all; i++) setp(rsv, i, rank * i, 1);
    MPI_Reduce_scatter(rsv, rsvo, rc, pair, MPI_SUM, MPI_COMM_WORLD);
    for (int k = 0; k <= rank; k++) checkp(rsvo, k, rs * (pre + k), size, "reduce_scatter");

    free(g); free(mine); free(g2); free(cnt); free(dsp); free(send); free(gv); free(sc); free(back);
    free(ag); free(ag2); free(agv); free(a2s); free(a2r); free(sc2); free(sd2); free(rc2); free(rd2);
    free(avs); free(avr); free(rsb); free(rso); free(rc); free(rsv); free(rsvo);
    MPI_Type_free(&pair);
    MPI_Finalize();
    if (rank == 0) printf("coll_dtypes ok\n");
    return 0;
}
