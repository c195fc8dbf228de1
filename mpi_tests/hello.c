/* Every rank reports itself; a token goes around the ring and is checked. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <dirent.h>

int main(int argc, char **argv) {
    int rank, size, len, v, sv, flag;
    char name[MPI_MAX_PROCESSOR_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Init(&argc, &argv);
    MPI_Initialized(&flag);
    if (!flag) { printf("FAIL: not initialized\n"); return 1; }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);
    MPI_Get_version(&v, &sv);
    MPI_Get_library_version(lib, &len);
    if (v != 4 || sv != 0 || strncmp(lib, "OxMPI", 5) != 0) { printf("FAIL: version %d.%d %s\n", v, sv, lib); return 1; }
    int token = 0;
    if (size > 1) {
        if (rank == 0) {
            token = 1000;
            MPI_Send(&token, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_INT, size - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (token != 1000 + size - 1) { printf("FAIL: token %d\n", token); return 1; }
            /* Every rank has attached to the shared segment by now (each has sent):
             * its name must already be gone from /dev/shm. */
            const char *job = getenv("OXMPI_JOB");
            if (job) {
                char prefix[300];
                snprintf(prefix, sizeof prefix, "oxmpi-%s-", job);
                DIR *d = opendir("/dev/shm");
                struct dirent *e;
                while (d && (e = readdir(d)))
                    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) { printf("FAIL: %s still in /dev/shm\n", e->d_name); return 1; }
                if (d) closedir(d);
            }
        } else {
            MPI_Recv(&token, 1, MPI_INT, rank - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token++;
            MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 7, MPI_COMM_WORLD);
        }
    }
    printf("hello from rank %d of %d on %s\n", rank, size, name);
    MPI_Finalize();
    MPI_Finalized(&flag);
    return flag ? 0 : 1;
}
