/* A user reduction op that calls MPI while the library runs it inside a
 * collective's schedule: the inner call must fail with MPI_ERR_OTHER (under
 * MPI_THREAD_MULTIPLE as well, where it used to wait for the lock its own
 * thread held), and the reduction must still be right. TEST_THREAD_LEVEL:
 * "multiple" or anything else (single), the thread level asked for. */
#include "util.h"

static int inner_rc = -1, calls = 0;

static void sum_and_call(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++) b[i] += a[i];
    int r;
    int rc = MPI_Comm_rank(MPI_COMM_WORLD, &r);
    if (calls++ == 0) inner_rc = rc;
}

int main(int argc, char **argv) {
    const char *lvl = getenv("TEST_THREAD_LEVEL");
    int want = lvl && strcmp(lvl, "multiple") == 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
    int got, rank, size;
    MPI_Init_thread(&argc, &argv, want, &got);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    CHECK(got == want, "thread level %d, asked %d", got, want);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Op op;
    MPI_Op_create(sum_and_call, 1, &op);
    /* 200 KB: above the shared area (128 KiB), so the op runs inside a schedule. */
    const int n = 50000;
    int *a = malloc(sizeof(int) * n), *b = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) a[i] = rank + i;
    int rc = MPI_Allreduce(a, b, n, MPI_INT, op, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "allreduce rc %d", rc);
    for (int i = 0; i < n; i++)
        CHECK(b[i] == size * (size - 1) / 2 + size * i, "allreduce [%d]=%d", i, b[i]);
    if (size > 1) {
        int cls = -1;
        MPI_Error_class(inner_rc, &cls);
        CHECK(calls > 0 && cls == MPI_ERR_OTHER, "MPI call inside the op: %d calls, rc %d class %d", calls, inner_rc, cls);
    }
    /* The library is still usable afterwards. */
    int one = 1, all = 0;
    CHECK(MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS && all == size, "after: %d", all);
    MPI_Op_free(&op);
    free(a);
    free(b);
    MPI_Finalize();
    if (rank == 0) printf("op_reenter ok\n");
    return 0;
}
