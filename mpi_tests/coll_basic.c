/* Blocking collectives: every call at counts 0, 1, 7, 1000 and 100003, roots
 * other than 0, MPI_IN_PLACE, builtin ops on int and floating types, MAXLOC,
 * a non-commutative user op, on MPI_COMM_WORLD and on a split communicator.
 * Results are compared with values computed locally. */
#include "util.h"
#include <math.h>

/* 2x2 integer matrix product (mod 1000003): associative, not commutative. */
typedef struct { long a, b, c, d; } mat;
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    mat *x = in, *y = inout;
    for (int i = 0; i < *len / 4; i++) {
        mat r = {(x[i].a * y[i].a + x[i].b * y[i].c) % 1000003, (x[i].a * y[i].b + x[i].b * y[i].d) % 1000003,
                 (x[i].c * y[i].a + x[i].d * y[i].c) % 1000003, (x[i].c * y[i].b + x[i].d * y[i].d) % 1000003};
        y[i] = r;
    }
}
static mat mat_of(int r) { mat m = {r + 1, 1, r % 3, 2}; return m; }
static mat mat_mul(mat x, mat y) {
    mat r = {(x.a * y.a + x.b * y.c) % 1000003, (x.a * y.b + x.b * y.d) % 1000003,
             (x.c * y.a + x.d * y.c) % 1000003, (x.c * y.b + x.d * y.d) % 1000003};
    return r;
}

static void run(MPI_Comm comm, const char *label) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    static const int counts[] = {0, 1, 7, 1000, 100003};
    for (unsigned ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
        int n = counts[ci];
        int root = (int)(ci % size);
        int *a = malloc(sizeof(int) * (n + 1) * size), *b = malloc(sizeof(int) * (n + 1) * size);
        double *d = malloc(sizeof(double) * (n + 1)), *e = malloc(sizeof(double) * (n + 1));

        /* Bcast */
        for (int i = 0; i < n; i++) a[i] = rank == root ? i * 3 + root : -1;
        MPI_Bcast(a, n, MPI_INT, root, comm);
        for (int i = 0; i < n; i++) CHECK(a[i] == i * 3 + root, "%s bcast n=%d [%d]=%d", label, n, i, a[i]);

        /* Reduce SUM int, Allreduce MAX double, IN_PLACE forms */
        for (int i = 0; i < n; i++) a[i] = rank + i;
        MPI_Reduce(a, b, n, MPI_INT, MPI_SUM, root, comm);
        if (rank == root)
            for (int i = 0; i < n; i++) CHECK(b[i] == size * i + size * (size - 1) / 2, "%s reduce n=%d [%d]=%d", label, n, i, b[i]);
        for (int i = 0; i < n; i++) b[i] = rank * 2 + i;
        if (rank == root) MPI_Reduce(MPI_IN_PLACE, b, n, MPI_INT, MPI_SUM, root, comm);
        else MPI_Reduce(b, NULL, n, MPI_INT, MPI_SUM, root, comm);
        if (rank == root)
            for (int i = 0; i < n; i++) CHECK(b[i] == size * i + size * (size - 1), "%s reduce in place [%d]=%d", label, i, b[i]);
        for (int i = 0; i < n; i++) d[i] = sin(rank * 1.7 + i) * 1e3;
        MPI_Allreduce(d, e, n, MPI_DOUBLE, MPI_MAX, comm);
        for (int i = 0; i < n; i++) {
            double m = -1e300;
            for (int r = 0; r < size; r++) m = fmax(m, sin(r * 1.7 + i) * 1e3);
            CHECK(e[i] == m, "%s allreduce max [%d]", label, i);
        }
        /* Floating SUM: every rank gets bit-identical results. */
        for (int i = 0; i < n; i++) e[i] = 1.0 / (rank + i + 3.0);
        MPI_Allreduce(MPI_IN_PLACE, e, n, MPI_DOUBLE, MPI_SUM, comm);
        if (n > 0) {
            double *all = malloc(sizeof(double) * size);
            MPI_Allgather(&e[n - 1], 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, comm);
            for (int r = 0; r < size; r++) CHECK(memcmp(&all[r], &all[0], sizeof(double)) == 0, "%s allreduce bits differ", label);
            double s = 0;
            for (int r = 0; r < size; r++) s += 1.0 / (r + n - 1 + 3.0);
            CHECK(fabs(all[0] - s) < 1e-12, "%s allreduce sum %g vs %g", label, all[0], s);
            free(all);
        }

        /* Gather / Scatter / Allgather / Alltoall with n ints per rank. */
        for (int i = 0; i < n; i++) a[i] = rank * 100000 + i;
        MPI_Gather(a, n, MPI_INT, b, n, MPI_INT, root, comm);
        if (rank == root)
            for (int r = 0; r < size; r++)
                for (int i = 0; i < n; i++) CHECK(b[r * n + i] == r * 100000 + i, "%s gather", label);
        if (rank == root) {
            for (int r = 0; r < size; r++)
                for (int i = 0; i < n; i++) b[r * n + i] = r * 7 + i;
            MPI_Scatter(b, n, MPI_INT, MPI_IN_PLACE, n, MPI_INT, root, comm);
            for (int i = 0; i < n; i++) CHECK(b[root * n + i] == root * 7 + i, "%s scatter in place", label);
        } else {
            MPI_Scatter(NULL, n, MPI_INT, a, n, MPI_INT, root, comm);
            for (int i = 0; i < n; i++) CHECK(a[i] == rank * 7 + i, "%s scatter [%d]=%d", label, i, a[i]);
        }
        for (int i = 0; i < n; i++) a[i] = rank * 3 + i;
        MPI_Allgather(a, n, MPI_INT, b, n, MPI_INT, comm);
        for (int r = 0; r < size; r++)
            for (int i = 0; i < n; i++) CHECK(b[r * n + i] == r * 3 + i, "%s allgather", label);
        if (n <= 1000) {
            int *s = malloc(sizeof(int) * n * size + 4), *t = malloc(sizeof(int) * n * size + 4);
            for (int r = 0; r < size; r++)
                for (int i = 0; i < n; i++) s[r * n + i] = rank * 1000000 + r * 1000 + i;
            MPI_Alltoall(s, n, MPI_INT, t, n, MPI_INT, comm);
            for (int r = 0; r < size; r++)
                for (int i = 0; i < n; i++) CHECK(t[r * n + i] == r * 1000000 + rank * 1000 + i, "%s alltoall", label);
            MPI_Alltoall(MPI_IN_PLACE, n, MPI_INT, s, n, MPI_INT, comm);
            for (int r = 0; r < size; r++)
                for (int i = 0; i < n; i++) CHECK(s[r * n + i] == r * 1000000 + rank * 1000 + i, "%s alltoall in place", label);
            free(s);
            free(t);
        }
        free(a); free(b); free(d); free(e);
    }

    /* v-variants: rank r contributes r+1 ints. */
    {
        int *rc = malloc(sizeof(int) * size), *dis = malloc(sizeof(int) * size), tot = 0;
        for (int r = 0; r < size; r++) { rc[r] = r + 1; dis[r] = tot + r; tot += r + 1 + r; }
        int *mine = malloc(sizeof(int) * (rank + 1)), *all = malloc(sizeof(int) * (tot + 1));
        for (int i = 0; i <= rank; i++) mine[i] = rank * 10 + i;
        int root = size - 1;
        MPI_Gatherv(mine, rank + 1, MPI_INT, all, rc, dis, MPI_INT, root, comm);
        if (rank == root)
            for (int r = 0; r < size; r++)
                for (int i = 0; i <= r; i++) CHECK(all[dis[r] + i] == r * 10 + i, "%s gatherv", label);
        memset(all, 0, sizeof(int) * (tot + 1));
        MPI_Allgatherv(mine, rank + 1, MPI_INT, all, rc, dis, MPI_INT, comm);
        for (int r = 0; r < size; r++)
            for (int i = 0; i <= r; i++) CHECK(all[dis[r] + i] == r * 10 + i, "%s allgatherv", label);
        for (int i = 0; i <= rank; i++) mine[i] = -1;
        MPI_Scatterv(all, rc, dis, MPI_INT, mine, rank + 1, MPI_INT, root, comm);
        for (int i = 0; i <= rank; i++) CHECK(mine[i] == rank * 10 + i, "%s scatterv", label);
        /* Reduce_scatter: block r has r+1 elements. */
        int *src = malloc(sizeof(int) * size * (size + 1) / 2), *dst = malloc(sizeof(int) * (rank + 1));
        for (int i = 0; i < size * (size + 1) / 2; i++) src[i] = i + rank;
        MPI_Reduce_scatter(src, dst, rc, MPI_INT, MPI_SUM, comm);
        int off = rank * (rank + 1) / 2;
        for (int i = 0; i <= rank; i++) CHECK(dst[i] == size * (off + i) + size * (size - 1) / 2, "%s reduce_scatter", label);
        int blk[3], out3[3];
        int *src3 = malloc(sizeof(int) * 3 * size);
        for (int i = 0; i < 3 * size; i++) src3[i] = i * rank;
        MPI_Reduce_scatter_block(src3, out3, 3, MPI_INT, MPI_SUM, comm);
        for (int i = 0; i < 3; i++) CHECK(out3[i] == (rank * 3 + i) * size * (size - 1) / 2, "%s reduce_scatter_block", label);
        (void)blk;
        /* Alltoallv: rank sends j+1 ints to rank j. */
        int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size), *rcv = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
        int stot = 0, rtot = 0;
        for (int j = 0; j < size; j++) { sc[j] = j + 1; sd[j] = stot; stot += j + 1; rcv[j] = rank + 1; rd[j] = rtot; rtot += rank + 1; }
        int *sb = malloc(sizeof(int) * stot), *rb = malloc(sizeof(int) * rtot);
        for (int j = 0; j < size; j++)
            for (int i = 0; i <= j; i++) sb[sd[j] + i] = rank * 100 + j * 10 + i;
        MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rcv, rd, MPI_INT, comm);
        for (int j = 0; j < size; j++)
            for (int i = 0; i <= rank; i++) CHECK(rb[rd[j] + i] == j * 100 + rank * 10 + i, "%s alltoallv", label);
        free(sc); free(sd); free(rcv); free(rd); free(sb); free(rb); free(src3);
        free(rc); free(dis); free(mine); free(all); free(src); free(dst);
    }

    /* MAXLOC on (double, int), LOR/BXOR, MIN on long long. */
    {
        struct { double v; int i; } in = {(double)((rank * 7) % 5), rank}, res;
        MPI_Allreduce(&in, &res, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
        double best = -1; int who = -1;
        for (int r = 0; r < size; r++) if ((double)((r * 7) % 5) > best) { best = (r * 7) % 5; who = r; }
        CHECK(res.v == best && res.i == who, "%s maxloc (%g,%d) expected (%g,%d)", label, res.v, res.i, best, who);
        int bits = 1 << rank, x;
        MPI_Allreduce(&bits, &x, 1, MPI_INT, MPI_BXOR, comm);
        CHECK(x == (1 << size) - 1, "%s bxor %d", label, x);
        long long ll = 1000 - rank, mn;
        MPI_Allreduce(&ll, &mn, 1, MPI_LONG_LONG, MPI_MIN, comm);
        CHECK(mn == 1000 - (size - 1), "%s min long long", label);
    }

    /* Non-commutative user op: the product of rank matrices in rank order. */
    {
        MPI_Op op;
        MPI_Op_create(matmul, 0, &op);
        int comm_flag;
        MPI_Op_commutative(op, &comm_flag);
        CHECK(comm_flag == 0, "op_commutative");
        mat m = mat_of(rank), r, expect = mat_of(0);
        for (int q = 1; q < size; q++) expect = mat_mul(expect, mat_of(q));
        MPI_Allreduce(&m, &r, 4, MPI_LONG, op, comm);
        CHECK(r.a == expect.a && r.b == expect.b && r.c == expect.c && r.d == expect.d, "%s non-commutative allreduce", label);
        for (int root = 0; root < size; root++) {
            memset(&r, 0, sizeof r);
            MPI_Reduce(&m, &r, 4, MPI_LONG, op, root, comm);
            if (rank == root) CHECK(r.a == expect.a && r.d == expect.d, "%s non-commutative reduce root %d", label, root);
        }
        mat pre = mat_of(0);
        for (int q = 1; q <= rank; q++) pre = mat_mul(pre, mat_of(q));
        MPI_Scan(&m, &r, 4, MPI_LONG, op, comm);
        CHECK(r.a == pre.a && r.b == pre.b && r.c == pre.c && r.d == pre.d, "%s scan", label);
        if (rank > 0) {
            mat ex = mat_of(0);
            for (int q = 1; q < rank; q++) ex = mat_mul(ex, mat_of(q));
            MPI_Exscan(&m, &r, 4, MPI_LONG, op, comm);
            CHECK(r.a == ex.a && r.d == ex.d, "%s exscan", label);
        } else {
            MPI_Exscan(&m, &r, 4, MPI_LONG, op, comm);
        }
        MPI_Op_free(&op);
        CHECK(op == MPI_OP_NULL, "op_free");
    }
    MPI_Barrier(comm);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    run(MPI_COMM_WORLD, "world");
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, rank < (size + 1) / 2, size - rank, &sub);
    run(sub, "split");
    MPI_Comm_free(&sub);
    /* Reduce_local and error classes. */
    int in[3] = {1, 2, 3}, io[3] = {10, 20, 30};
    MPI_Reduce_local(in, io, 3, MPI_INT, MPI_PROD);
    CHECK(io[0] == 10 && io[1] == 40 && io[2] == 90, "reduce_local");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    double dd = 1, de;
    CHECK(MPI_Allreduce(&dd, &de, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD) == MPI_ERR_OP, "BAND on double");
    CHECK(MPI_Bcast(&dd, 1, MPI_DOUBLE, size, MPI_COMM_WORLD) == MPI_ERR_ROOT, "bad root");
    CHECK(MPI_Allreduce(&dd, &de, 1, MPI_DOUBLE, MPI_OP_NULL, MPI_COMM_WORLD) == MPI_ERR_OP, "OP_NULL");
    MPI_Finalize();
    return 0;
}
