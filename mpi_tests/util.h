/* Shared by the test programs: a check that reports and aborts the job. */
#ifndef OXMPI_TEST_UTIL_H
#define OXMPI_TEST_UTIL_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_rank = -1;
#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            printf("FAIL rank %d %s:%d: ", test_rank, __FILE__, __LINE__);      \
            printf(__VA_ARGS__);                                                \
            printf("\n");                                                       \
            fflush(stdout);                                                     \
            MPI_Abort(MPI_COMM_WORLD, 99);                                      \
        }                                                                       \
    } while (0)

static inline unsigned char pattern(int src, int tag, long i) {
    return (unsigned char)(src * 31 + tag * 7 + i * 13 + (i >> 8));
}
static inline void fill(unsigned char *b, long n, int src, int tag) {
    for (long i = 0; i < n; i++) b[i] = pattern(src, tag, i);
}
static inline long verify(const unsigned char *b, long n, int src, int tag) {
    for (long i = 0; i < n; i++)
        if (b[i] != pattern(src, tag, i)) return i;
    return -1;
}
/* RMA_TEST_INTRINSIC=1: an info with acc_single_intrinsic=true (single
 * 4- and 8-byte accumulates as the fabric's atomics), else MPI_INFO_NULL;
 * the caller frees what is not MPI_INFO_NULL. */
static inline MPI_Info rma_test_info(void) {
    MPI_Info info = MPI_INFO_NULL;
    if (getenv("RMA_TEST_INTRINSIC")) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "acc_single_intrinsic", "true");
    }
    return info;
}

/* A window of `bytes` bytes (disp unit 1) with rma_test_info's info: from
 * MPI_Win_allocate, or from malloc with MPI_Win_create (the caller frees
 * it after MPI_Win_free). */
static inline void *rma_test_window(MPI_Aint bytes, int allocate, MPI_Win *win) {
    void *mem;
    MPI_Info info = rma_test_info();
    if (allocate) {
        MPI_Win_allocate(bytes, 1, info, MPI_COMM_WORLD, &mem, win);
    } else {
        mem = malloc(bytes);
        MPI_Win_create(mem, bytes, 1, info, MPI_COMM_WORLD, win);
    }
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    return mem;
}
#endif
