/* The mpi_minimum_memory_alignment info key (MPI 4.0) of MPI_Alloc_mem
 * and MPI_Win_allocate: the memory starts at a multiple of the asked
 * alignment (window memory up to a page), each rank asking its own (rank r
 * asks 64 << r, rank 0 none), and the windows work: every rank puts its
 * rank into the next one's window and gets it back. Without the key the
 * memory is at least cache-line (64-byte) aligned. A value that is no
 * power of two is ignored. */
#include "util.h"
#include <stdint.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    char v[32];

    /* MPI_Alloc_mem: up to 64 KiB alignment. */
    long aligns[] = {64, 128, 4096, 65536};
    for (int i = 0; i < 4; i++) {
        MPI_Info info;
        MPI_Info_create(&info);
        snprintf(v, sizeof v, "%ld", aligns[i]);
        MPI_Info_set(info, "mpi_minimum_memory_alignment", v);
        void *p = NULL;
        CHECK(MPI_Alloc_mem(1000, info, &p) == MPI_SUCCESS, "MPI_Alloc_mem");
        CHECK((uintptr_t)p % aligns[i] == 0, "MPI_Alloc_mem aligned to %ld: %p", aligns[i], p);
        memset(p, 1, 1000);
        MPI_Free_mem(p);
        MPI_Info_free(&info);
    }

    /* MPI_Win_allocate: rank r asks 64 << r (up to a page), rank 0 nothing;
       then with "3000" (ignored) everywhere. */
    for (int round = 0; round < 2; round++) {
        long want = rank == 0 ? 64 : 64L << (rank > 6 ? 6 : rank);
        MPI_Info info = MPI_INFO_NULL;
        if (round == 1 || rank > 0) {
            MPI_Info_create(&info);
            snprintf(v, sizeof v, "%ld", round == 1 ? 3000L : want);
            MPI_Info_set(info, "mpi_minimum_memory_alignment", v);
        }
        if (round == 1) want = 64;
        int64_t *base;
        MPI_Win win;
        CHECK(MPI_Win_allocate(4 * sizeof(int64_t), sizeof(int64_t), info, MPI_COMM_WORLD, &base, &win) == MPI_SUCCESS,
              "MPI_Win_allocate");
        if (info != MPI_INFO_NULL) MPI_Info_free(&info);
        CHECK((uintptr_t)base % want == 0, "round %d: window memory %p not aligned to %ld", round, (void *)base, want);
        for (int i = 0; i < 4; i++) base[i] = -1;
        MPI_Barrier(MPI_COMM_WORLD);
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        int64_t mine = 1000 + rank, got = 0;
        MPI_Win_lock_all(0, win);
        MPI_Put(&mine, 1, MPI_INT64_T, next, 2, 1, MPI_INT64_T, win);
        MPI_Win_flush_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Get(&got, 1, MPI_INT64_T, next, 2, 1, MPI_INT64_T, win);
        MPI_Win_flush_all(win);
        MPI_Win_unlock_all(win);
        CHECK(got == mine, "round %d: got back %lld from rank %d, not %lld", round, (long long)got, next, (long long)mine);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(base[2] == 1000 + prev && base[1] == -1 && base[3] == -1,
              "round %d: my window holds %lld %lld %lld, rank %d put %d at 2", round, (long long)base[1],
              (long long)base[2], (long long)base[3], prev, 1000 + prev);
        MPI_Win_free(&win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("rma_align ok\n");
    MPI_Finalize();
    return 0;
}
