/* Persistent collectives match by the order of their initialisation, not
 * of MPI_Start: four persistent collectives initialised in one order on
 * every rank are started in a different order on each rank (and each
 * iteration), with blocking and nonblocking collectives called between the
 * starts, whose own matching must not be moved by the starts. */
#include "util.h"

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    enum { N = 64, K = 4 };
    int a_in[N], a_out[N], b[N], c_in[2 * N], c_out[2 * N], d[8];
    MPI_Request rq[K];
    MPI_Allreduce_init(a_in, a_out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[0]);
    MPI_Bcast_init(b, N, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[1]);
    MPI_Allreduce_init(c_in, c_out, 2 * N, MPI_INT, MPI_MAX, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[2]);
    MPI_Bcast_init(d, 8, MPI_INT, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[3]);
    for (int it = 0; it < 40; it++) {
        for (int i = 0; i < N; i++) {
            a_in[i] = rank * it + i;
            b[i] = rank == 0 ? it * 1000 + i : -1;
        }
        for (int i = 0; i < 2 * N; i++) c_in[i] = (rank + it + i) % (size + 3);
        for (int i = 0; i < 8; i++) d[i] = rank == size - 1 ? -it - i : 0;
        /* a different permutation on every rank and iteration */
        int order[K] = {0, 1, 2, 3};
        unsigned x = (unsigned)(rank * 7919 + it * 104729 + 1);
        for (int i = K - 1; i > 0; i--) {
            x = x * 1103515245u + 12345u;
            int j = (int)((x >> 16) % (unsigned)(i + 1));
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        int blk = -1;
        for (int k = 0; k < K; k++) {
            MPI_Start(&rq[order[k]]);
            /* a blocking collective after a rank-dependent number of starts */
            if (k == (rank + it) % K) {
                int one = 1, all = 0;
                MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                blk = all;
            }
        }
        MPI_Request nb;
        int v = rank, vs = 0;
        MPI_Iallreduce(&v, &vs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &nb);
        MPI_Waitall(K, rq, MPI_STATUSES_IGNORE);
        MPI_Wait(&nb, MPI_STATUS_IGNORE);
        CHECK(blk == size, "blocking allreduce between starts: %d", blk);
        CHECK(vs == size * (size - 1) / 2, "nonblocking allreduce after the starts: %d", vs);
        for (int i = 0; i < N; i++) {
            CHECK(a_out[i] == it * size * (size - 1) / 2 + size * i, "it %d allreduce[%d]=%d", it, i, a_out[i]);
            CHECK(b[i] == it * 1000 + i, "it %d bcast[%d]=%d", it, i, b[i]);
        }
        for (int i = 0; i < 2 * N; i++) {
            int m = 0;
            for (int r = 0; r < size; r++) m = (r + it + i) % (size + 3) > m ? (r + it + i) % (size + 3) : m;
            CHECK(c_out[i] == m, "it %d max[%d]=%d want %d", it, i, c_out[i], m);
        }
        for (int i = 0; i < 8; i++) CHECK(d[i] == -it - i, "it %d second bcast[%d]=%d", it, i, d[i]);
    }
    for (int k = 0; k < K; k++) MPI_Request_free(&rq[k]);
    if (rank == 0) printf("pcoll_order: ok\n");
    MPI_Finalize();
    return 0;
}
