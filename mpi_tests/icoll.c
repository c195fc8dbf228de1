/* Nonblocking collectives: many outstanding on one communicator, completed
 * in reverse and mixed orders, with point-to-point traffic in between and
 * progress driven by MPI_Test while the program computes. */
#include "util.h"

#define N 1000

int main(int argc, char **argv) {
    int rank, size, flag;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    int *bc = malloc(sizeof(int) * N), *ar_in = malloc(sizeof(int) * N), *ar_out = malloc(sizeof(int) * N);
    int *ag = malloc(sizeof(int) * size * 3), *a2a_in = malloc(sizeof(int) * size * 2), *a2a_out = malloc(sizeof(int) * size * 2);
    double red_in = rank + 1.0, red_out = 0, sc_in = rank, sc_out = 0;
    int *g = malloc(sizeof(int) * size), mine3[3], scat = -1, *sv = malloc(sizeof(int) * size), rsb = -1;
    int *rsb_in = malloc(sizeof(int) * size);
    for (int i = 0; i < N; i++) { bc[i] = rank == size - 1 ? i * 3 : -1; ar_in[i] = rank + i; }
    for (int k = 0; k < 3; k++) mine3[k] = rank * 10 + k;
    for (int j = 0; j < size; j++) { a2a_in[2 * j] = rank * 100 + j; a2a_in[2 * j + 1] = -rank; sv[j] = j * 7; rsb_in[j] = j + rank; }
    MPI_Request rq[11];
    MPI_Ibcast(bc, N, MPI_INT, size - 1, MPI_COMM_WORLD, &rq[0]);
    MPI_Iallreduce(ar_in, ar_out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[1]);
    MPI_Iallgather(mine3, 3, MPI_INT, ag, 3, MPI_INT, MPI_COMM_WORLD, &rq[2]);
    MPI_Ialltoall(a2a_in, 2, MPI_INT, a2a_out, 2, MPI_INT, MPI_COMM_WORLD, &rq[3]);
    MPI_Ireduce(&red_in, &red_out, 1, MPI_DOUBLE, MPI_PROD, 0, MPI_COMM_WORLD, &rq[4]);
    MPI_Igather(&rank, 1, MPI_INT, g, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[5]);
    MPI_Iscatter(sv, 1, MPI_INT, &scat, 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[6]);
    MPI_Iscan(&sc_in, &sc_out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq[7]);
    MPI_Ireduce_scatter_block(rsb_in, &rsb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[8]);
    MPI_Ibarrier(MPI_COMM_WORLD, &rq[9]);
    /* point-to-point on the same communicator while the collectives are in flight */
    int right = (rank + 1) % size, left = (rank + size - 1) % size, pv = rank, pw = -1;
    MPI_Irecv(&pw, 1, MPI_INT, left, 0, MPI_COMM_WORLD, &rq[10]);
    MPI_Send(&pv, 1, MPI_INT, right, 0, MPI_COMM_WORLD);
    /* compute while testing */
    double x = 0;
    for (int it = 0; it < 1000; it++) {
        for (int k = 0; k < 100; k++) x += k * 1e-9;
        MPI_Test(&rq[1], &flag, MPI_STATUS_IGNORE);
        if (flag) break;
    }
    /* complete in reverse order */
    for (int i = 10; i >= 0; i--) MPI_Wait(&rq[i], MPI_STATUS_IGNORE);
    CHECK(pw == left, "p2p during collectives %d", pw);
    for (int i = 0; i < N; i++) CHECK(bc[i] == i * 3, "ibcast [%d]=%d", i, bc[i]);
    for (int i = 0; i < N; i++) CHECK(ar_out[i] == size * i + size * (size - 1) / 2, "iallreduce [%d]", i);
    for (int r = 0; r < size; r++)
        for (int k = 0; k < 3; k++) CHECK(ag[r * 3 + k] == r * 10 + k, "iallgather");
    for (int j = 0; j < size; j++) CHECK(a2a_out[2 * j] == j * 100 + rank && a2a_out[2 * j + 1] == -j, "ialltoall");
    if (rank == 0) {
        double f = 1;
        for (int r = 1; r <= size; r++) f *= r;
        CHECK(red_out == f, "ireduce %g", red_out);
        for (int r = 0; r < size; r++) CHECK(g[r] == r, "igather");
    }
    CHECK(scat == rank * 7, "iscatter %d", scat);
    CHECK(sc_out == rank * (rank + 1) / 2.0, "iscan %g", sc_out);
    CHECK(rsb == size * rank + size * (size - 1) / 2, "ireduce_scatter_block %d", rsb);
    /* Waitany / Testall over a batch of Iallreduce on dup'd and split communicators */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int vals[4], res[4];
    for (int i = 0; i < 4; i++) {
        vals[i] = rank * (i + 1);
        MPI_Iallreduce(&vals[i], &res[i], 1, MPI_INT, MPI_MAX, i % 2 ? dup : MPI_COMM_WORLD, &rq[i]);
    }
    int done = 0, idx;
    while (done < 4) {
        MPI_Waitany(4, rq, &idx, MPI_STATUS_IGNORE);
        CHECK(res[idx] == (size - 1) * (idx + 1), "waitany allreduce %d", idx);
        done++;
    }
    MPI_Comm_free(&dup);
    (void)x;
    free(bc); free(ar_in); free(ar_out); free(ag); free(a2a_in); free(a2a_out); free(g); free(sv); free(rsb_in);
    MPI_Finalize();
    return 0;
}
