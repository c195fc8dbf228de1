/* Collectives on intercommunicators: every call the standard defines there,
 * blocking, nonblocking and persistent, on two intercommunicators (even and
 * odd world ranks; a low and a high block of ranks, so the group holding
 * world rank 0 is the one passing roots in one and the other in the next),
 * with roots other than rank 0, a derived datatype, sizes that take the
 * single-copy path, and the results checked against values computed here.
 * Scan on an intercommunicator gives MPI_ERR_COMM. Needs 2+ ranks. */
#include "util.h"

static int g;       /* this process's group: 0 or 1 */
static int lr, nl;  /* rank and size in the local group */
static int nr;      /* remote group size */

/* The value element e of the send data of local rank r of group gg. */
static int val(int gg, int r, long e) { return gg * 100000 + r * 1000 + (int)(e % 997); }

static void run(MPI_Comm ic, int big) {
    MPI_Status st;
    /* Barrier. */
    MPI_Barrier(ic);

    /* Bcast from group 0's last rank: the root passes MPI_ROOT, the rest of
     * group 0 MPI_PROC_NULL, group 1 the root's rank. */
    {
        long n = big ? 100003 : 1000;
        int *b = malloc(n * sizeof(int));
        int root = (g == 0) ? (lr == nl - 1 ? MPI_ROOT : MPI_PROC_NULL) : nr - 1;
        for (long e = 0; e < n; e++) b[e] = g == 0 ? val(0, nl - 1, e) : -1;
        MPI_Bcast(b, (int)n, MPI_INT, root, ic);
        if (g == 1)
            for (long e = 0; e < n; e++) CHECK(b[e] == val(0, nr - 1, e), "bcast[%ld]=%d", e, b[e]);
        free(b);
    }
    /* Bcast of a strided type from group 1's rank 0. */
    {
        MPI_Datatype vec;
        MPI_Type_vector(50, 1, 3, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        int b[150];
        for (int e = 0; e < 150; e++) b[e] = g == 1 ? e * 5 : -1;
        int root = (g == 1) ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        MPI_Bcast(b, 1, vec, root, ic);
        if (g == 0)
            for (int e = 0; e < 150; e++) CHECK(b[e] == (e % 3 == 0 ? e * 5 : -1), "strided bcast[%d]=%d", e, b[e]);
        MPI_Type_free(&vec);
    }
    /* Reduce to group 1's rank 0 of group 0's data. */
    {
        int n = 257, s[257], r[257];
        for (int e = 0; e < n; e++) { s[e] = val(g, lr, e); r[e] = -1; }
        int root = (g == 1) ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        MPI_Reduce(s, r, n, MPI_INT, MPI_SUM, root, ic);
        if (g == 1 && lr == 0)
            for (int e = 0; e < n; e++) {
                long want = 0;
                for (int j = 0; j < nr; j++) want += val(0, j, e);
                CHECK(r[e] == want, "reduce[%d]=%d want %ld", e, r[e], want);
            }
    }
    /* Allreduce: each group gets the reduction of the other's data. */
    {
        long n = big ? 70000 : 7;
        int *s = malloc(n * sizeof(int)), *r = malloc(n * sizeof(int));
        double ds[3] = {lr + g * 0.5, -lr, 2.0 * lr}, dr[3];
        for (long e = 0; e < n; e++) { s[e] = val(g, lr, e); r[e] = -1; }
        MPI_Allreduce(s, r, (int)n, MPI_INT, MPI_SUM, ic);
        for (long e = 0; e < n; e++) {
            long want = 0;
            for (int j = 0; j < nr; j++) want += val(1 - g, j, e);
            CHECK(r[e] == want, "allreduce[%ld]=%d want %ld", e, r[e], want);
        }
        MPI_Allreduce(ds, dr, 3, MPI_DOUBLE, MPI_MAX, ic);
        CHECK(dr[0] == nr - 1 + (1 - g) * 0.5 && dr[1] == 0 && dr[2] == 2.0 * (nr - 1), "allreduce max %g %g %g", dr[0], dr[1], dr[2]);
        free(s);
        free(r);
    }
    /* Gather and Gatherv to group 0's rank 0. */
    {
        int s[3], r[3 * 64], root = (g == 0) ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        for (int k = 0; k < 3; k++) s[k] = val(g, lr, k);
        for (int k = 0; k < 3 * 64; k++) r[k] = -1;
        MPI_Gather(s, 3, MPI_INT, r, 3, MPI_INT, root, ic);
        if (g == 0 && lr == 0)
            for (int j = 0; j < nr; j++)
                for (int k = 0; k < 3; k++) CHECK(r[3 * j + k] == val(1, j, k), "gather block %d[%d]=%d", j, k, r[3 * j + k]);
        /* Gatherv: remote rank j sends j+1 elements, stored back to front. */
        int counts[64], displs[64], at = 0;
        for (int j = nr - 1; j >= 0; j--) { counts[j] = j + 1; displs[j] = at; at += j + 1; }
        int sv[64];
        for (int k = 0; k < lr + 1; k++) sv[k] = val(g, lr, k);
        for (int k = 0; k < 3 * 64; k++) r[k] = -1;
        MPI_Gatherv(sv, lr + 1, MPI_INT, r, counts, displs, MPI_INT, root, ic);
        if (g == 0 && lr == 0)
            for (int j = 0; j < nr; j++)
                for (int k = 0; k <= j; k++) CHECK(r[displs[j] + k] == val(1, j, k), "gatherv block %d[%d]", j, k);
    }
    /* Scatter and Scatterv from group 1's last rank. */
    {
        int s[2 * 64], r[64], root = (g == 1) ? (lr == nl - 1 ? MPI_ROOT : MPI_PROC_NULL) : nr - 1;
        for (int j = 0; j < 64; j++) { s[2 * j] = val(9, j, 0); s[2 * j + 1] = val(9, j, 1); }
        r[0] = r[1] = -1;
        MPI_Scatter(s, 2, MPI_INT, r, 2, MPI_INT, root, ic);
        if (g == 0) CHECK(r[0] == val(9, lr, 0) && r[1] == val(9, lr, 1), "scatter got %d %d", r[0], r[1]);
        int counts[64], displs[64];
        for (int j = 0; j < 64; j++) { counts[j] = j % 2 + 1; displs[j] = 2 * (63 - j); }
        r[0] = r[1] = -1;
        MPI_Scatterv(s, counts, displs, MPI_INT, r, lr % 2 + 1, MPI_INT, root, ic);
        if (g == 0)
            for (int k = 0; k < lr % 2 + 1; k++) CHECK(r[k] == s[2 * (63 - lr) + k], "scatterv[%d]=%d", k, r[k]);
    }
    /* Allgather(v): the remote group's blocks. */
    {
        int s[2] = {val(g, lr, 0), val(g, lr, 1)}, r[2 * 64], counts[64], displs[64];
        MPI_Allgather(s, 2, MPI_INT, r, 2, MPI_INT, ic);
        for (int j = 0; j < nr; j++)
            CHECK(r[2 * j] == val(1 - g, j, 0) && r[2 * j + 1] == val(1 - g, j, 1), "allgather block %d", j);
        for (int j = 0; j < nr; j++) { counts[j] = 1 + j % 2; displs[j] = 2 * j; }
        for (int k = 0; k < 2 * 64; k++) r[k] = -1;
        MPI_Allgatherv(s, 1 + lr % 2, MPI_INT, r, counts, displs, MPI_INT, ic);
        for (int j = 0; j < nr; j++)
            for (int k = 0; k < counts[j]; k++) CHECK(r[2 * j + k] == val(1 - g, j, k), "allgatherv block %d[%d]", j, k);
    }
    /* Alltoall, Alltoallv, Alltoallw: block j to remote rank j. */
    {
        long blk = big ? 20000 : 3;
        int *s = malloc(blk * 64 * sizeof(int)), *r = malloc(blk * 64 * sizeof(int));
        for (int j = 0; j < nr; j++)
            for (long k = 0; k < blk; k++) s[j * blk + k] = val(g, lr, j * 7 + k);
        MPI_Alltoall(s, (int)blk, MPI_INT, r, (int)blk, MPI_INT, ic);
        for (int j = 0; j < nr; j++)
            for (long k = 0; k < blk; k++)
                CHECK(r[j * blk + k] == val(1 - g, j, lr * 7 + k), "alltoall from %d[%ld]=%d", j, k, r[j * blk + k]);
        int sc[64], sd[64], rc[64], rd[64], sz[64];
        MPI_Datatype ty[64];
        for (int j = 0; j < nr; j++) {
            sc[j] = (lr + j) % 3; sd[j] = 3 * j;
            rc[j] = (j + lr) % 3; rd[j] = 3 * (nr - 1 - j);
            sz[j] = 4 * rd[j]; ty[j] = MPI_INT;
        }
        int sv[3 * 64], rv[3 * 64];
        for (int j = 0; j < nr; j++)
            for (int k = 0; k < 3; k++) sv[3 * j + k] = val(g, lr, 50 + j * 3 + k);
        for (int w = 0; w < 2; w++) {
            for (int k = 0; k < 3 * 64; k++) rv[k] = -1;
            if (w == 0) {
                MPI_Alltoallv(sv, sc, sd, MPI_INT, rv, rc, rd, MPI_INT, ic);
            } else {
                int ssz[64];
                for (int j = 0; j < nr; j++) ssz[j] = 4 * sd[j];
                MPI_Alltoallw(sv, sc, ssz, ty, rv, rc, sz, ty, ic);
            }
            for (int j = 0; j < nr; j++)
                for (int k = 0; k < rc[j]; k++)
                    CHECK(rv[rd[j] + k] == val(1 - g, j, 50 + lr * 3 + k), "alltoall%s from %d[%d]", w ? "w" : "v", j, k);
        }
        free(s);
        free(r);
    }
    /* Reduce_scatter_block: each group's total is nl * nr elements. */
    {
        int tot = nl * nr, *s = malloc(tot * sizeof(int)), r[64];
        for (int e = 0; e < tot; e++) s[e] = val(g, lr, e);
        MPI_Reduce_scatter_block(s, r, nr, MPI_INT, MPI_SUM, ic);
        for (int k = 0; k < nr; k++) {
            long want = 0;
            for (int j = 0; j < nr; j++) want += val(1 - g, j, lr * nr + k);
            CHECK(r[k] == want, "reduce_scatter_block[%d]=%d want %ld", k, r[k], want);
        }
        free(s);
        /* Reduce_scatter: 12 elements in all, split unevenly over the group. */
        int counts[64], sv[12], off = 0;
        for (int i = 0; i < nl; i++) counts[i] = 12 / nl + (i < 12 % nl);
        for (int i = 0; i < lr; i++) off += counts[i];
        for (int e = 0; e < 12; e++) sv[e] = val(g, lr, e);
        MPI_Reduce_scatter(sv, r, counts, MPI_INT, MPI_MAX, ic);
        for (int k = 0; k < counts[lr]; k++)
            CHECK(r[k] == val(1 - g, nr - 1, off + k), "reduce_scatter[%d]=%d", k, r[k]);
    }
    /* Nonblocking: two outstanding, completed in reverse order. */
    {
        int a[5], b[5], c[5];
        for (int e = 0; e < 5; e++) { a[e] = val(g, lr, e); b[e] = g == 0 ? e + 40 : -1; c[e] = -1; }
        MPI_Request rq[2];
        int root = (g == 0) ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        MPI_Ibcast(b, 5, MPI_INT, root, ic, &rq[0]);
        MPI_Iallreduce(a, c, 5, MPI_INT, MPI_MIN, ic, &rq[1]);
        MPI_Wait(&rq[1], &st);
        MPI_Wait(&rq[0], &st);
        for (int e = 0; e < 5; e++) {
            CHECK(c[e] == val(1 - g, 0, e), "iallreduce[%d]=%d", e, c[e]);
            if (g == 1) CHECK(b[e] == e + 40, "ibcast[%d]=%d", e, b[e]);
        }
        MPI_Request br;
        MPI_Ibarrier(ic, &br);
        MPI_Wait(&br, &st);
    }
    /* Persistent allreduce started twice. */
    {
        int a = lr + 1, r = -1;
        MPI_Request pr;
        MPI_Allreduce_init(&a, &r, 1, MPI_INT, MPI_SUM, ic, MPI_INFO_NULL, &pr);
        for (int it = 0; it < 2; it++) {
            a = lr + 1 + it;
            MPI_Start(&pr);
            MPI_Wait(&pr, &st);
            CHECK(r == nr * (nr + 1) / 2 + it * nr, "persistent allreduce %d: %d", it, r);
        }
        MPI_Request_free(&pr);
    }
    /* Scan is not defined on intercommunicators. */
    {
        int a = 1, r;
        MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
        int rc = MPI_Scan(&a, &r, 1, MPI_INT, MPI_SUM, ic), cls;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_COMM, "scan on an intercommunicator gave class %d", cls);
        /* A root that is neither MPI_ROOT, MPI_PROC_NULL nor a remote rank. */
        rc = MPI_Bcast(&a, 1, MPI_INT, nr, ic);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_ROOT, "bad intercommunicator root gave class %d", cls);
    }
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    CHECK(size >= 2 && size <= 16, "needs 2-16 ranks");
    for (int split = 0; split < 2; split++) {
        /* split 0: even / odd world ranks; split 1: the first third / the rest. */
        int cut = size / 3 > 0 ? size / 3 : 1;
        g = split == 0 ? rank % 2 : rank >= cut;
        MPI_Comm local, ic, dup;
        MPI_Comm_split(MPI_COMM_WORLD, g, rank, &local);
        MPI_Comm_rank(local, &lr);
        MPI_Comm_size(local, &nl);
        int remote_leader = split == 0 ? 1 - g : (g == 0 ? cut : 0);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, remote_leader, 17, &ic);
        MPI_Comm_remote_size(ic, &nr);
        run(ic, split == 0);
        MPI_Comm_dup(ic, &dup);
        run(dup, 0);
        MPI_Comm_free(&dup);
        MPI_Comm_free(&ic);
        MPI_Comm_free(&local);
    }
    MPI_Finalize();
    if (rank == 0) printf("coll_inter ok\n");
    return 0;
}
