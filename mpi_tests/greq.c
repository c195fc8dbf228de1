/* Generalized requests: query/free/cancel callbacks called as MPI-4.0 13.2
 * says (query when the request completes, its status and error reported by
 * Wait, Test, Waitall and MPI_Request_get_status; free when the request is
 * released, also after an early MPI_Request_free; cancel with the complete
 * flag), a request completed by another thread while the main one waits,
 * and bad use (completing twice) as a clear error. */
#include "util.h"
#include <pthread.h>
#include <unistd.h>

static int queries, frees, cancels, last_complete = -1;
static int query_error = MPI_SUCCESS;
static int cancelled_flag;

static int query_fn(void *extra, MPI_Status *st) {
    queries++;
    st->MPI_SOURCE = *(int *)extra;
    st->MPI_TAG = 7;
    MPI_Status_set_elements(st, MPI_INT, 5);
    MPI_Status_set_cancelled(st, cancelled_flag);
    return query_error;
}

static int free_fn(void *extra) {
    (void)extra;
    frees++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete) {
    (void)extra;
    cancels++;
    last_complete = complete;
    cancelled_flag = 1;
    return MPI_SUCCESS;
}

static void *completer(void *arg) {
    usleep(50000);
    MPI_Grequest_complete(*(MPI_Request *)arg);
    return NULL;
}

int main(int argc, char **argv) {
    int rank, size, provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    int who = 42, flag, cnt;
    MPI_Request r;
    MPI_Status st;

    /* 1. Pending until completed; then queried once, freed when waited. */
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &who, &r);
    MPI_Test(&r, &flag, &st);
    CHECK(!flag && queries == 0, "test before complete: flag %d queries %d", flag, queries);
    MPI_Request_get_status(r, &flag, &st);
    CHECK(!flag, "get_status before complete");
    MPI_Grequest_complete(r);
    CHECK(queries == 1, "query ran %d times at complete", queries);
    MPI_Request_get_status(r, &flag, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(flag && st.MPI_SOURCE == 42 && st.MPI_TAG == 7 && cnt == 5 && frees == 0,
          "get_status: flag %d source %d tag %d count %d frees %d", flag, st.MPI_SOURCE, st.MPI_TAG, cnt, frees);
    MPI_Wait(&r, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(r == MPI_REQUEST_NULL && st.MPI_SOURCE == 42 && cnt == 5 && frees == 1,
          "wait: source %d count %d frees %d", st.MPI_SOURCE, cnt, frees);

    /* 2. Cancelled before it completes: cancel_fn sees complete=0, the
     * query (at completion) reports it cancelled. */
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &who, &r);
    MPI_Cancel(&r);
    CHECK(cancels == 1 && last_complete == 0, "cancel: %d calls, complete=%d", cancels, last_complete);
    MPI_Grequest_complete(r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag && frees == 2, "cancelled flag %d frees %d", flag, frees);
    /* Cancelled after it completed: complete=1, queried again. */
    cancelled_flag = 0;
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &who, &r);
    MPI_Grequest_complete(r);
    int q0 = queries;
    MPI_Cancel(&r);
    CHECK(last_complete == 1 && queries == q0 + 1, "cancel of a complete request: complete=%d queries %d",
          last_complete, queries - q0);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag, "status after cancel of a complete request");
    cancelled_flag = 0;

    /* 3. MPI_Request_free before completion: free_fn runs at completion. */
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &who, &r);
    MPI_Request keep = r;
    MPI_Request_free(&r);
    CHECK(r == MPI_REQUEST_NULL && frees == 3, "request_free before complete: frees %d", frees);
    MPI_Grequest_complete(keep);
    CHECK(frees == 4, "free_fn after completing a freed request: frees %d", frees);

    /* 4. In MPI_Waitall beside point-to-point requests, completed by another
     * thread while this one waits. */
    MPI_Request rs[3];
    int sv = rank, rv = -1, right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &who, &rs[0]);
    MPI_Irecv(&rv, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &rs[1]);
    MPI_Isend(&sv, 1, MPI_INT, right, 1, MPI_COMM_WORLD, &rs[2]);
    pthread_t t;
    MPI_Request g = rs[0];
    pthread_create(&t, NULL, completer, &g);
    MPI_Status sts[3];
    MPI_Waitall(3, rs, sts);
    pthread_join(t, NULL);
    CHECK(rv == left && sts[0].MPI_SOURCE == 42 && frees == 5, "waitall: rv %d source %d frees %d", rv,
          sts[0].MPI_SOURCE, frees);

    /* 5. The query's error is the request's. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    query_error = MPI_ERR_OTHER;
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &who, &r);
    MPI_Grequest_complete(r);
    keep = r;
    int rc = MPI_Wait(&r, &st), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OTHER, "query error: class %d", cls);
    query_error = MPI_SUCCESS;
    /* Completing twice, and completing a request that is not generalized. */
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &who, &r);
    MPI_Grequest_complete(r);
    rc = MPI_Grequest_complete(r);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_REQUEST, "completed twice: class %d", cls);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Irecv(&rv, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &r);
    rc = MPI_Grequest_complete(r);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_REQUEST, "not a generalized request: class %d", cls);
    MPI_Wait(&r, MPI_STATUS_IGNORE);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("greq: OK\n");
    MPI_Finalize();
    return 0;
}
