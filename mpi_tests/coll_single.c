/* Single-copy node-area collectives (allgather, alltoall, bcast, allreduce
 * and reduce_scatter_block read straight out of the other ranks' buffers;
 * reduce writes its slices into the root's):
 * results checked exactly over many calls, with sizes on both sides of the
 * copy limit, rotating roots, MPI_IN_PLACE allgather, allreduce, reduce
 * and reduce_scatter_block, a non-contiguous bcast, a late rank, and every
 * rank overwriting its send buffer as soon as a call returns (a rank that
 * still read it would get the overwritten bytes). On world and on a split
 * with world's ranks reversed. Run forced (OXMPI_ALLGATHER=shm_cma ...) and
 * with the defaults. */
#include "util.h"
#include <math.h>
#include <string.h>
#include <unistd.h>

static int val(int who, int it, int blk, int i) { return who * 1000003 + it * 7919 + blk * 31 + i; }

static void run(MPI_Comm comm, const char *what) {
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    static const int counts[] = {1, 1000, 9000, 70000};
    const int nc = (int)(sizeof counts / sizeof counts[0]);
    int maxn = counts[nc - 1];
    int *s = malloc(sizeof(int) * (maxn + 8) * size), *t = malloc(sizeof(int) * (maxn + 8) * size);
    for (int it = 0; it < 24; it++) {
        int n = counts[it % nc];
        if (it % 5 == 0 && me == it % size) usleep(3000); /* a late rank */
        /* allgather */
        for (int i = 0; i < n; i++) s[i] = val(me, it, 0, i);
        for (int i = 0; i < n * size; i++) t[i] = -1;
        MPI_Allgather(s, n, MPI_INT, t, n, MPI_INT, comm);
        for (int i = 0; i < n; i++) s[i] = -7; /* nobody may still read it */
        for (int r = 0; r < size; r++)
            for (int i = 0; i < n; i++)
                CHECK(t[r * n + i] == val(r, it, 0, i), "%s it %d: allgather n=%d block %d [%d] = %d", what, it, n,
                      r, i, t[r * n + i]);
        /* allgather in place */
        for (int i = 0; i < n * size; i++) t[i] = -1;
        for (int i = 0; i < n; i++) t[me * n + i] = val(me, it, 1, i);
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, t, n, MPI_INT, comm);
        for (int r = 0; r < size; r++)
            for (int i = 0; i < n; i++)
                CHECK(t[r * n + i] == val(r, it, 1, i), "%s it %d: in-place allgather n=%d block %d [%d] = %d", what,
                      it, n, r, i, t[r * n + i]);
        /* alltoall: block j of my send buffer is for rank j */
        for (int j = 0; j < size; j++)
            for (int i = 0; i < n; i++) s[j * n + i] = val(me, it, 2 + j, i);
        for (int i = 0; i < n * size; i++) t[i] = -1;
        MPI_Alltoall(s, n, MPI_INT, t, n, MPI_INT, comm);
        for (int i = 0; i < n * size; i++) s[i] = -7;
        for (int r = 0; r < size; r++)
            for (int i = 0; i < n; i++)
                CHECK(t[r * n + i] == val(r, it, 2 + me, i), "%s it %d: alltoall n=%d from %d [%d] = %d", what, it, n,
                      r, i, t[r * n + i]);
        /* allreduce: int sum (exact), in place every other call, with odd
         * counts; then double max and a double sum of values that round,
         * whose result must be bitwise the same on every rank. */
        int an = n * size + it % 3;
        int *ar = (int *)t;
        for (int i = 0; i < an; i++) s[i] = val(me, it, 7, i) % 100003;
        if (it % 2) {
            for (int i = 0; i < an; i++) ar[i] = s[i];
            MPI_Allreduce(MPI_IN_PLACE, ar, an, MPI_INT, MPI_SUM, comm);
        } else {
            for (int i = 0; i < an; i++) ar[i] = -1;
            MPI_Allreduce(s, ar, an, MPI_INT, MPI_SUM, comm);
            for (int i = 0; i < an; i++) s[i] = -7;
        }
        for (int i = 0; i < an; i++) {
            long want = 0;
            for (int r = 0; r < size; r++) want += val(r, it, 7, i) % 100003;
            CHECK(ar[i] == (int)want, "%s it %d: allreduce%s of %d ints [%d] = %d, want %ld", what, it,
                  it % 2 ? " in place" : "", an, i, ar[i], want);
        }
        int dn = n * size / 2 + 1;
        double *ds = malloc(sizeof(double) * dn), *dr = malloc(sizeof(double) * dn);
        for (int i = 0; i < dn; i++) ds[i] = (double)val(me, it, 8, i) / 7.0 + 1e-3 * me;
        MPI_Allreduce(ds, dr, dn, MPI_DOUBLE, MPI_MAX, comm);
        for (int i = 0; i < dn; i++) {
            double want = -1e300;
            for (int r = 0; r < size; r++) {
                double x = (double)val(r, it, 8, i) / 7.0 + 1e-3 * r;
                want = x > want ? x : want;
            }
            CHECK(dr[i] == want, "%s it %d: allreduce max of %d doubles [%d] = %.17g, want %.17g", what, it, dn, i,
                  dr[i], want);
        }
        MPI_Allreduce(ds, dr, dn, MPI_DOUBLE, MPI_SUM, comm);
        double *d0 = malloc(sizeof(double) * dn);
        memcpy(d0, dr, sizeof(double) * dn);
        MPI_Bcast(d0, dn, MPI_DOUBLE, 0, comm);
        for (int i = 0; i < dn; i++) {
            double want = 0;
            for (int r = 0; r < size; r++) want += (double)val(r, it, 8, i) / 7.0 + 1e-3 * r;
            CHECK(memcmp(&d0[i], &dr[i], sizeof(double)) == 0 && fabs(dr[i] - want) <= 1e-9 * fabs(want),
                  "%s it %d: allreduce sum of %d doubles [%d] = %.17g here, %.17g on rank 0, want about %.17g", what,
                  it, dn, i, dr[i], d0[i], want);
        }
        free(ds);
        free(dr);
        free(d0);
        /* reduce to a rotating root (in place there every other call;
         * the others pass no receive buffer) */
        int rr = (it * 5 + 2) % size;
        for (int i = 0; i < an; i++) s[i] = val(me, it, 9, i) % 100003;
        if (me == rr) {
            if (it % 2) memcpy(t, s, sizeof(int) * an);
            else
                for (int i = 0; i < an; i++) t[i] = -1;
            MPI_Reduce(it % 2 ? MPI_IN_PLACE : s, t, an, MPI_INT, MPI_SUM, rr, comm);
            for (int i = 0; i < an; i++) {
                long want = 0;
                for (int r = 0; r < size; r++) want += val(r, it, 9, i) % 100003;
                CHECK(t[i] == (int)want, "%s it %d: reduce%s of %d ints to %d [%d] = %d, want %ld", what, it,
                      it % 2 ? " in place" : "", an, rr, i, t[i], want);
            }
        } else {
            MPI_Reduce(s, NULL, an, MPI_INT, MPI_SUM, rr, comm);
            for (int i = 0; i < an; i++) s[i] = -7;
        }
        /* reduce_scatter_block: block r of everyone's input summed on rank
         * r; in place every other call (the result lands in the first block
         * of the buffer, which others may still be reading). */
        int rn = n + it % 3;
        for (int j = 0; j < size; j++)
            for (int i = 0; i < rn; i++) s[j * rn + i] = val(me, it, 40 + j, i) % 100003;
        if (it % 2) {
            memcpy(t, s, sizeof(int) * rn * size);
            MPI_Reduce_scatter_block(MPI_IN_PLACE, t, rn, MPI_INT, MPI_SUM, comm);
        } else {
            for (int i = 0; i < rn; i++) t[i] = -1;
            MPI_Reduce_scatter_block(s, t, rn, MPI_INT, MPI_SUM, comm);
            for (int i = 0; i < rn * size; i++) s[i] = -7;
        }
        for (int i = 0; i < rn; i++) {
            long want = 0;
            for (int r = 0; r < size; r++) want += val(r, it, 40 + me, i) % 100003;
            CHECK(t[i] == (int)want, "%s it %d: reduce_scatter_block%s of %d ints [%d] = %d, want %ld", what, it,
                  it % 2 ? " in place" : "", rn, i, t[i], want);
        }
        /* bcast, rotating roots */
        int root = (it * 3 + 1) % size;
        int bn = n * size;
        for (int i = 0; i < bn; i++) s[i] = me == root ? val(root, it, 99, i) : -1;
        MPI_Bcast(s, bn, MPI_INT, root, comm);
        for (int i = 0; i < bn; i++)
            CHECK(s[i] == val(root, it, 99, i), "%s it %d: bcast of %d from %d [%d] = %d", what, it, bn, root, i, s[i]);
        if (me == root)
            for (int i = 0; i < bn; i++) s[i] = -7;
    }
    /* A non-contiguous bcast (every other int of 2 * 70000), staged through a
     * packed copy. */
    MPI_Datatype every_other;
    MPI_Type_vector(maxn, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int *v = malloc(sizeof(int) * 2 * maxn);
    int root = size - 1;
    for (int i = 0; i < 2 * maxn; i++) v[i] = me == root ? val(root, 0, 5, i) : -1;
    MPI_Bcast(v, 1, every_other, root, comm);
    for (int i = 0; i < 2 * maxn; i++)
        CHECK(v[i] == (i % 2 == 0 || me == root ? val(root, 0, 5, i) : -1), "%s: vector bcast [%d] = %d", what, i,
              v[i]);
    MPI_Type_free(&every_other);
    free(v);
    free(s);
    free(t);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    run(MPI_COMM_WORLD, "world");
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    run(rev, "reversed");
    MPI_Comm_free(&rev);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("coll_single ok\n");
    MPI_Finalize();
    return 0;
}
