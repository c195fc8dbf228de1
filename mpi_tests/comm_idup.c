/* MPI_Comm_idup / MPI_Comm_idup_with_info: the call returns before the other
 * ranks have joined (a synchronous send that needs the caller's receive would
 * deadlock otherwise), several may be outstanding on one communicator and be
 * waited for in any order, attributes are copied, info is set, and traffic on
 * the duplicates never matches traffic on the parent or on each other. */
#include "util.h"

static int copies;
static int copy_fn(MPI_Comm c, int kv, void *extra, void *in, void *out, int *flag) {
    (void)c; (void)kv; (void)extra;
    copies++;
    *(void **)out = (char *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;

    int kv;
    static char base[16];
    MPI_Comm_create_keyval(copy_fn, MPI_COMM_NULL_DELETE_FN, &kv, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, kv, base);

    /* Nonblocking: rank 0 starts the dup, then receives a synchronous send
     * that rank 1 makes before it starts its own dup. */
    MPI_Comm d1 = MPI_COMM_NULL;
    MPI_Request r1;
    if (size > 1 && rank == 1) {
        int v = 42;
        MPI_Ssend(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
    }
    MPI_Comm_idup(MPI_COMM_WORLD, &d1, &r1);
    if (size > 1 && rank == 0) {
        int v = 0;
        MPI_Recv(&v, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(v == 42, "got %d", v);
    }
    MPI_Wait(&r1, MPI_STATUS_IGNORE);
    CHECK(r1 == MPI_REQUEST_NULL, "request not freed");
    CHECK(d1 != MPI_COMM_NULL && d1 != MPI_COMM_WORLD, "d1=%d", (int)d1);
    int cmp;
    MPI_Comm_compare(d1, MPI_COMM_WORLD, &cmp);
    CHECK(cmp == MPI_CONGRUENT, "compare %d", cmp);
    void *got;
    int flag;
    MPI_Comm_get_attr(d1, kv, &got, &flag);
    CHECK(flag && got == base + 1, "attribute not copied (flag %d)", flag);
    CHECK(copies == 1, "copy callback ran %d times", copies);

    /* Three outstanding on world and one on a split, waited in reverse order,
     * with a nonblocking allreduce in flight between them. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "oxmpi_test_key", "yes");
    MPI_Comm d[4];
    MPI_Request r[5];
    int sum_in = rank + 1, sum_out = 0;
    MPI_Comm_idup(MPI_COMM_WORLD, &d[0], &r[0]);
    MPI_Comm_idup(half, &d[1], &r[1]);
    MPI_Iallreduce(&sum_in, &sum_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[2]);
    MPI_Comm_idup_with_info(MPI_COMM_WORLD, info, &d[2], &r[3]);
    MPI_Comm_idup(d1, &d[3], &r[4]);
    for (int i = 4; i >= 0; i--) MPI_Wait(&r[i], MPI_STATUS_IGNORE);
    CHECK(sum_out == size * (size + 1) / 2, "iallreduce %d", sum_out);
    MPI_Info_free(&info);

    int hs, hr, ds, dr;
    MPI_Comm_size(half, &hs);
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(d[1], &ds);
    MPI_Comm_rank(d[1], &dr);
    CHECK(ds == hs && dr == hr, "split dup size %d/%d rank %d/%d", ds, hs, dr, hr);
    MPI_Info used;
    char val[16] = "";
    MPI_Comm_get_info(d[2], &used);
    MPI_Info_get(used, "oxmpi_test_key", sizeof val - 1, val, &flag);
    CHECK(flag && strcmp(val, "yes") == 0, "info flag %d value '%s'", flag, val);
    MPI_Info_free(&used);

    /* Isolation: the same (source, tag) on every communicator; each receive
     * gets the value sent on its own communicator. */
    MPI_Comm all[6] = {MPI_COMM_WORLD, d1, d[0], d[2], d[3], MPI_COMM_NULL};
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Request sr[5], rr[5];
    int sv[5], rv[5];
    for (int i = 4; i >= 0; i--) {
        MPI_Irecv(&rv[i], 1, MPI_INT, left, 3, all[i], &rr[i]);
    }
    for (int i = 0; i < 5; i++) {
        sv[i] = rank * 100 + i;
        MPI_Isend(&sv[i], 1, MPI_INT, right, 3, all[i], &sr[i]);
    }
    MPI_Waitall(5, sr, MPI_STATUSES_IGNORE);
    MPI_Waitall(5, rr, MPI_STATUSES_IGNORE);
    for (int i = 0; i < 5; i++) CHECK(rv[i] == left * 100 + i, "comm %d got %d", i, rv[i]);

    /* Collective on the split duplicate sums the split's ranks only. */
    int one = rank, tot = 0, expect = 0;
    MPI_Allreduce(&one, &tot, 1, MPI_INT, MPI_SUM, d[1]);
    for (int i = rank % 2; i < size; i += 2) expect += i;
    CHECK(tot == expect, "split dup allreduce %d expected %d", tot, expect);

    /* Many create/free cycles keep working (ids are reused, never shared). */
    for (int it = 0; it < 50; it++) {
        MPI_Comm t;
        MPI_Request q;
        MPI_Comm_idup(it % 2 ? half : MPI_COMM_WORLD, &t, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        int x = 1, y = 0;
        MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, t);
        CHECK(y == (it % 2 ? hs : size), "iteration %d sum %d", it, y);
        MPI_Comm_free(&t);
    }

    for (int i = 0; i < 4; i++) MPI_Comm_free(&d[i]);
    MPI_Comm_free(&d1);
    MPI_Comm_free(&half);
    MPI_Comm_free_keyval(&kv);
    MPI_Finalize();
    if (rank == 0) printf("comm_idup ok\n");
    return 0;
}
