/* Exported functions that are not implemented (src/abi/stubs.rs) report
 * MPI_ERR_UNSUPPORTED_OPERATION through the error handler and write no
 * output; under MPI_ERRORS_ARE_FATAL (OXMPI_TEST_FATAL=1) the job ends
 * with "not implemented: MPI_Close_port", which the testlist checks. */
#include "util.h"

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    test_rank = rank;
    const char *fatal = getenv("OXMPI_TEST_FATAL");
    if (fatal && atoi(fatal)) {
        MPI_Close_port("x");
        CHECK(0, "MPI_Close_port returned under MPI_ERRORS_ARE_FATAL");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int cls;
    MPI_Error_class(MPI_Close_port("x"), &cls);
    CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION, "MPI_Close_port: class %d", cls);
    MPI_File fh = (MPI_File)0x10;
    MPI_Error_class(MPI_File_open(MPI_COMM_WORLD, "x", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), &cls);
    CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION && fh == (MPI_File)0x10, "MPI_File_open: class %d", cls);
    MPI_Comm child = 777;
    MPI_Error_class(MPI_Comm_spawn("x", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &child,
                                   MPI_ERRCODES_IGNORE), &cls);
    CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION && child == 777, "MPI_Comm_spawn: class %d", cls);
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
