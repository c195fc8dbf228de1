/* User-defined reduction ops on derived datatypes, through every collective
 * form: the op must be called with the datatype handle the user passed and
 * a count in units of it, on buffers laid out as that datatype describes
 * (gaps and all). Four types: a 2x2 matrix of long long (a struct, dense;
 * with a non-commutative op: matrix product), MPI_Type_contiguous(9,
 * MPI_INT) (sum), a vector with a hole (vector(2,1,2,MPI_INT): ints at 0
 * and 8, extent 12; sum), and a struct {int; double} mixing basic types
 * (sum). Run under ASan, an op given a count in basic elements runs past the
 * buffers; the ops here also check the handle and that the count never
 * exceeds the call's. */
#include "util.h"
#include <stddef.h>

typedef struct { long long m[4]; } mat; /* row-major 2x2 */
typedef struct { int a; double d; } pair;

static MPI_Datatype t_mat, t_c9, t_hole, t_pair;
static int cur_count; /* the count of the call in progress */
static int bad_calls;

static void note(MPI_Datatype *dt, MPI_Datatype want, int *len) {
    if (*dt != want || *len < 0 || *len > cur_count) {
        if (bad_calls++ < 5)
            printf("FAIL rank %d: op called with datatype 0x%x (want 0x%x), len %d (call count %d)\n",
                   test_rank, (unsigned)*dt, (unsigned)want, *len, cur_count);
    }
}

/* inout = in x inout (in is the left operand) */
static void op_matmul(void *in, void *inout, int *len, MPI_Datatype *dt) {
    note(dt, t_mat, len);
    mat *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        unsigned long long x[4], *p = (unsigned long long *)a[i].m, *q = (unsigned long long *)b[i].m;
        x[0] = p[0] * q[0] + p[1] * q[2];
        x[1] = p[0] * q[1] + p[1] * q[3];
        x[2] = p[2] * q[0] + p[3] * q[2];
        x[3] = p[2] * q[1] + p[3] * q[3];
        memcpy(b[i].m, x, sizeof x);
    }
}
static void op_sum_mat(void *in, void *inout, int *len, MPI_Datatype *dt) {
    note(dt, t_mat, len);
    mat *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        for (int k = 0; k < 4; k++) b[i].m[k] += a[i].m[k];
}
static void op_sum_c9(void *in, void *inout, int *len, MPI_Datatype *dt) {
    note(dt, t_c9, len);
    int *a = in, *b = inout;
    for (int i = 0; i < *len * 9; i++) b[i] += a[i];
}
static void op_sum_hole(void *in, void *inout, int *len, MPI_Datatype *dt) {
    note(dt, t_hole, len);
    int *a = in, *b = inout; /* element i: ints at 3i and 3i+2 */
    for (int i = 0; i < *len; i++) {
        b[3 * i] += a[3 * i];
        b[3 * i + 2] += a[3 * i + 2];
    }
}
static void op_sum_pair(void *in, void *inout, int *len, MPI_Datatype *dt) {
    note(dt, t_pair, len);
    pair *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        b[i].a += a[i].a;
        b[i].d += a[i].d;
    }
}

/* One kind of element: how big it is in memory, how to fill it and fold it. */
typedef struct {
    const char *name;
    MPI_Datatype *dt;
    MPI_Op op;
    size_t ext;      /* bytes per element in memory */
    int commutative;
    MPI_User_function *fn;
} kind;

/* The value rank r contributes at element i (written over the whole extent;
 * for the holed vector the hole keeps a marker the op must not see or
 * change). */
static void put(const kind *k, void *e, long i, int r) {
    if (k->dt == &t_mat) {
        mat *m = (mat *)e;
        for (int j = 0; j < 4; j++) m->m[j] = (r * 3 + i + j * 5) % 4 + (j == 0 || j == 3);
    } else if (k->dt == &t_c9) {
        for (int j = 0; j < 9; j++) ((int *)e)[j] = r * 100 + (int)(i % 1000) * 3 + j;
    } else if (k->dt == &t_hole) {
        ((int *)e)[0] = r + (int)(i % 5000);
        ((int *)e)[1] = -7;
        ((int *)e)[2] = 2 * r - (int)(i % 333);
    } else {
        pair p;
        memset(&p, 0, sizeof p);
        p.a = r * 11 + (int)(i % 77);
        p.d = r * 0.5 + (double)(i % 91);
        memcpy(e, &p, sizeof p);
    }
}

/* Expected result at element i of folding ranks lo..hi (inclusive) in rank
 * order, into the one-element buffer `out`. */
static void expect(const kind *k, void *out, long i, int lo, int hi) {
    int len = 1, save = cur_count;
    _Alignas(16) char in[64];
    cur_count = 1;
    put(k, out, i, hi);
    for (int r = hi - 1; r >= lo; r--) {
        put(k, in, i, r);
        k->fn(in, out, &len, k->dt);
    }
    cur_count = save;
}

static int same(const kind *k, const void *a, const void *b) {
    if (k->dt == &t_hole) {
        const int *x = a, *y = b;
        return x[0] == y[0] && x[2] == y[2];
    }
    if (k->dt == &t_pair) {
        const pair *x = a, *y = b;
        return x->a == y->a && x->d == y->d;
    }
    return memcmp(a, b, k->ext) == 0;
}

/* checks element-wise that out[0..count) folds ranks lo..hi; hole markers kept */
static void verify_fold(const kind *k, const char *what, const void *out, int count, int lo, int hi, int hole_marker) {
    _Alignas(16) char want[64];
    for (long i = 0; i < count; i++) {
        expect(k, want, i, lo, hi);
        const char *got = (const char *)out + i * k->ext;
        CHECK(same(k, got, want), "%s %s count %d: element %ld wrong (ranks %d..%d)", what, k->name, count, i, lo, hi);
        if (k->dt == &t_hole)
            CHECK(((const int *)got)[1] == hole_marker, "%s %s: hole of element %ld written (%d)", what, k->name, i,
                  ((const int *)got)[1]);
    }
}

static void fill_in(const kind *k, void *buf, int count, int r) {
    for (long i = 0; i < count; i++) put(k, (char *)buf + i * k->ext, i, r);
}
static void mark(const kind *k, void *buf, int count) {
    memset(buf, 0x5a, k->ext * count);
    if (k->dt == &t_hole)
        for (long i = 0; i < count; i++) ((int *)((char *)buf + i * k->ext))[1] = 12345;
}

static void run_kind(const kind *k, int count, MPI_Comm comm) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    size_t bytes = k->ext * (size_t)count;
    char *in = malloc(bytes + 1), *out = malloc(bytes + 1);
    cur_count = count;
    MPI_Datatype dt = *k->dt;
    MPI_Request rq;
    int root = size - 1;

    /* blocking, nonblocking, persistent allreduce and reduce */
    for (int form = 0; form < 3; form++) {
        const char *fn = form == 0 ? "Allreduce" : form == 1 ? "Iallreduce" : "Allreduce_init";
        fill_in(k, in, count, rank);
        mark(k, out, count);
        if (form == 0) MPI_Allreduce(in, out, count, dt, k->op, comm);
        if (form == 1) { MPI_Iallreduce(in, out, count, dt, k->op, comm, &rq); MPI_Wait(&rq, MPI_STATUS_IGNORE); }
        if (form == 2) {
            MPI_Allreduce_init(in, out, count, dt, k->op, comm, MPI_INFO_NULL, &rq);
            for (int it = 0; it < 2; it++) { MPI_Start(&rq); MPI_Wait(&rq, MPI_STATUS_IGNORE); }
            MPI_Request_free(&rq);
        }
        verify_fold(k, fn, out, count, 0, size - 1, 12345);

        fn = form == 0 ? "Reduce" : form == 1 ? "Ireduce" : "Reduce_init";
        mark(k, out, count);
        if (form == 0) MPI_Reduce(in, out, count, dt, k->op, root, comm);
        if (form == 1) { MPI_Ireduce(in, out, count, dt, k->op, root, comm, &rq); MPI_Wait(&rq, MPI_STATUS_IGNORE); }
        if (form == 2) {
            MPI_Reduce_init(in, out, count, dt, k->op, root, comm, MPI_INFO_NULL, &rq);
            MPI_Start(&rq);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            MPI_Request_free(&rq);
        }
        if (rank == root) verify_fold(k, fn, out, count, 0, size - 1, 12345);

        fn = form == 0 ? "Scan" : form == 1 ? "Iscan" : "Scan_init";
        mark(k, out, count);
        if (form == 0) MPI_Scan(in, out, count, dt, k->op, comm);
        if (form == 1) { MPI_Iscan(in, out, count, dt, k->op, comm, &rq); MPI_Wait(&rq, MPI_STATUS_IGNORE); }
        if (form == 2) {
            MPI_Scan_init(in, out, count, dt, k->op, comm, MPI_INFO_NULL, &rq);
            MPI_Start(&rq);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            MPI_Request_free(&rq);
        }
        verify_fold(k, fn, out, count, 0, rank, 12345);

        fn = form == 0 ? "Exscan" : form == 1 ? "Iexscan" : "Exscan_init";
        mark(k, out, count);
        if (form == 0) MPI_Exscan(in, out, count, dt, k->op, comm);
        if (form == 1) { MPI_Iexscan(in, out, count, dt, k->op, comm, &rq); MPI_Wait(&rq, MPI_STATUS_IGNORE); }
        if (form == 2) {
            MPI_Exscan_init(in, out, count, dt, k->op, comm, MPI_INFO_NULL, &rq);
            MPI_Start(&rq);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            MPI_Request_free(&rq);
        }
        if (rank > 0) verify_fold(k, fn, out, count, 0, rank - 1, 12345);
    }

    /* in place */
    fill_in(k, out, count, rank);
    MPI_Allreduce(MPI_IN_PLACE, out, count, dt, k->op, comm);
    verify_fold(k, "Allreduce in place", out, count, 0, size - 1, -7);

    /* reduce_scatter_block and reduce_scatter: count elements per rank (block) */
    if (count <= 3000) {
        char *big = malloc(bytes * size + 1);
        for (int form = 0; form < 3; form++) {
            const char *fn = form == 0 ? "Reduce_scatter_block" : form == 1 ? "Ireduce_scatter_block" : "Reduce_scatter_block_init";
            for (long i = 0; i < (long)count * size; i++) put(k, big + i * k->ext, i, rank);
            mark(k, out, count);
            cur_count = count * size;
            if (form == 0) MPI_Reduce_scatter_block(big, out, count, dt, k->op, comm);
            if (form == 1) { MPI_Ireduce_scatter_block(big, out, count, dt, k->op, comm, &rq); MPI_Wait(&rq, MPI_STATUS_IGNORE); }
            if (form == 2) {
                MPI_Reduce_scatter_block_init(big, out, count, dt, k->op, comm, MPI_INFO_NULL, &rq);
                MPI_Start(&rq);
                MPI_Wait(&rq, MPI_STATUS_IGNORE);
                MPI_Request_free(&rq);
            }
            for (long i = 0; i < count; i++) {
                _Alignas(16) char want[64];
                expect(k, want, rank * (long)count + i, 0, size - 1);
                CHECK(same(k, out + i * k->ext, want), "%s %s element %ld", fn, k->name, i);
            }
            /* reduce_scatter with counts r+1 (the last rank gets the rest) */
            int *counts = malloc(sizeof(int) * size);
            int total = 0;
            for (int r = 0; r < size; r++) { counts[r] = r + 1 < count ? r + 1 : count; total += counts[r]; }
            int mine = 0;
            for (int r = 0; r < rank; r++) mine += counts[r];
            fn = form == 0 ? "Reduce_scatter" : form == 1 ? "Ireduce_scatter" : "Reduce_scatter_init";
            mark(k, out, count);
            if (form == 0) MPI_Reduce_scatter(big, out, counts, dt, k->op, comm);
            if (form == 1) { MPI_Ireduce_scatter(big, out, counts, dt, k->op, comm, &rq); MPI_Wait(&rq, MPI_STATUS_IGNORE); }
            if (form == 2) {
                MPI_Reduce_scatter_init(big, out, counts, dt, k->op, comm, MPI_INFO_NULL, &rq);
                MPI_Start(&rq);
                MPI_Wait(&rq, MPI_STATUS_IGNORE);
                MPI_Request_free(&rq);
            }
            for (long i = 0; i < counts[rank]; i++) {
                _Alignas(16) char want[64];
                expect(k, want, mine + i, 0, size - 1);
                CHECK(same(k, out + i * k->ext, want), "%s %s element %ld", fn, k->name, i);
            }
            free(counts);
            (void)total;
            cur_count = count;
        }
        free(big);
    }

    /* MPI_Reduce_local: in folded into inout as rank 1 then rank 0 */
    fill_in(k, in, count, 0);
    fill_in(k, out, count, 1);
    MPI_Reduce_local(in, out, count, dt, k->op);
    verify_fold(k, "Reduce_local", out, count, 0, 1, -7);

    free(in);
    free(out);
}

static void run_inter(const kind *k, int count) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) return;
    int half = size / 2, low = rank < half;
    MPI_Comm local, ic;
    MPI_Comm_split(MPI_COMM_WORLD, low, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low ? half : 0, 23, &ic);
    int lrank;
    MPI_Comm_rank(local, &lrank);
    int rsize;
    MPI_Comm_remote_size(ic, &rsize);
    size_t bytes = k->ext * (size_t)count;
    char *in = malloc(bytes), *out = malloc(bytes);
    cur_count = count;
    fill_in(k, in, count, lrank);
    mark(k, out, count);
    MPI_Allreduce(in, out, count, *k->dt, k->op, ic);
    verify_fold(k, "intercomm Allreduce", out, count, 0, rsize - 1, 12345);
    MPI_Request rq;
    mark(k, out, count);
    MPI_Iallreduce(in, out, count, *k->dt, k->op, ic, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    verify_fold(k, "intercomm Iallreduce", out, count, 0, rsize - 1, 12345);
    /* reduce to rank 0 of the low group */
    mark(k, out, count);
    int root = low ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    MPI_Reduce(in, out, count, *k->dt, k->op, root, ic);
    if (root == MPI_ROOT) verify_fold(k, "intercomm Reduce", out, count, 0, rsize - 1, 12345);
    MPI_Comm_free(&ic);
    MPI_Comm_free(&local);
    free(in);
    free(out);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;

    int bl[4] = {4, 1, 1, 1};
    MPI_Aint d[2] = {0, 0};
    MPI_Datatype ty[2] = {MPI_LONG_LONG, MPI_INT};
    MPI_Type_create_struct(1, bl, d, ty, &t_mat);
    MPI_Type_commit(&t_mat);
    MPI_Type_contiguous(9, MPI_INT, &t_c9);
    MPI_Type_commit(&t_c9);
    MPI_Datatype v;
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 12, &t_hole);
    MPI_Type_free(&v);
    MPI_Type_commit(&t_hole);
    int pbl[2] = {1, 1};
    MPI_Aint pd[2] = {offsetof(pair, a), offsetof(pair, d)};
    MPI_Datatype pt[2] = {MPI_INT, MPI_DOUBLE}, p0;
    MPI_Type_create_struct(2, pbl, pd, pt, &p0);
    MPI_Type_create_resized(p0, 0, sizeof(pair), &t_pair);
    MPI_Type_free(&p0);
    MPI_Type_commit(&t_pair);

    kind kinds[5] = {
        {"matrix product", &t_mat, 0, sizeof(mat), 0, op_matmul},
        {"matrix sum", &t_mat, 0, sizeof(mat), 1, op_sum_mat},
        {"contiguous(9)", &t_c9, 0, 9 * sizeof(int), 1, op_sum_c9},
        {"vector with a hole", &t_hole, 0, 12, 1, op_sum_hole},
        {"struct {int; double}", &t_pair, 0, sizeof(pair), 1, op_sum_pair},
    };
    for (int i = 0; i < 5; i++) MPI_Op_create(kinds[i].fn, kinds[i].commutative, &kinds[i].op);

    /* 1 and 7 go through the shared-memory area, 3000 (96-108 KiB for the
     * dense types) the area or messages, 20000 the message algorithms. */
    int counts[4] = {1, 7, 3000, 20000};
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < 5; i++) {
            run_kind(&kinds[i], counts[c], MPI_COMM_WORLD);
            CHECK(bad_calls == 0, "%s count %d: the op was called with the wrong datatype or count", kinds[i].name, counts[c]);
        }
    /* a communicator not shaped like world (reversed ranks) */
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    for (int i = 0; i < 5; i++) run_kind(&kinds[i], 7, rev);
    MPI_Comm_free(&rev);
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 5; i++) run_inter(&kinds[i], counts[c]);
    CHECK(bad_calls == 0, "the op was called with the wrong datatype or count");

    for (int i = 0; i < 5; i++) MPI_Op_free(&kinds[i].op);
    MPI_Type_free(&t_mat);
    MPI_Type_free(&t_c9);
    MPI_Type_free(&t_hole);
    MPI_Type_free(&t_pair);
    if (rank == 0) printf("coll_userop_types: ok\n");
    MPI_Finalize();
    return 0;
}
