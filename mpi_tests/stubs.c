/* Exported functions that are not implemented (src/abi/stubs.rs) report
 * MPI_ERR_UNSUPPORTED_OPERATION through the error handler and write no
 * output; under MPI_ERRORS_ARE_FATAL (OXMPI_TEST_FATAL=1) the job ends
 * with "not implemented: MPI_Win_fence", which the testlist checks. */
#include "util.h"

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    test_rank = rank;
    const char *fatal = getenv("OXMPI_TEST_FATAL");
    if (fatal && atoi(fatal)) {
        MPI_Win_fence(0, 0);
        CHECK(0, "MPI_Win_fence returned under MPI_ERRORS_ARE_FATAL");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int cls, buf[4];
    MPI_Win win = 12345;
    MPI_Error_class(MPI_Win_create(buf, sizeof buf, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &win), &cls);
    CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION && win == 12345, "MPI_Win_create: class %d, win %d", cls, win);
    MPI_File fh = (MPI_File)0x10;
    MPI_Error_class(MPI_File_open(MPI_COMM_WORLD, "x", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), &cls);
    CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION && fh == (MPI_File)0x10, "MPI_File_open: class %d", cls);
    MPI_Comm child = 777;
    MPI_Error_class(MPI_Comm_spawn("x", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &child,
                                   MPI_ERRCODES_IGNORE), &cls);
    CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION && child == 777, "MPI_Comm_spawn: class %d", cls);
    MPI_Error_class(MPI_Put(buf, 1, MPI_INT, 0, 0, 1, MPI_INT, win), &cls);
    CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION, "MPI_Put: class %d", cls);
    /* the library goes on working */
    int x = rank + 1, sum;
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(sum == size * (size + 1) / 2, "allreduce after the stubs: %d", sum);
    MPI_Finalize();
    if (rank == 0) printf("stubs ok\n");
    return 0;
}
