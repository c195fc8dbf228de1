/* Collectives with device buffers (CUDA-aware MPI): every collective in
 * blocking form, the nonblocking and persistent forms of several, the v/w
 * and neighbourhood ones, MPI_IN_PLACE, a derived datatype on device
 * memory, and host and device buffers mixed on one call. Results are
 * checked on the host against values computed from the ranks. */
#include <math.h>
#include <string.h>
#include "gpu_util.h"

static int rank, size;

/* Element i of rank r's contribution. */
static int val(int r, int i) { return r * 1000 + i * 3 + 1; }

static int *dev_ints(int n, int (*f)(int, int), int r) {
    int *h = malloc((n ? n : 1) * sizeof(int));
    for (int i = 0; i < n; i++) h[i] = f(r, i);
    int *d = dcopy(h, n * sizeof(int));
    free(h);
    return d;
}
static int *back(const int *d, int n) { return hcopy(d, n * sizeof(int)); }

static void reductions(int n, char where) {
    /* where: 'd' both device, 's' send host / receive device, 'r' send device / receive host. */
    int *s = where == 's' ? NULL : dev_ints(n, val, rank);
    int *hs = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) hs[i] = val(rank, i);
    if (where == 's') s = hs;
    int *r = where == 'r' ? calloc(n, sizeof(int)) : dalloc(n * sizeof(int), 0);
    long sum0 = 0;
    for (int q = 0; q < size; q++) sum0 += val(q, 0);
    MPI_Allreduce(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int *g = where == 'r' ? r : back(r, n);
    for (int i = 0; i < n; i++) {
        long e = 0;
        for (int q = 0; q < size; q++) e += val(q, i);
        CHECK(g[i] == e, "allreduce(%c) n=%d [%d] = %d, expected %ld", where, n, i, g[i], e);
    }
    if (where != 'r') free(g);
    MPI_Reduce(s, r, n, MPI_INT, MPI_MAX, size - 1, MPI_COMM_WORLD);
    if (rank == size - 1) {
        g = where == 'r' ? r : back(r, n);
        for (int i = 0; i < n; i++) CHECK(g[i] == val(size - 1, i), "reduce max [%d]", i);
        if (where != 'r') free(g);
    }
    if (where != 's') dfree(s);
    if (where != 'r') dfree(r); else free(r);
    free(hs);
}

static void in_place(int n) {
    int *d = dev_ints(n, val, rank);
    MPI_Allreduce(MPI_IN_PLACE, d, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int *g = back(d, n);
    for (int i = 0; i < n; i++) {
        long e = 0;
        for (int q = 0; q < size; q++) e += val(q, i);
        CHECK(g[i] == e, "allreduce in place n=%d [%d]", n, i);
    }
    free(g);
    dfree(d);
    /* Allgather in place: each rank's block already in the device buffer. */
    int *h = calloc(n * size, sizeof(int));
    for (int i = 0; i < n; i++) h[rank * n + i] = val(rank, i);
    d = dcopy(h, n * size * sizeof(int));
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, d, n, MPI_INT, MPI_COMM_WORLD);
    g = back(d, n * size);
    for (int q = 0; q < size; q++)
        for (int i = 0; i < n; i++) CHECK(g[q * n + i] == val(q, i), "allgather in place n=%d", n);
    free(g);
    free(h);
    dfree(d);
}

static void movement(int n) {
    /* Bcast, Gather, Scatter, Allgather, Alltoall and their v forms. */
    int root = size > 1 ? 1 : 0;
    int *b = rank == root ? dev_ints(n, val, root) : dalloc(n * sizeof(int), 0);
    MPI_Bcast(b, n, MPI_INT, root, MPI_COMM_WORLD);
    int *g = back(b, n);
    for (int i = 0; i < n; i++) CHECK(g[i] == val(root, i), "bcast n=%d [%d]", n, i);
    free(g);
    dfree(b);

    int *s = dev_ints(n, val, rank);
    int *all = dalloc(n * size * sizeof(int), 0);
    MPI_Gather(s, n, MPI_INT, all, n, MPI_INT, root, MPI_COMM_WORLD);
    if (rank == root) {
        g = back(all, n * size);
        for (int q = 0; q < size; q++)
            for (int i = 0; i < n; i++) CHECK(g[q * n + i] == val(q, i), "gather n=%d", n);
        free(g);
    }
    MPI_Allgather(s, n, MPI_INT, all, n, MPI_INT, MPI_COMM_WORLD);
    g = back(all, n * size);
    for (int q = 0; q < size; q++)
        for (int i = 0; i < n; i++) CHECK(g[q * n + i] == val(q, i), "allgather n=%d", n);
    free(g);

    /* Scatter from the root's device buffer of all blocks. */
    int *h = malloc(n * size * sizeof(int));
    for (int q = 0; q < size; q++)
        for (int i = 0; i < n; i++) h[q * n + i] = val(q, i) + 7;
    int *src = dcopy(h, n * size * sizeof(int));
    int *mine = dalloc(n * sizeof(int), 0);
    MPI_Scatter(src, n, MPI_INT, mine, n, MPI_INT, root, MPI_COMM_WORLD);
    g = back(mine, n);
    for (int i = 0; i < n; i++) CHECK(g[i] == val(rank, i) + 7, "scatter n=%d", n);
    free(g);

    /* Alltoall: block q of rank r holds val(r, q*n + i). */
    for (int q = 0; q < size; q++)
        for (int i = 0; i < n; i++) h[q * n + i] = val(rank, q * n + i);
    to_dev(src, h, n * size * sizeof(int));
    MPI_Alltoall(src, n, MPI_INT, all, n, MPI_INT, MPI_COMM_WORLD);
    g = back(all, n * size);
    for (int q = 0; q < size; q++)
        for (int i = 0; i < n; i++) CHECK(g[q * n + i] == val(q, rank * n + i), "alltoall n=%d", n);
    free(g);

    /* v forms: rank q contributes q+1 elements (times n / size + 1). */
    int *cnt = malloc(size * sizeof(int)), *dis = malloc(size * sizeof(int));
    int tot = 0;
    for (int q = 0; q < size; q++) {
        cnt[q] = (q + 1) * (n / size + 1);
        dis[q] = tot;
        tot += cnt[q];
    }
    int *vs = dev_ints(cnt[rank], val, rank);
    int *vr = dalloc(tot * sizeof(int), 0);
    MPI_Allgatherv(vs, cnt[rank], MPI_INT, vr, cnt, dis, MPI_INT, MPI_COMM_WORLD);
    g = back(vr, tot);
    for (int q = 0; q < size; q++)
        for (int i = 0; i < cnt[q]; i++) CHECK(g[dis[q] + i] == val(q, i), "allgatherv n=%d", n);
    free(g);
    MPI_Gatherv(vs, cnt[rank], MPI_INT, vr, cnt, dis, MPI_INT, 0, MPI_COMM_WORLD);
    int *vmine = dalloc(cnt[rank] * sizeof(int), 0);
    MPI_Scatterv(vr, cnt, dis, MPI_INT, vmine, cnt[rank], MPI_INT, 0, MPI_COMM_WORLD);
    g = back(vmine, cnt[rank]);
    for (int i = 0; i < cnt[rank]; i++) CHECK(g[i] == val(rank, i), "gatherv+scatterv n=%d", n);
    free(g);
    /* Alltoallv: rank r sends cnt[q]... keep it square: n to everyone, displaced. */
    int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
    for (int q = 0; q < size; q++) { sc[q] = n; sd[q] = (size - 1 - q) * n; }
    for (int q = 0; q < size; q++)
        for (int i = 0; i < n; i++) h[sd[q] + i] = val(rank, q * n + i);
    to_dev(src, h, n * size * sizeof(int));
    MPI_Alltoallv(src, sc, sd, MPI_INT, all, sc, dis[0] == 0 ? sd : sd, MPI_INT, MPI_COMM_WORLD);
    g = back(all, n * size);
    for (int q = 0; q < size; q++)
        for (int i = 0; i < n; i++) CHECK(g[sd[q] + i] == val(q, rank * n + i), "alltoallv n=%d", n);
    free(g);
    /* Alltoallw with byte displacements. */
    int *wd = malloc(size * sizeof(int));
    MPI_Datatype *wt = malloc(size * sizeof(MPI_Datatype));
    for (int q = 0; q < size; q++) { wd[q] = sd[q] * (int)sizeof(int); wt[q] = MPI_INT; }
    MPI_Alltoallw(src, sc, wd, wt, all, sc, wd, wt, MPI_COMM_WORLD);
    g = back(all, n * size);
    for (int q = 0; q < size; q++)
        for (int i = 0; i < n; i++) CHECK(g[sd[q] + i] == val(q, rank * n + i), "alltoallw n=%d", n);
    free(g);
    free(wd); free(wt); free(sc); free(sd); free(cnt); free(dis); free(h);
    dfree(vs); dfree(vr); dfree(vmine); dfree(s); dfree(all); dfree(src); dfree(mine);
}

static void scans_and_scatter_reduce(int n) {
    int *s = dev_ints(n * size, val, rank), *r = dalloc(n * size * sizeof(int), 0);
    MPI_Scan(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int *g = back(r, n);
    for (int i = 0; i < n; i++) {
        long e = 0;
        for (int q = 0; q <= rank; q++) e += val(q, i);
        CHECK(g[i] == e, "scan n=%d", n);
    }
    free(g);
    MPI_Exscan(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank > 0) {
        g = back(r, n);
        for (int i = 0; i < n; i++) {
            long e = 0;
            for (int q = 0; q < rank; q++) e += val(q, i);
            CHECK(g[i] == e, "exscan n=%d", n);
        }
        free(g);
    }
    MPI_Reduce_scatter_block(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    g = back(r, n);
    for (int i = 0; i < n; i++) {
        long e = 0;
        for (int q = 0; q < size; q++) e += val(q, rank * n + i);
        CHECK(g[i] == e, "reduce_scatter_block n=%d", n);
    }
    free(g);
    int *rc = malloc(size * sizeof(int));
    for (int q = 0; q < size; q++) rc[q] = n;
    MPI_Reduce_scatter(s, r, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    g = back(r, n);
    for (int i = 0; i < n; i++) {
        long e = 0;
        for (int q = 0; q < size; q++) e += val(q, rank * n + i);
        CHECK(g[i] == e, "reduce_scatter n=%d", n);
    }
    free(g);
    free(rc);
    dfree(s);
    dfree(r);
}

static void nonblocking_and_persistent(int n) {
    int *s = dev_ints(n, val, rank), *r = dalloc(n * sizeof(int), 0);
    MPI_Request q[2];
    int *b = rank == 0 ? dev_ints(n, val, 0) : dalloc(n * sizeof(int), 0);
    /* Their device buffers are staged with copies queued on the library's
     * stream: no call waits for the device (the test double counts copies
     * that do). */
    long before = cu.sync_copies ? cu.sync_copies() : 0;
    MPI_Iallreduce(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[0]);
    MPI_Ibcast(b, n, MPI_INT, 0, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    if (cu.sync_copies)
        CHECK(cu.sync_copies() == before, "iallreduce and ibcast n=%d: %ld copies waited for the device in the calls", n, cu.sync_copies() - before);
    int *g = back(r, n), *gb = back(b, n);
    for (int i = 0; i < n; i++) {
        long e = 0;
        for (int k = 0; k < size; k++) e += val(k, i);
        CHECK(g[i] == e, "iallreduce n=%d", n);
        CHECK(gb[i] == val(0, i), "ibcast n=%d", n);
    }
    free(g);
    free(gb);
    /* Persistent allreduce: the device buffer's contents at each start. */
    MPI_Request p;
    MPI_Allreduce_init(s, r, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD, MPI_INFO_NULL, &p);
    for (int round = 0; round < 3; round++) {
        int *h = malloc(n * sizeof(int));
        for (int i = 0; i < n; i++) h[i] = val(rank, i) * (round + 1);
        to_dev(s, h, n * sizeof(int));
        before = cu.sync_copies ? cu.sync_copies() : 0;
        MPI_Start(&p);
        MPI_Wait(&p, MPI_STATUS_IGNORE);
        if (cu.sync_copies)
            CHECK(cu.sync_copies() == before, "persistent allreduce n=%d: %ld copies waited for the device in the calls", n, cu.sync_copies() - before);
        g = back(r, n);
        for (int i = 0; i < n; i++) CHECK(g[i] == val(size - 1, i) * (round + 1), "persistent allreduce round %d", round);
        free(g);
        free(h);
    }
    MPI_Request_free(&p);
    MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &p);
    MPI_Start(&p);
    MPI_Wait(&p, MPI_STATUS_IGNORE);
    MPI_Request_free(&p);
    dfree(s);
    dfree(r);
    dfree(b);
}

static void derived_and_neighbours(void) {
    /* A strided column of a device matrix, broadcast and allreduced. */
    MPI_Datatype col;
    MPI_Type_vector(50, 1, 4, MPI_INT, &col);
    MPI_Type_commit(&col);
    int h[200];
    for (int i = 0; i < 200; i++) h[i] = rank == 0 ? i : -1;
    int *d = dcopy(h, sizeof h);
    MPI_Bcast(d, 1, col, 0, MPI_COMM_WORLD);
    int g[200];
    from_dev(g, d, sizeof g);
    for (int i = 0; i < 200; i++) CHECK(g[i] == (i % 4 == 0 ? i : (rank == 0 ? i : -1)), "bcast of a device column [%d] = %d", i, g[i]);
    for (int i = 0; i < 200; i++) h[i] = rank + i;
    to_dev(d, h, sizeof h);
    int *r = dalloc(sizeof h, 0xff);
    MPI_Allreduce(d, r, 1, col, MPI_SUM, MPI_COMM_WORLD);
    from_dev(g, r, sizeof g);
    for (int i = 0; i < 200; i++) {
        int e = i % 4 == 0 ? size * i + size * (size - 1) / 2 : -1;
        CHECK(g[i] == e, "allreduce of a device column [%d] = %d, expected %d", i, g[i], e);
    }
    dfree(d);
    dfree(r);
    MPI_Type_free(&col);
    /* Neighbourhood collectives on a periodic ring. */
    MPI_Comm ring;
    int dims[1] = {size}, per[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, per, 0, &ring);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int *s = dev_ints(8, val, rank), *nb = dalloc(16 * sizeof(int), 0);
    MPI_Neighbor_allgather(s, 8, MPI_INT, nb, 8, MPI_INT, ring);
    int *gn = back(nb, 16);
    for (int i = 0; i < 8; i++) {
        CHECK(gn[i] == val(left, i), "neighbor_allgather from the left");
        CHECK(gn[8 + i] == val(right, i), "neighbor_allgather from the right");
    }
    free(gn);
    int *s2 = dev_ints(16, val, rank);
    MPI_Neighbor_alltoall(s2, 8, MPI_INT, nb, 8, MPI_INT, ring);
    gn = back(nb, 16);
    for (int i = 0; i < 8; i++) {
        CHECK(gn[i] == val(left, 8 + i), "neighbor_alltoall from the left");
        CHECK(gn[8 + i] == val(right, i), "neighbor_alltoall from the right");
    }
    free(gn);
    dfree(s);
    dfree(s2);
    dfree(nb);
    MPI_Comm_free(&ring);
}

/* The single-copy reductions (above the node area's copies, 128 KiB) on
 * device buffers: by CUDA IPC where every rank's are device memory (with
 * kernels where the driver runs them), staged where the ranks mix device
 * and host buffers; results bitwise equal on every rank; ops without a
 * kernel (MAXLOC, float16 in the double); a communicator whose ranks are
 * world's in reverse order (the IPC cache's peers are world ranks); and a
 * buffer freed and allocated again between two calls. */
static void single_copy(void) {
    const int n = 100000; /* 400 KB of ints, 800 KB of doubles */
    /* Rank 0 on host buffers, the others on device ones (where mixed). */
    for (int mixed = 0; mixed < 2; mixed++) {
        int host = mixed && rank == 0;
        int *h = malloc(n * sizeof(int));
        for (int i = 0; i < n; i++) h[i] = val(rank, i);
        int *s = host ? h : dcopy(h, n * sizeof(int));
        int *r = host ? calloc(n, sizeof(int)) : dalloc(n * sizeof(int), 0);
        MPI_Allreduce(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        int *g = host ? r : back(r, n);
        for (int i = 0; i < n; i++) {
            long e = 0;
            for (int q = 0; q < size; q++) e += val(q, i);
            CHECK(g[i] == e, "single-copy allreduce (mixed %d) [%d] = %d, expected %ld", mixed, i, g[i], e);
        }
        if (!host) free(g);
        int root = size / 2;
        MPI_Reduce(s, r, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
        if (rank == root) {
            g = host ? r : back(r, n);
            for (int i = 0; i < n; i++) {
                long e = 0;
                for (int q = 0; q < size; q++) e += val(q, i);
                CHECK(g[i] == e, "single-copy reduce to %d (mixed %d) [%d] = %d", root, mixed, i, g[i]);
            }
            if (!host) free(g);
        }
        /* Bcast (single copy from 128 KiB to 4 MiB) from a host root and
         * from a device one, to host and device readers. */
        for (int broot = 0; broot < size; broot += size > 1 ? size - 1 : 1) {
            int *b = host ? calloc(n, sizeof(int)) : dalloc(n * sizeof(int), 0);
            if (rank == broot) {
                for (int i = 0; i < n; i++) h[i] = val(broot, i) * 7;
                if (host) memcpy(b, h, n * sizeof(int)); else to_dev(b, h, n * sizeof(int));
            }
            MPI_Bcast(b, n, MPI_INT, broot, MPI_COMM_WORLD);
            int *gb = host ? b : back(b, n);
            for (int i = 0; i < n; i++)
                CHECK(gb[i] == val(broot, i) * 7, "single-copy bcast from %d (mixed %d) [%d] = %d", broot, mixed, i, gb[i]);
            if (host) free(b); else { free(gb); dfree(b); }
            for (int i = 0; i < n; i++) h[i] = val(rank, i);
        }
        /* Allgather (in place too) and alltoall in their single copy,
         * blocks of 40 KB. */
        {
            const int m = 10000;
            int *ag = host ? calloc((size_t)m * size, sizeof(int)) : dalloc((size_t)m * size * sizeof(int), 0);
            MPI_Allgather(s, m, MPI_INT, ag, m, MPI_INT, MPI_COMM_WORLD);
            int *gg = host ? ag : back(ag, m * size);
            for (int q = 0; q < size; q++)
                for (int i = 0; i < m; i++)
                    CHECK(gg[q * m + i] == val(q, i), "single-copy allgather (mixed %d) block %d [%d] = %d", mixed, q, i, gg[q * m + i]);
            if (!host) free(gg);
            /* In place: my block is already in the output. */
            int *hh = calloc((size_t)m * size, sizeof(int));
            for (int i = 0; i < m; i++) hh[rank * m + i] = -val(rank, i);
            if (host) memcpy(ag, hh, (size_t)m * size * sizeof(int)); else to_dev(ag, hh, (size_t)m * size * sizeof(int));
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag, m, MPI_INT, MPI_COMM_WORLD);
            gg = host ? ag : back(ag, m * size);
            for (int q = 0; q < size; q++)
                for (int i = 0; i < m; i++)
                    CHECK(gg[q * m + i] == -val(q, i), "allgather in place (mixed %d) block %d [%d] = %d", mixed, q, i, gg[q * m + i]);
            if (!host) free(gg);
            /* Alltoall: block q of rank r's send is r * 100000 + q * 1000 + i. */
            for (int q = 0; q < size; q++)
                for (int i = 0; i < m; i++) hh[q * m + i] = rank * 100000 + q * 1000 + i % 1000;
            int *as = host ? hh : dcopy(hh, (size_t)m * size * sizeof(int));
            MPI_Alltoall(as, m, MPI_INT, ag, m, MPI_INT, MPI_COMM_WORLD);
            gg = host ? ag : back(ag, m * size);
            for (int q = 0; q < size; q++)
                for (int i = 0; i < m; i++)
                    CHECK(gg[q * m + i] == q * 100000 + rank * 1000 + i % 1000, "single-copy alltoall (mixed %d) block %d [%d] = %d",
                          mixed, q, i, gg[q * m + i]);
            if (!host) { free(gg); dfree(as); dfree(ag); } else free(ag);
            free(hh);
        }
        /* Reduce_scatter_block: blocks of n / size; in place too. */
        int blk = n / size;
        MPI_Reduce_scatter_block(s, r, blk, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        g = host ? r : back(r, blk);
        for (int i = 0; i < blk; i++) {
            long e = 0;
            for (int q = 0; q < size; q++) e += val(q, rank * blk + i);
            CHECK(g[i] == e, "single-copy reduce_scatter_block (mixed %d) [%d] = %d", mixed, i, g[i]);
        }
        if (!host) free(g);
        MPI_Reduce_scatter_block(MPI_IN_PLACE, s, blk, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        g = host ? s : back(s, blk);
        for (int i = 0; i < blk; i++) {
            long e = 0;
            for (int q = 0; q < size; q++) e += val(q, rank * blk + i);
            CHECK(g[i] == e, "reduce_scatter_block in place (mixed %d) [%d] = %d", mixed, i, g[i]);
        }
        if (!host) { free(g); dfree(s); dfree(r); free(h); } else { free(h); free(r); }
    }
    /* Doubles whose sum depends on the order: the same bits everywhere. */
    double *hd = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) hd[i] = (rank + 1) * 0.1 + i * 1e-7 + (i % 7 == rank % 7 ? 1e10 : 0);
    double *sd = dcopy(hd, n * sizeof(double)), *rd = dalloc(n * sizeof(double), 0);
    MPI_Allreduce(sd, rd, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double *mine = hcopy(rd, n * sizeof(double));
    double *r0 = malloc(n * sizeof(double));
    memcpy(r0, mine, n * sizeof(double));
    MPI_Bcast(r0, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    CHECK(memcmp(r0, mine, n * sizeof(double)) == 0, "device allreduce of doubles differs from rank 0's bits");
    for (int i = 0; i < n; i += 997) {
        double e = 0;
        for (int q = 0; q < size; q++) e += (q + 1) * 0.1 + i * 1e-7 + (i % 7 == q % 7 ? 1e10 : 0);
        CHECK(fabs(mine[i] - e) <= 1e-5 * fabs(e), "device allreduce of doubles [%d] = %g, expected %g", i, mine[i], e);
    }
    free(mine); free(r0); free(hd); dfree(sd); dfree(rd);
    /* MAXLOC (no kernel): pairs of (value, index). */
    int *pairs = malloc(2 * n * sizeof(int));
    for (int i = 0; i < n; i++) { pairs[2 * i] = (i + rank) % size; pairs[2 * i + 1] = rank; }
    int *sp = dcopy(pairs, 2 * n * sizeof(int)), *rp = dalloc(2 * n * sizeof(int), 0);
    MPI_Allreduce(sp, rp, n, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
    int *gp = hcopy(rp, 2 * n * sizeof(int));
    for (int i = 0; i < n; i++) {
        int owner = ((size - 1 - i) % size + size) % size; /* (i + owner) % size == size - 1 */
        CHECK(gp[2 * i] == size - 1 && gp[2 * i + 1] == owner, "device maxloc [%d] = (%d, %d), expected (%d, %d)",
              i, gp[2 * i], gp[2 * i + 1], size - 1, owner);
    }
    free(gp); free(pairs); dfree(sp); dfree(rp);
    /* float16 sums of small integers (exact): no kernel in the double. */
    unsigned short *hf = malloc(n * 2);
    for (int i = 0; i < n; i++) hf[i] = 0x3c00; /* 1.0 */
    unsigned short *sf = dcopy(hf, n * 2), *rf = dalloc(n * 2, 0);
    MPI_Allreduce(sf, rf, n, MPIX_C_FLOAT16, MPI_SUM, MPI_COMM_WORLD);
    unsigned short *gf = hcopy(rf, n * 2);
    /* size as a float16: 1.0 = 0x3c00, 2.0 = 0x4000, 3.0 = 0x4200, 4.0 = 0x4400 */
    static const unsigned short want[] = {0, 0x3c00, 0x4000, 0x4200, 0x4400};
    for (int i = 0; i < n && size <= 4; i++) CHECK(gf[i] == want[size], "float16 sum [%d] = 0x%04x", i, gf[i]);
    free(gf); free(hf); dfree(sf); dfree(rf);
    /* World's ranks in reverse order. */
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    int *h = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) h[i] = val(rank, i);
    int *s = dcopy(h, n * sizeof(int)), *r = dalloc(n * sizeof(int), 0);
    MPI_Allreduce(s, r, n, MPI_INT, MPI_SUM, rev);
    int *g = back(r, n);
    for (int i = 0; i < n; i++) {
        long e = 0;
        for (int q = 0; q < size; q++) e += val(q, i);
        CHECK(g[i] == e, "allreduce on the reversed communicator [%d] = %d", i, g[i]);
    }
    free(g);
    MPI_Comm_free(&rev);
    /* Freed and allocated again (the double hands out a new buffer id, and
     * often the same address): the second call must see the new data. */
    dfree(s);
    for (int i = 0; i < n; i++) h[i] = -val(rank, i);
    s = dcopy(h, n * sizeof(int));
    MPI_Allreduce(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    g = back(r, n);
    for (int i = 0; i < n; i++) {
        long e = 0;
        for (int q = 0; q < size; q++) e -= val(q, i);
        CHECK(g[i] == e, "allreduce after free and allocate [%d] = %d, expected %ld", i, g[i], e);
    }
    free(g); free(h); dfree(s); dfree(r);
}

/* A one-double result of a collective lands in the device buffer by value
 * writes (OXMPI_GPU_MEMOP_MAX), not by a copy, blocking and nonblocking;
 * the value is the sum. Counted by the test double. */
static void short_results(void) {
    const char *m = getenv("OXMPI_GPU_MEMOP_MAX");
    if (!cu.memops || (m && atol(m) < 8)) return;
    double h = rank + 1, want = size * (size + 1) / 2.0, got = 0;
    void *s = dcopy(&h, 8), *r = dalloc(8, 0);
    for (int nb = 0; nb < 2; nb++) {
        long before = cu.memops();
        if (nb) {
            MPI_Request q;
            MPI_Iallreduce(s, r, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else {
            MPI_Allreduce(s, r, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
        long used = cu.memops() - before;
        from_dev(&got, r, 8);
        CHECK(got == want, "%sallreduce of one double: %g, not %g", nb ? "i" : "", got, want);
        CHECK(used >= 1, "%sallreduce of one double: no value writes", nb ? "i" : "");
    }
    dfree(s);
    dfree(r);
}

/* Ranks sharing one GPU without MPS (the test double's CUDA_DOUBLE_MPS=0:
 * all its memory is on device 0): a single-copy collective whose CUDA IPC
 * copies would be smaller than OXMPI_CUDA_IPC_SHARED_MIN (256 KiB) goes
 * through host memory instead, since each IPC copy would wait for a switch
 * of the GPU between the ranks' contexts; from that size, and under MPS,
 * by IPC. Each case checks its values and the copies out of IPC mappings
 * on all ranks (the double counts them). Runs where CUDA_DOUBLE_MPS is
 * set and every rank is on this node's shared memory. */
static void shared_gpu(void) {
    const char *mps = getenv("CUDA_DOUBLE_MPS"), *ipc = getenv("OXMPI_CUDA_IPC");
    if (!mps || !cu.ipc_copies || size == 1 || getenv("OXMPI_TEST_UCX") || getenv("OXMPI_TEST_RANKS_PER_NODE") ||
        getenv("CUDA_DOUBLE_NO_IPC") || (ipc && atoi(ipc) == 0))
        return;
    const char *m = getenv("OXMPI_CUDA_IPC_SHARED_MIN");
    long min = m ? atol(m) : 262144;
    int shared = atoi(mps) == 0;
    /* Bytes of each IPC copy: 200 KB and 300 KB (a bcast takes its single
     * copy from 128 KiB). */
    for (int big = 0; big < 2; big++) {
        int per = big ? 75000 : 50000; /* ints per copy */
        long bytes = per * (long)sizeof(int);
        int want = !(shared && bytes < min);
        int n = per * size, root = size - 1;
        for (int c = 0; c < 6; c++) {
            static const char *names[] = {"allreduce", "reduce", "reduce_scatter_block", "allgather", "alltoall", "bcast"};
            int *s = dev_ints(n, val, rank), *r = dalloc((size_t)n * sizeof(int), 0);
            long before = cu.ipc_copies();
            switch (c) {
            case 0: MPI_Allreduce(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD); break;
            case 1: MPI_Reduce(s, r, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD); break;
            case 2: MPI_Reduce_scatter_block(s, r, per, MPI_INT, MPI_SUM, MPI_COMM_WORLD); break;
            case 3: MPI_Allgather(s, per, MPI_INT, r, per, MPI_INT, MPI_COMM_WORLD); break;
            case 4: MPI_Alltoall(s, per, MPI_INT, r, per, MPI_INT, MPI_COMM_WORLD); break;
            case 5: MPI_Bcast(s, per, MPI_INT, root, MPI_COMM_WORLD); break;
            }
            long used = cu.ipc_copies() - before, all = 0;
            MPI_Allreduce(&used, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            CHECK(want ? all > 0 : all == 0,
                  "%s with IPC copies of %ld bytes (MPS %s, shared minimum %ld): %ld copies out of IPC mappings, expected %s",
                  names[c], bytes, shared ? "off" : "on", min, all, want ? "some" : "none");
            int *g = back(c == 5 ? s : r, n);
            /* Elements that hold a result here. */
            int lim = c == 1 && rank != root ? 0 : c == 2 || c == 5 ? per : n;
            for (int i = 0; i < lim; i++) {
                long e = 0;
                if (c == 0 || c == 1)
                    for (int q = 0; q < size; q++) e += val(q, i);
                else if (c == 2)
                    for (int q = 0; q < size; q++) e += val(q, rank * per + i);
                else if (c == 3)
                    e = val(i / per, i % per);
                else if (c == 4)
                    e = val(i / per, rank * per + i % per);
                else
                    e = val(root, i);
                CHECK(g[i] == e, "%s (MPS %s, %ld bytes per copy) [%d] = %d, expected %ld", names[c],
                      shared ? "off" : "on", bytes, i, g[i], e);
            }
            free(g);
            dfree(s);
            dfree(r);
        }
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    GPU_OR_SKIP(rank);
    int ns[] = {1, 100, 20000, 300000};
    for (int k = 0; k < 4; k++) {
        reductions(ns[k], 'd');
        reductions(ns[k], 's');
        reductions(ns[k], 'r');
        in_place(ns[k]);
        movement(ns[k] / 4 + 1);
        scans_and_scatter_reduce(ns[k] / 4 + 1);
        nonblocking_and_persistent(ns[k]);
    }
    derived_and_neighbours();
    single_copy();
    shared_gpu();
    short_results();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("gpu_coll ok\n");
    MPI_Finalize();
    return 0;
}
