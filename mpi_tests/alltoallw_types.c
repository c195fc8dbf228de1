/* MPI_Alltoallw, MPI_Ialltoallw and MPI_Alltoallw_init with a resized
 * non-contiguous datatype (vector(1,1,2,MPI_INT) resized to extent 8, so
 * every other int) and byte displacements, many times: every block from
 * every rank lands, the holes between elements stay untouched. (Unpacking
 * the received blocks once ran before the receives had completed.) */
#include "util.h"

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    MPI_Datatype v, t;
    MPI_Type_vector(1, 1, 2, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 8, &t);
    MPI_Type_commit(&t);
    MPI_Type_free(&v);
    int n = 5;
    int *sb = malloc(sizeof(int) * 2 * n * size), *rb = malloc(sizeof(int) * 2 * n * size);
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
    MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * size);
    for (int r = 0; r < size; r++) {
        sc[r] = n;
        sd[r] = r * n * 8; /* bytes */
        ty[r] = t;
    }
    MPI_Request pr;
    MPI_Alltoallw_init(sb, sc, sd, ty, rb, sc, sd, ty, MPI_COMM_WORLD, MPI_INFO_NULL, &pr);
    for (int it = 0; it < 300; it++) {
        for (int i = 0; i < 2 * n * size; i++) {
            sb[i] = rank * 100000 + it * 100 + i;
            rb[i] = -1;
        }
        int form = it % 3;
        if (form == 0) {
            MPI_Alltoallw(sb, sc, sd, ty, rb, sc, sd, ty, MPI_COMM_WORLD);
        } else if (form == 1) {
            MPI_Request q;
            MPI_Ialltoallw(sb, sc, sd, ty, rb, sc, sd, ty, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else {
            MPI_Start(&pr);
            MPI_Wait(&pr, MPI_STATUS_IGNORE);
        }
        for (int r = 0; r < size; r++)
            for (int k = 0; k < n; k++) {
                int got = rb[r * 2 * n + 2 * k], want = r * 100000 + it * 100 + rank * 2 * n + 2 * k;
                CHECK(got == want, "iteration %d (form %d): block from rank %d element %d is %d, want %d", it, form, r, k, got,
                      want);
                CHECK(rb[r * 2 * n + 2 * k + 1] == -1, "iteration %d: hole after element %d of rank %d's block written", it, k, r);
            }
    }
    MPI_Request_free(&pr);
    MPI_Type_free(&t);
    free(sb);
    free(rb);
    free(sc);
    free(sd);
    free(ty);
    if (rank == 0) printf("alltoallw_types: ok\n");
    MPI_Finalize();
    return 0;
}
