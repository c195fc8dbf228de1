/* Counts above 2^31 - 1 in large-count collectives: MPI_Bcast_c of
 * 2^31 + 10 MPI_CHAR and MPI_Allreduce_c, MPI_Scan_c and MPI_Exscan_c (in
 * place, MPI_SUM) of 2^31 + 10 MPI_INT8_T, checked on every rank (one byte per element keeps the test
 * within the machine's memory). */
#include "util.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    MPI_Count n = ((MPI_Count)1 << 31) + 10;
    unsigned char *b = malloc((size_t)n);
    int ok = b != NULL, all;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (rank == 0) printf("skip: no memory\n");
        MPI_Finalize();
        return 0;
    }
    if (rank == 0)
        for (size_t i = 0; i < (size_t)n; i += 4096) b[i] = (unsigned char)(i >> 12);
    else
        memset(b, 0, (size_t)n);
    b[n - 1] = rank == 0 ? 0x5a : 0;
    CHECK(MPI_Bcast_c(b, n, MPI_CHAR, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "bcast_c");
    int bad = 0;
    for (size_t i = 0; i < (size_t)n && !bad; i += 4096)
        if (b[i] != (unsigned char)(i >> 12)) bad = 1;
    CHECK(!bad && b[n - 1] == 0x5a, "bcast_c contents");

    memset(b, rank + 1, (size_t)n);
    CHECK(MPI_Allreduce_c(MPI_IN_PLACE, b, n, MPI_INT8_T, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "allreduce_c");
    unsigned char want = (unsigned char)(size * (size + 1) / 2);
    for (size_t i = 0; i < (size_t)n && !bad; i += 4093)
        if (b[i] != want) bad = 1;
    CHECK(!bad && b[n - 1] == want && b[0] == want, "allreduce_c result %d, expected %d", b[n - 1], want);
    /* Scan and Exscan, in place: rank r gets the sum over ranks up to r
       (Exscan: before r). */
    memset(b, rank + 1, (size_t)n);
    CHECK(MPI_Scan_c(MPI_IN_PLACE, b, n, MPI_INT8_T, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "scan_c");
    want = (unsigned char)((rank + 1) * (rank + 2) / 2);
    CHECK(b[0] == want && b[n / 2] == want && b[n - 1] == want, "scan_c result %d, expected %d", b[n - 1], want);
    memset(b, rank + 1, (size_t)n);
    CHECK(MPI_Exscan_c(MPI_IN_PLACE, b, n, MPI_INT8_T, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "exscan_c");
    want = (unsigned char)(rank * (rank + 1) / 2);
    if (rank > 0)
        CHECK(b[0] == want && b[n / 2] == want && b[n - 1] == want, "exscan_c result %d, expected %d", b[n - 1], want);
    free(b);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("coll_huge_c: OK\n");
    MPI_Finalize();
    return 0;
}
