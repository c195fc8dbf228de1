/* One block of an MPMD job (mpirun -n 2 ./mpmd : -n 1 ./mpmd ...): the
 * ranks of all blocks share MPI_COMM_WORLD, numbered across the blocks in
 * order; MPI_APPNUM is the block's index (the block passes the index it
 * expects in TEST_APPNUM and its first world rank in TEST_FIRST, each with
 * its own -x), and the working directory is the block's -wdir (TEST_WDIR). */
#include "util.h"
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    int *app, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &app, &flag);
    const char *want = getenv("TEST_APPNUM"), *first = getenv("TEST_FIRST");
    CHECK(flag && want && *app == atoi(want), "MPI_APPNUM %d, want %s", flag ? *app : -1, want ? want : "?");
    CHECK(first && rank >= atoi(first), "world rank %d before the block's first rank %s", rank, first ? first : "?");
    const char *wdir = getenv("TEST_WDIR");
    if (wdir) {
        char cwd[4096];
        CHECK(getcwd(cwd, sizeof cwd) && strcmp(cwd, wdir) == 0, "working directory %s, want %s", cwd, wdir);
    }
    int sum = 0, one = *app;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("mpmd: %d ranks, sum of appnums %d, argv[1]=%s\n", size, sum, argc > 1 ? argv[1] : "-");
    MPI_Finalize();
    return 0;
}
