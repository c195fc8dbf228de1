/* Bad arguments give the right error class through MPI_ERRORS_RETURN, a user
 * error handler is called with the communicator and the code, and the
 * error strings are right. */
#include "util.h"

static int calls = 0, last_code = 0;
static MPI_Comm last_comm;
static void handler(MPI_Comm *c, int *code, ...) {
    calls++;
    last_code = *code;
    last_comm = *c;
}

#define EXPECT(call, cls)                                                           \
    do {                                                                            \
        int rc_ = (call), c_;                                                       \
        MPI_Error_class(rc_, &c_);                                                  \
        CHECK(c_ == (cls), "%s returned class %d, expected %s=%d", #call, c_, #cls, cls); \
    } while (0)

int main(int argc, char **argv) {
    int rank, size, v = 0, len;
    char s[MPI_MAX_ERROR_STRING];
    MPI_Request rq;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "default errhandler 0x%x", eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    EXPECT(MPI_Send(&v, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT(MPI_Send(&v, 1, MPI_INT, -7, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT(MPI_Recv(&v, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD, &st), MPI_ERR_RANK);
    EXPECT(MPI_Send(&v, 1, MPI_INT, 0, -1, MPI_COMM_WORLD), MPI_ERR_TAG);
    EXPECT(MPI_Isend(&v, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, &rq), MPI_ERR_TAG);
    EXPECT(MPI_Recv(&v, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, &st), MPI_ERR_TAG);
    EXPECT(MPI_Send(&v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    /* negative counts of every rooted and reducing collective, also where
     * the node's shared-memory path would take the call */
    int cv[4] = {0}, cw[4] = {0};
    EXPECT(MPI_Allreduce(cv, cw, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Reduce(cv, cw, -1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Bcast(cv, -1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Reduce_scatter_block(cv, cw, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Allgather(cv, -1, MPI_INT, cw, -1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Alltoall(cv, -1, MPI_INT, cw, -1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Scan(cv, cw, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);
    /* NULL output arrays where entries are to be written. */
    EXPECT(MPI_Dims_create(4, 2, NULL), MPI_ERR_ARG);
    {
        MPI_Datatype vt;
        MPI_Type_vector(2, 1, 3, MPI_INT, &vt);
        MPI_Aint aints[1];
        MPI_Datatype types[1];
        EXPECT(MPI_Type_get_contents(vt, 3, 0, 1, NULL, aints, types), MPI_ERR_ARG);
        MPI_Type_free(&vt);
    }
    /* a send buffer that is the receive buffer, without MPI_IN_PLACE */
    EXPECT(MPI_Allreduce(cv, cv, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT(MPI_Reduce_scatter_block(cv, cv, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT(MPI_Scan(cv, cv, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT(MPI_Iallreduce(cv, cv, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq), MPI_ERR_BUFFER);
    /* at the root only: elsewhere the receive buffer is not used */
    EXPECT(MPI_Reduce(cv, cv, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD), rank == 0 ? MPI_ERR_BUFFER : MPI_SUCCESS);
    if (rank == 0) EXPECT(MPI_Reduce(cv, cw, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT(MPI_Send(&v, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Send(&v, 1, (MPI_Datatype)MPI_COMM_WORLD, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Send(&v, 1, (MPI_Datatype)0x8c00abcd, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Send(NULL, 3, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT(MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Send(&v, 1, MPI_INT, 0, 0, (MPI_Comm)MPI_INT), MPI_ERR_COMM);
    EXPECT(MPI_Comm_rank((MPI_Comm)0x84001234, &v), MPI_ERR_COMM);
    EXPECT(MPI_Comm_size(MPI_COMM_WORLD, NULL), MPI_ERR_ARG);
    rq = (MPI_Request)0xac00ffff;
    EXPECT(MPI_Wait(&rq, &st), MPI_ERR_REQUEST);
    rq = (MPI_Request)MPI_COMM_WORLD;
    EXPECT(MPI_Wait(&rq, &st), MPI_ERR_REQUEST);
    rq = MPI_REQUEST_NULL;
    EXPECT(MPI_Request_free(&rq), MPI_ERR_REQUEST);
    EXPECT(MPI_Comm_set_errhandler(MPI_COMM_WORLD, (MPI_Errhandler)MPI_INT), MPI_ERR_ARG);
    EXPECT(MPI_Init(&argc, &argv), MPI_ERR_OTHER);
    int kv, flag;
    EXPECT(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, &kv, &flag), MPI_ERR_KEYVAL);

    /* Wait on a request with an error: MPI_Waitall gives MPI_ERR_IN_STATUS and per-status errors. */
    {
        int big[10] = {0}, small[2];
        MPI_Request r[2];
        MPI_Status ss[2];
        ss[0].MPI_ERROR = ss[1].MPI_ERROR = -7; /* both must be written */
        MPI_Irecv(small, 2, MPI_INT, rank, 3, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(big, 10, MPI_INT, rank, 3, MPI_COMM_WORLD, &r[1]);
        int rc = MPI_Waitall(2, r, ss);
        CHECK(rc == MPI_ERR_IN_STATUS, "waitall truncation gave %d", rc);
        CHECK(ss[0].MPI_ERROR == MPI_ERR_TRUNCATE && ss[1].MPI_ERROR == MPI_SUCCESS, "per-status errors %d %d",
              ss[0].MPI_ERROR, ss[1].MPI_ERROR);
        MPI_Isend(big, 10, MPI_INT, rank, 4, MPI_COMM_WORLD, &r[1]);
        EXPECT(MPI_Recv(small, 2, MPI_INT, rank, 4, MPI_COMM_WORLD, &st), MPI_ERR_TRUNCATE);
        MPI_Wait(&r[1], MPI_STATUS_IGNORE);
    }

    /* Error strings and classes. */
    MPI_Error_string(MPI_ERR_TRUNCATE, s, &len);
    CHECK(strstr(s, "truncat") != NULL && len == (int)strlen(s), "error string '%s'", s);
    MPI_Error_string(MPI_SUCCESS, s, &len);
    CHECK(len > 0, "success string");
    EXPECT(MPI_Error_string(12345, s, &len), MPI_ERR_ARG);
    int cls;
    MPI_Error_class(MPI_ERR_RANK, &cls);
    CHECK(cls == MPI_ERR_RANK, "class of class");

    /* A user error handler sees the communicator and the code; the call returns the code. */
    MPI_Errhandler mine;
    MPI_Comm_create_errhandler(handler, &mine);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, mine);
    int rc = MPI_Send(&v, 1, MPI_INT, 5, 0, MPI_COMM_SELF);
    CHECK(calls == 1 && last_code == MPI_ERR_RANK && last_comm == MPI_COMM_SELF && rc == MPI_ERR_RANK,
          "user handler: calls %d code %d rc %d", calls, last_code, rc);
    MPI_Comm_call_errhandler(MPI_COMM_SELF, MPI_ERR_OTHER);
    CHECK(calls == 2 && last_code == MPI_ERR_OTHER, "call_errhandler: calls %d code %d", calls, last_code);
    MPI_Comm_get_errhandler(MPI_COMM_SELF, &eh);
    CHECK(eh == mine, "get_errhandler");
    MPI_Errhandler_free(&mine);
    CHECK(mine == MPI_ERRHANDLER_NULL, "free nulls");
    /* The communicator still uses it after the free. */
    MPI_Send(&v, 1, MPI_INT, 9, 0, MPI_COMM_SELF);
    CHECK(calls == 3, "handler still attached after free");
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* Attributes and thread queries. */
    int *tagub;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tagub, &flag);
    CHECK(flag && *tagub >= 32767, "tag_ub");
    int *us;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &us, &flag);
    CHECK(flag && *us >= size, "universe size");
    int lvl;
    MPI_Query_thread(&lvl);
    CHECK(lvl == MPI_THREAD_SINGLE, "query_thread %d", lvl);
    MPI_Is_thread_main(&flag);
    CHECK(flag, "is_thread_main");
    double t0 = MPI_Wtime(), tk = MPI_Wtick();
    CHECK(tk > 0 && tk < 0.01 && MPI_Wtime() >= t0, "wtime/wtick");
    MPI_Finalize();
    return 0;
}
