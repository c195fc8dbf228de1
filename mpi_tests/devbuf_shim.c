/* A profiling-layer shim for the test programs: loaded with LD_PRELOAD
 * into the ranks, it moves every buffer that the wrapped point-to-point
 * and collective calls are given into device memory (a device copy of the
 * buffer's whole span, copied back after the call or when its request
 * completes), so the existing test programs also run with device buffers,
 * against the test double of the CUDA driver or a real GPU. Programs that
 * check errors from aliased buffers or inspect buffers of active requests
 * are not run with it.
 *
 * Nonblocking calls keep their device copies with the request; the
 * Wait/Test families finish every tracked request that they complete
 * (one that became MPI_REQUEST_NULL). Persistent requests and
 * intercommunicators are passed through as they are. */
#include "gpu_util.h"
#include <pthread.h>

struct entry {
    void *dev, *host;
    size_t span;
    int back;
};
struct tracked {
    MPI_Request req;
    struct entry e[2];
    int n;
    struct tracked *next;
};
static struct tracked *reqs;
static int ready = -1;

static __thread int ctx_here;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Whether device buffers are made; the context is made current on every
 * thread that calls in (as the CUDA runtime does). */
static int on(void) {
    pthread_mutex_lock(&lock);
    if (ready < 0) ready = gpu_open();
    pthread_mutex_unlock(&lock);
    if (ready && !ctx_here) {
        cu.set_current(gpu_ctx);
        ctx_here = 1;
    }
    return ready;
}

/* The span of `count` elements of `dt` at `buf`: (start, bytes). */
static size_t span_of(const void *buf, long count, MPI_Datatype dt, char **start) {
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_get_extent(dt, &lb, &ext);
    MPI_Type_get_true_extent(dt, &tlb, &text);
    *start = (char *)buf + tlb;
    return count > 0 ? (size_t)((count - 1) * ext + text) : 0;
}

/* A device copy of the buffer (its current contents); e records it. */
static void *to_device(const void *buf, long count, MPI_Datatype dt, int back, struct entry *e) {
    e->dev = NULL;
    if (!on() || buf == NULL || buf == MPI_IN_PLACE || buf == MPI_BOTTOM || count <= 0 || dt == MPI_DATATYPE_NULL)
        return (void *)buf;
    char *start;
    size_t span = span_of(buf, count, dt, &start);
    if (span == 0) return (void *)buf;
    e->dev = dcopy(start, span);
    e->host = start;
    e->span = span;
    e->back = back;
    return (char *)e->dev - (start - (char *)buf);
}

static void finish(struct entry *e) {
    if (!e->dev) return;
    if (e->back) from_dev(e->host, e->dev, e->span);
    dfree(e->dev);
    e->dev = NULL;
}

static void track(MPI_Request r, struct entry *a, struct entry *b) {
    struct tracked *t = calloc(1, sizeof *t);
    t->req = r;
    t->e[0] = *a;
    if (b) t->e[1] = *b;
    t->n = b ? 2 : 1;
    pthread_mutex_lock(&lock);
    t->next = reqs;
    reqs = t;
    pthread_mutex_unlock(&lock);
}

/* Finishes the tracked requests among `before` that are now `after` == NULL. */
static void settle(int n, const MPI_Request *before, const MPI_Request *after) {
    for (int i = 0; i < n; i++) {
        if (before[i] == MPI_REQUEST_NULL || after[i] != MPI_REQUEST_NULL) continue;
        struct tracked *t = NULL;
        pthread_mutex_lock(&lock);
        for (struct tracked **pp = &reqs; *pp; pp = &(*pp)->next) {
            if ((*pp)->req == before[i]) {
                t = *pp;
                *pp = t->next;
                break;
            }
        }
        pthread_mutex_unlock(&lock);
        if (t) {
            for (int k = 0; k < t->n; k++) finish(&t->e[k]);
            free(t);
        }
    }
}

static int inter(MPI_Comm c) { int f = 0; MPI_Comm_test_inter(c, &f); return f; }
static int me(MPI_Comm c) { int r; MPI_Comm_rank(c, &r); return r; }
static int nprocs(MPI_Comm c) { int n; MPI_Comm_size(c, &n); return n; }
static long vspan(const int *counts, const int *displs, int n) {
    long m = 0;
    for (int i = 0; i < n; i++) if (counts[i] > 0 && displs[i] + counts[i] > m) m = displs[i] + counts[i];
    return m;
}

/* ---- point-to-point ---- */
#define SEND_LIKE(NAME)                                                                      \
    int NAME(const void *b, int c, MPI_Datatype t, int d, int tag, MPI_Comm comm) {          \
        struct entry e;                                                                      \
        void *x = to_device(b, c, t, 0, &e);                                                 \
        int rc = P##NAME(x, c, t, d, tag, comm);                                             \
        finish(&e);                                                                          \
        return rc;                                                                           \
    }
SEND_LIKE(MPI_Send)
SEND_LIKE(MPI_Ssend)
SEND_LIKE(MPI_Rsend)
SEND_LIKE(MPI_Bsend)

#define ISEND_LIKE(NAME)                                                                            \
    int NAME(const void *b, int c, MPI_Datatype t, int d, int tag, MPI_Comm comm, MPI_Request *r) { \
        struct entry e;                                                                             \
        void *x = to_device(b, c, t, 0, &e);                                                        \
        int rc = P##NAME(x, c, t, d, tag, comm, r);                                                 \
        if (rc == MPI_SUCCESS && e.dev) track(*r, &e, NULL); else finish(&e);                       \
        return rc;                                                                                  \
    }
ISEND_LIKE(MPI_Isend)
ISEND_LIKE(MPI_Issend)
ISEND_LIKE(MPI_Irsend)
ISEND_LIKE(MPI_Ibsend)

int MPI_Recv(void *b, int c, MPI_Datatype t, int s, int tag, MPI_Comm comm, MPI_Status *st) {
    struct entry e;
    void *x = to_device(b, c, t, 1, &e);
    int rc = PMPI_Recv(x, c, t, s, tag, comm, st);
    finish(&e);
    return rc;
}
int MPI_Irecv(void *b, int c, MPI_Datatype t, int s, int tag, MPI_Comm comm, MPI_Request *r) {
    struct entry e;
    void *x = to_device(b, c, t, 1, &e);
    int rc = PMPI_Irecv(x, c, t, s, tag, comm, r);
    if (rc == MPI_SUCCESS && e.dev) track(*r, &e, NULL); else finish(&e);
    return rc;
}
int MPI_Mrecv(void *b, int c, MPI_Datatype t, MPI_Message *m, MPI_Status *st) {
    struct entry e;
    void *x = to_device(b, c, t, 1, &e);
    int rc = PMPI_Mrecv(x, c, t, m, st);
    finish(&e);
    return rc;
}
int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype st_, int d, int stag, void *rb, int rc_, MPI_Datatype rt,
                 int s, int rtag, MPI_Comm comm, MPI_Status *st) {
    struct entry a, b;
    void *x = to_device(sb, sc, st_, 0, &a), *y = to_device(rb, rc_, rt, 1, &b);
    int rc = PMPI_Sendrecv(x, sc, st_, d, stag, y, rc_, rt, s, rtag, comm, st);
    finish(&a);
    finish(&b);
    return rc;
}
int MPI_Sendrecv_replace(void *b, int c, MPI_Datatype t, int d, int stag, int s, int rtag, MPI_Comm comm, MPI_Status *st) {
    struct entry e;
    void *x = to_device(b, c, t, 1, &e);
    int rc = PMPI_Sendrecv_replace(x, c, t, d, stag, s, rtag, comm, st);
    finish(&e);
    return rc;
}

/* ---- completion ---- */
int MPI_Wait(MPI_Request *r, MPI_Status *st) {
    MPI_Request b = *r;
    int rc = PMPI_Wait(r, st);
    settle(1, &b, r);
    return rc;
}
int MPI_Test(MPI_Request *r, int *flag, MPI_Status *st) {
    MPI_Request b = *r;
    int rc = PMPI_Test(r, flag, st);
    settle(1, &b, r);
    return rc;
}
#define MANY(NAME, ARGS, CALL)                                          \
    int NAME ARGS {                                                     \
        MPI_Request *b = malloc((n > 0 ? n : 1) * sizeof *b);           \
        if (n > 0) memcpy(b, r, n * sizeof *b);                         \
        int rc = P##NAME CALL;                                          \
        settle(n, b, r);                                                \
        free(b);                                                        \
        return rc;                                                      \
    }
MANY(MPI_Waitall, (int n, MPI_Request *r, MPI_Status *s), (n, r, s))
MANY(MPI_Waitany, (int n, MPI_Request *r, int *i, MPI_Status *s), (n, r, i, s))
MANY(MPI_Waitsome, (int n, MPI_Request *r, int *o, int *i, MPI_Status *s), (n, r, o, i, s))
MANY(MPI_Testall, (int n, MPI_Request *r, int *f, MPI_Status *s), (n, r, f, s))
MANY(MPI_Testany, (int n, MPI_Request *r, int *i, int *f, MPI_Status *s), (n, r, i, f, s))
MANY(MPI_Testsome, (int n, MPI_Request *r, int *o, int *i, MPI_Status *s), (n, r, o, i, s))

/* ---- collectives (intracommunicators) ---- */
int MPI_Bcast(void *b, int c, MPI_Datatype t, int root, MPI_Comm comm) {
    if (inter(comm)) return PMPI_Bcast(b, c, t, root, comm);
    struct entry e;
    void *x = to_device(b, c, t, me(comm) != root, &e);
    int rc = PMPI_Bcast(x, c, t, root, comm);
    finish(&e);
    return rc;
}
int MPI_Ibcast(void *b, int c, MPI_Datatype t, int root, MPI_Comm comm, MPI_Request *r) {
    if (inter(comm)) return PMPI_Ibcast(b, c, t, root, comm, r);
    struct entry e;
    void *x = to_device(b, c, t, me(comm) != root, &e);
    int rc = PMPI_Ibcast(x, c, t, root, comm, r);
    if (rc == MPI_SUCCESS && e.dev) track(*r, &e, NULL); else finish(&e);
    return rc;
}
#define RED_ARGS const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op
int MPI_Allreduce(RED_ARGS, MPI_Comm comm) {
    if (inter(comm) || sb == rb) return PMPI_Allreduce(sb, rb, c, t, op, comm);
    struct entry a, b;
    void *x = to_device(sb, c, t, 0, &a), *y = to_device(rb, c, t, 1, &b);
    int rc = PMPI_Allreduce(x, y, c, t, op, comm);
    finish(&a); finish(&b);
    return rc;
}
int MPI_Iallreduce(RED_ARGS, MPI_Comm comm, MPI_Request *r) {
    if (inter(comm) || sb == rb) return PMPI_Iallreduce(sb, rb, c, t, op, comm, r);
    struct entry a, b;
    void *x = to_device(sb, c, t, 0, &a), *y = to_device(rb, c, t, 1, &b);
    int rc = PMPI_Iallreduce(x, y, c, t, op, comm, r);
    if (rc == MPI_SUCCESS) track(*r, &a, &b); else { finish(&a); finish(&b); }
    return rc;
}
int MPI_Reduce(RED_ARGS, int root, MPI_Comm comm) {
    if (inter(comm) || sb == rb) return PMPI_Reduce(sb, rb, c, t, op, root, comm);
    int r = me(comm) == root;
    struct entry a, b = {0};
    void *x = to_device(sb, c, t, 0, &a), *y = r ? to_device(rb, c, t, 1, &b) : rb;
    int rc = PMPI_Reduce(x, y, c, t, op, root, comm);
    finish(&a); finish(&b);
    return rc;
}
int MPI_Scan(RED_ARGS, MPI_Comm comm) {
    if (sb == rb) return PMPI_Scan(sb, rb, c, t, op, comm);
    struct entry a, b;
    void *x = to_device(sb, c, t, 0, &a), *y = to_device(rb, c, t, 1, &b);
    int rc = PMPI_Scan(x, y, c, t, op, comm);
    finish(&a); finish(&b);
    return rc;
}
int MPI_Exscan(RED_ARGS, MPI_Comm comm) {
    if (sb == rb) return PMPI_Exscan(sb, rb, c, t, op, comm);
    struct entry a, b;
    void *x = to_device(sb, c, t, 0, &a), *y = to_device(rb, c, t, 1, &b);
    int rc = PMPI_Exscan(x, y, c, t, op, comm);
    finish(&a); finish(&b);
    return rc;
}
int MPI_Reduce_scatter_block(const void *sb, void *rb, int c, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
    if (inter(comm) || sb == rb) return PMPI_Reduce_scatter_block(sb, rb, c, t, op, comm);
    struct entry a, b;
    long n = (long)c * nprocs(comm);
    void *x = to_device(sb, n, t, 0, &a), *y = to_device(rb, sb == MPI_IN_PLACE ? n : c, t, 1, &b);
    int rc = PMPI_Reduce_scatter_block(x, y, c, t, op, comm);
    finish(&a); finish(&b);
    return rc;
}
#define GATHER_ARGS const void *sb, int sc, MPI_Datatype st, void *rb, int rc_, MPI_Datatype rt
int MPI_Allgather(GATHER_ARGS, MPI_Comm comm) {
    if (inter(comm)) return PMPI_Allgather(sb, sc, st, rb, rc_, rt, comm);
    struct entry a, b;
    void *x = to_device(sb, sc, st, 0, &a), *y = to_device(rb, (long)rc_ * nprocs(comm), rt, 1, &b);
    int rc = PMPI_Allgather(x, sc, st, y, rc_, rt, comm);
    finish(&a); finish(&b);
    return rc;
}
int MPI_Alltoall(GATHER_ARGS, MPI_Comm comm) {
    if (inter(comm)) return PMPI_Alltoall(sb, sc, st, rb, rc_, rt, comm);
    struct entry a, b;
    int n = nprocs(comm);
    void *x = to_device(sb, (long)sc * n, st, 0, &a), *y = to_device(rb, (long)rc_ * n, rt, 1, &b);
    int rc = PMPI_Alltoall(x, sc, st, y, rc_, rt, comm);
    finish(&a); finish(&b);
    return rc;
}
int MPI_Gather(GATHER_ARGS, int root, MPI_Comm comm) {
    if (inter(comm)) return PMPI_Gather(sb, sc, st, rb, rc_, rt, root, comm);
    int r = me(comm) == root;
    struct entry a, b = {0};
    void *x = to_device(sb, sc, st, 0, &a), *y = r ? to_device(rb, (long)rc_ * nprocs(comm), rt, 1, &b) : rb;
    int rc = PMPI_Gather(x, sc, st, y, rc_, rt, root, comm);
    finish(&a); finish(&b);
    return rc;
}
int MPI_Scatter(GATHER_ARGS, int root, MPI_Comm comm) {
    if (inter(comm)) return PMPI_Scatter(sb, sc, st, rb, rc_, rt, root, comm);
    int r = me(comm) == root;
    struct entry a = {0}, b;
    void *x = r ? to_device(sb, (long)sc * nprocs(comm), st, 0, &a) : (void *)sb;
    void *y = to_device(rb, rc_, rt, 1, &b);
    int rc = PMPI_Scatter(x, sc, st, y, rc_, rt, root, comm);
    finish(&a); finish(&b);
    return rc;
}
int MPI_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int *rcs, const int *ds, MPI_Datatype rt, MPI_Comm comm) {
    if (inter(comm)) return PMPI_Allgatherv(sb, sc, st, rb, rcs, ds, rt, comm);
    struct entry a, b;
    void *x = to_device(sb, sc, st, 0, &a), *y = to_device(rb, vspan(rcs, ds, nprocs(comm)), rt, 1, &b);
    int rc = PMPI_Allgatherv(x, sc, st, y, rcs, ds, rt, comm);
    finish(&a); finish(&b);
    return rc;
}
int MPI_Alltoallv(const void *sb, const int *scs, const int *sds, MPI_Datatype st, void *rb, const int *rcs, const int *rds,
                  MPI_Datatype rt, MPI_Comm comm) {
    if (inter(comm)) return PMPI_Alltoallv(sb, scs, sds, st, rb, rcs, rds, rt, comm);
    int n = nprocs(comm);
    struct entry a, b;
    void *x = sb == MPI_IN_PLACE ? (void *)sb : to_device(sb, vspan(scs, sds, n), st, 0, &a);
    if (sb == MPI_IN_PLACE) a.dev = NULL;
    void *y = to_device(rb, vspan(rcs, rds, n), rt, 1, &b);
    int rc = PMPI_Alltoallv(x, scs, sds, st, y, rcs, rds, rt, comm);
    finish(&a); finish(&b);
    return rc;
}
