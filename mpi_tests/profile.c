/* A program with known MPI calls, for the profile at finalize
 * (OXMPI_PROFILE, mpirun --profile): every rank makes 10 MPI_Barrier,
 * 5 MPI_Send of 100 ints to the next rank and 5 MPI_Recv from the previous
 * one, 3 MPI_Allreduce, 2 MPI_Isend and 2 MPI_Irecv of 100 ints completed
 * by one MPI_Waitall, and MPI_Comm_rank and MPI_Comm_size once each.
 * mpi_tests/diagnosis.sh checks the counts, bytes and pairs the profile
 * reports against these. */
#include "util.h"

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int i = 0; i < 10; i++) MPI_Barrier(MPI_COMM_WORLD);
    int buf[100], got[100];
    for (int i = 0; i < 100; i++) buf[i] = rank * 1000 + i;
    for (int i = 0; i < 5; i++) MPI_Send(buf, 100, MPI_INT, next, 1, MPI_COMM_WORLD);
    for (int i = 0; i < 5; i++) {
        MPI_Recv(got, 100, MPI_INT, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(got[7] == prev * 1000 + 7, "received %d", got[7]);
    }
    int one = 1, sum = 0;
    for (int i = 0; i < 3; i++) MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == size, "allreduce gave %d", sum);
    MPI_Request q[4];
    int in[2][100];
    MPI_Irecv(in[0], 100, MPI_INT, prev, 2, MPI_COMM_WORLD, &q[0]);
    MPI_Irecv(in[1], 100, MPI_INT, prev, 3, MPI_COMM_WORLD, &q[1]);
    MPI_Isend(buf, 100, MPI_INT, next, 2, MPI_COMM_WORLD, &q[2]);
    MPI_Isend(buf, 100, MPI_INT, next, 3, MPI_COMM_WORLD, &q[3]);
    MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
    CHECK(in[1][99] == prev * 1000 + 99, "received %d", in[1][99]);
    if (rank == 0) printf("profile program ok\n");
    MPI_Finalize();
    return 0;
}
