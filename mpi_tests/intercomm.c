/* Intercommunicators: create from two halves of MPI_COMM_WORLD, point-to-point
 * across, remote size/group, merge with both orders. */
#include "util.h"

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    if (size < 2) { MPI_Finalize(); return 0; }
    int half = size / 2, color = rank < half ? 0 : 1;
    MPI_Comm local, inter, merged;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
    int lrank, lsize, rsize, flag;
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_size(local, &lsize);
    /* leaders: world rank 0 and world rank half */
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color == 0 ? half : 0, 77, &inter);
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag, "test_inter");
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(rsize == (color == 0 ? size - half : half), "remote size %d", rsize);
    int r2;
    MPI_Comm_rank(inter, &r2);
    CHECK(r2 == lrank, "intercomm rank %d", r2);
    MPI_Group rg;
    MPI_Comm_remote_group(inter, &rg);
    int gs;
    MPI_Group_size(rg, &gs);
    CHECK(gs == rsize, "remote group size");
    MPI_Group_free(&rg);
    /* Each rank sends to remote rank (lrank % rsize) and receives from everyone who targets it. */
    int target = lrank % rsize, v = rank * 10;
    MPI_Request rq;
    MPI_Isend(&v, 1, MPI_INT, target, 5, inter, &rq);
    int expected = 0;
    for (int q = 0; q < rsize; q++) if (q % lsize == lrank) expected++;
    for (int k = 0; k < expected; k++) {
        int got;
        MPI_Status st;
        MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 5, inter, &st);
        int from_world = (color == 0 ? half : 0) + st.MPI_SOURCE;
        CHECK(got == from_world * 10 && st.MPI_SOURCE % lsize == lrank, "intercomm message %d from %d", got, st.MPI_SOURCE);
    }
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    /* Merge: the high group goes last. */
    MPI_Intercomm_merge(inter, color == 0 ? 1 : 0, &merged);
    int mr, ms;
    MPI_Comm_rank(merged, &mr);
    MPI_Comm_size(merged, &ms);
    CHECK(ms == size, "merged size %d", ms);
    CHECK(mr == (color == 0 ? (size - half) + lrank : lrank), "merged rank %d", mr);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, merged);
    CHECK(sum == size * (size - 1) / 2, "merged allreduce %d", sum);
    MPI_Comm m2;
    MPI_Intercomm_merge(inter, 0, &m2);
    MPI_Comm_rank(m2, &mr);
    CHECK(mr == rank, "tie merge keeps world order: %d", mr);
    MPI_Comm_free(&m2);
    MPI_Comm_free(&merged);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return 0;
}
