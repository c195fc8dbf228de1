/* Counts above 2^31 - 1 in large-count collectives: MPI_Bcast_c of
 * 2^31 + 10 MPI_CHAR and MPI_Allreduce_c, MPI_Scan_c and MPI_Exscan_c (in
 * place, MPI_SUM) of 2^31 + 10 MPI_INT8_T, checked on every rank; then
 * MPI_Gather_c of 2^31 + 10 MPI_CHAR per rank to root 0 and MPI_Scatter_c
 * of as many back (the root holds size x that; one byte per element keeps
 * the test within the machine's memory). MPI_Allreduce_c of 2^31 + 10
 * MPI_INT8_T with a user op: the function sees MPI_INT8_T and at most
 * 2^31 - 1 elements a call. */
#include "util.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static MPI_Datatype seen_dt = MPI_DATATYPE_NULL;
static int max_len = 0;
static void sum8(void *in, void *inout, int *len, MPI_Datatype *dt) {
    seen_dt = *dt;
    if (*len > max_len) max_len = *len;
    signed char *a = in, *b = inout;
    for (int i = 0; i < *len; i++) b[i] = (signed char)(b[i] + a[i]);
}

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
    /* The same with a user op. */
    MPI_Op uop;
    MPI_Op_create(sum8, 1, &uop);
    memset(b, rank + 2, (size_t)n);
    CHECK(MPI_Allreduce_c(MPI_IN_PLACE, b, n, MPI_INT8_T, uop, MPI_COMM_WORLD) == MPI_SUCCESS, "allreduce_c, user op");
    want = (unsigned char)(size * (size + 3) / 2);
    for (size_t i = 0; i < (size_t)n && !bad; i += 4093)
        if (b[i] != want) bad = 1;
    CHECK(!bad && b[n - 1] == want, "allreduce_c with a user op: %d, expected %d", b[n - 1], want);
    if (size > 1)
        CHECK(seen_dt == MPI_INT8_T && max_len > 0, "the user op saw datatype 0x%x, %d elements at most",
              (unsigned)seen_dt, max_len);
    MPI_Op_free(&uop);
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
    /* Gather_c: rank r's block is r + 1 in every byte, its last byte 0x70 + r. */
    memset(b, rank + 1, (size_t)n);
    b[n - 1] = (unsigned char)(0x70 + rank);
    unsigned char *root = NULL;
    if (rank == 0) {
        root = malloc((size_t)n * size);
        ok = root != NULL;
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (ok) {
        CHECK(MPI_Gather_c(b, n, MPI_CHAR, root, n, MPI_CHAR, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "gather_c");
        if (rank == 0)
            for (int r = 0; r < size; r++) {
                unsigned char *blk = root + (size_t)r * n;
                CHECK(blk[0] == r + 1 && blk[n / 2] == r + 1 && blk[n - 2] == r + 1 && blk[n - 1] == 0x70 + r,
                      "gather_c: block %d holds %d %d %d", r, blk[0], blk[n / 2], blk[n - 1]);
            }
        /* Scatter_c back, the root's blocks changed: r + 0x21, last byte 0x30 + r. */
        if (rank == 0)
            for (int r = 0; r < size; r++) {
                memset(root + (size_t)r * n, r + 0x21, (size_t)n);
                root[(size_t)r * n + n - 1] = (unsigned char)(0x30 + r);
            }
        memset(b, 0, (size_t)n);
        CHECK(MPI_Scatter_c(root, n, MPI_CHAR, b, n, MPI_CHAR, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "scatter_c");
        CHECK(b[0] == rank + 0x21 && b[n / 2] == rank + 0x21 && b[n - 1] == 0x30 + rank, "scatter_c: %d %d %d", b[0],
              b[n / 2], b[n - 1]);
    } else if (rank == 0) {
        printf("gather_c, scatter_c: skipped (no memory)\n");
    }
    free(root);
    free(b);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("coll_huge_c: OK\n");
    MPI_Finalize();
    return 0;
}
