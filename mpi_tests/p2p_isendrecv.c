/* MPI_Isendrecv and MPI_Isendrecv_replace (and their _c forms): values,
 * statuses (source, tag, count, wildcards, MPI_PROC_NULL), a derived type
 * replaced in place, rendezvous sizes, completion by Test, Waitall beside
 * other requests, and truncation reported by the request. */
#include "util.h"
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Request rq;
    MPI_Status st;
    int cnt;

    /* 1. Ring: send my rank right, receive left's. */
    int sv = rank * 7 + 1, rv = -1;
    MPI_Isendrecv(&sv, 1, MPI_INT, right, 11, &rv, 1, MPI_INT, left, 11, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(rq == MPI_REQUEST_NULL, "request not freed by MPI_Wait");
    CHECK(rv == left * 7 + 1 && st.MPI_SOURCE == left && st.MPI_TAG == 11 && cnt == 1,
          "ring: got %d from %d tag %d count %d", rv, st.MPI_SOURCE, st.MPI_TAG, cnt);

    /* 2. Wildcards, completed by MPI_Test. */
    double sd[3] = {rank, rank + 0.5, rank + 0.25}, rd[3] = {0};
    MPI_Isendrecv(sd, 3, MPI_DOUBLE, right, 20 + rank, rd, 3, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                  MPI_COMM_WORLD, &rq);
    int flag = 0;
    while (!flag) MPI_Test(&rq, &flag, &st);
    MPI_Get_count(&st, MPI_DOUBLE, &cnt);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 20 + left && cnt == 3 && rd[0] == left && rd[2] == left + 0.25,
          "wildcards: source %d tag %d count %d value %g", st.MPI_SOURCE, st.MPI_TAG, cnt, rd[0]);

    /* 3. Replace with a vector type: every other int of 8 goes right. */
    MPI_Datatype vec;
    MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int buf[8];
    for (int i = 0; i < 8; i++) buf[i] = rank * 100 + i;
    MPI_Isendrecv_replace(buf, 1, vec, right, 3, left, 3, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, &st);
    for (int i = 0; i < 8; i++) {
        int want = (i % 2 == 0) ? left * 100 + i : rank * 100 + i;
        CHECK(buf[i] == want, "replace: buf[%d]=%d, expected %d", i, buf[i], want);
    }
    MPI_Get_count(&st, vec, &cnt);
    CHECK(cnt == 1 && st.MPI_SOURCE == left, "replace: count %d source %d", cnt, st.MPI_SOURCE);
    MPI_Type_free(&vec);

    /* 4. Rendezvous sizes (4 MiB each way), replace and not, beside
     * other requests in one MPI_Waitall. */
    size_t n = 1 << 20;
    int *a = malloc(n * sizeof(int)), *b = malloc(n * sizeof(int)), *c = malloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) {
        a[i] = (int)(rank * 1000003 + i);
        c[i] = (int)(rank * 7 + i);
        b[i] = -1;
    }
    MPI_Request rs[3];
    int x = rank, y = -1;
    MPI_Isendrecv(a, (int)n, MPI_INT, right, 5, b, (int)n, MPI_INT, left, 5, MPI_COMM_WORLD, &rs[0]);
    MPI_Isendrecv_replace(c, (int)n, MPI_INT, left, 6, right, 6, MPI_COMM_WORLD, &rs[1]);
    MPI_Irecv(&y, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &rs[2]);
    MPI_Send(&x, 1, MPI_INT, right, 7, MPI_COMM_WORLD);
    MPI_Status sts[3];
    MPI_Waitall(3, rs, sts);
    int bad = 0;
    for (size_t i = 0; i < n && !bad; i++) {
        if (b[i] != (int)(left * 1000003 + i)) bad = 1;
        if (c[i] != (int)(right * 7 + i)) bad = 2;
    }
    CHECK(!bad, "large: mismatch %d", bad);
    CHECK(y == left && sts[0].MPI_SOURCE == left && sts[1].MPI_SOURCE == right && sts[1].MPI_TAG == 6,
          "large: statuses %d %d %d", sts[0].MPI_SOURCE, sts[1].MPI_SOURCE, sts[1].MPI_TAG);
    free(a);
    free(b);
    free(c);

    /* 5. MPI_PROC_NULL on both sides: at once, the null status. */
    MPI_Isendrecv(&sv, 1, MPI_INT, MPI_PROC_NULL, 1, &rv, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && cnt == 0,
          "proc_null: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, cnt);

    /* 6. The _c forms. */
    long long l = rank, lr = -1;
    MPI_Isendrecv_c(&l, 1, MPI_LONG_LONG, right, 8, &lr, 1, MPI_LONG_LONG, left, 8, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECK(lr == left, "_c: %lld", lr);
    l = rank * 3;
    MPI_Isendrecv_replace_c(&l, 1, MPI_LONG_LONG, right, 9, left, 9, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECK(l == left * 3, "replace_c: %lld", l);

    /* 7. Truncation: the request fails with MPI_ERR_TRUNCATE. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int two[2] = {1, 2}, one = 0;
    MPI_Isendrecv(two, 2, MPI_INT, right, 12, &one, 1, MPI_INT, left, 12, MPI_COMM_WORLD, &rq);
    int rc = MPI_Wait(&rq, &st), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "truncation: class %d", cls);
    /* A bad rank fails at the call. */
    rc = MPI_Isendrecv(&sv, 1, MPI_INT, size, 1, &rv, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &rq);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RANK, "bad dest: class %d", cls);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("p2p_isendrecv: OK\n");
    MPI_Finalize();
    return 0;
}
