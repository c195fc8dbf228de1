/* Collective mismatch checks (OXMPI_CHECK=1): every kind of disagreement
 * between the ranks of one collective is reported as an error of its class
 * on every rank (MPI_ERRORS_RETURN), and the job goes on (no collective
 * ran); collectives that agree (also with MPI_IN_PLACE, MPI_BYTE against
 * typed data, v forms with per-rank counts) run and give their results.
 * The v and w forms are compared pair by pair (what a rank sends another
 * against what that one expects from it).
 * Persistent collectives are checked at their initialisation (which every
 * rank makes in the same order; the starts need not be); collectives on an
 * intercommunicator across both groups (kind, op, MPI_ROOT/MPI_PROC_NULL
 * and the root's rank, the data between the groups).
 * With MISMATCH_FATAL=kind|root|count|pairs|nonblocking|persistent|inter the program makes that
 * one mismatch under MPI_ERRORS_ARE_FATAL, and the testlist checks the
 * message the job ends with. Needs 2 or more ranks. */
#include "util.h"

static int rank, size, last;

/* rc must be an error of class `cls`. */
static void expect_error(int rc, int cls, const char *what) {
    CHECK(rc != MPI_SUCCESS, "%s: no error", what);
    int c;
    MPI_Error_class(rc, &c);
    CHECK(c == cls, "%s: class %d, not %d", what, c, cls);
}

/* An intercommunicator between the even ranks and the odd ones (local
   leaders: their lowest ranks), named "halves". */
static MPI_Comm halves(void) {
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 77, &inter);
    MPI_Comm_free(&local);
    MPI_Comm_set_name(inter, "halves");
    return inter;
}

/* One mismatch under MPI_ERRORS_ARE_FATAL: the job ends with its message. */
static void fatal(const char *which) {
    int a[8] = {0}, b[8];
    MPI_Request q;
    if (!strcmp(which, "kind")) {
        if (rank == 0) MPI_Bcast(a, 4, MPI_INT, 0, MPI_COMM_WORLD);
        else MPI_Allreduce(a, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    } else if (!strcmp(which, "root")) {
        MPI_Bcast(a, 4, MPI_INT, rank == last ? last : 0, MPI_COMM_WORLD);
    } else if (!strcmp(which, "count")) {
        MPI_Reduce(a, b, rank == last ? 5 : 4, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    } else if (!strcmp(which, "pairs")) {
        /* the last rank sends rank 0 two ints where rank 0 expects one */
        int sc[64], rc[64], sd[64], rd[64];
        for (int i = 0; i < size; i++) { sc[i] = rc[i] = 1; sd[i] = rd[i] = i; }
        if (rank == last) { sc[0] = 2; for (int i = 1; i < size; i++) sd[i] = i + 1; }
        MPI_Alltoallv(a, sc, sd, MPI_INT, b, rc, rd, MPI_INT, MPI_COMM_WORLD);
    } else if (!strcmp(which, "persistent")) {
        if (rank == 0) MPI_Bcast_init(a, 4, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &q);
        else MPI_Allreduce_init(a, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q);
    } else if (!strcmp(which, "inter")) {
        MPI_Comm inter = halves();
        if (rank % 2 == 0) MPI_Bcast(a, 4, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
        else MPI_Allreduce(a, b, 4, MPI_INT, MPI_SUM, inter);
    } else if (!strcmp(which, "nonblocking")) {
        for (int i = 0; i < 2; i++) MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) MPI_Ibcast(a, 4, MPI_INT, 0, MPI_COMM_WORLD, &q);
        else MPI_Iallreduce(a, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
    }
    printf("FAIL rank %d: the %s mismatch was not reported\n", rank, which);
    MPI_Finalize();
    exit(1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    last = size - 1;
    if (getenv("MISMATCH_FATAL")) fatal(getenv("MISMATCH_FATAL"));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int a[64], b[64], rc;
    for (int i = 0; i < 64; i++) a[i] = rank + i;

    /* Different collectives. */
    if (rank == 0) rc = MPI_Bcast(a, 4, MPI_INT, 0, MPI_COMM_WORLD);
    else rc = MPI_Allreduce(a, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    expect_error(rc, MPI_ERR_OTHER, "kind");

    /* Different roots. */
    rc = MPI_Bcast(a, 4, MPI_INT, rank == last ? last : 0, MPI_COMM_WORLD);
    expect_error(rc, MPI_ERR_ROOT, "root");

    /* Different ops. */
    rc = MPI_Allreduce(a, b, 4, MPI_INT, rank == 1 ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD);
    expect_error(rc, MPI_ERR_OP, "op");

    /* Different counts, then different types of as many bytes. */
    rc = MPI_Reduce(a, b, rank == last ? 5 : 4, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    expect_error(rc, MPI_ERR_TYPE, "count");
    if (rank == 1) rc = MPI_Bcast(a, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else rc = MPI_Bcast(a, 4, MPI_INT, 0, MPI_COMM_WORLD);
    expect_error(rc, MPI_ERR_TYPE, "type");

    /* A gather whose blocks differ from the root's. */
    rc = MPI_Gather(a, rank == 1 ? 3 : 2, MPI_INT, b, 2, MPI_INT, 0, MPI_COMM_WORLD);
    expect_error(rc, MPI_ERR_TYPE, "gather");

    /* v and w forms, pair by pair: an alltoallv where the last rank sends
       rank 0 two ints but rank 0 expects one; a gatherv whose root expects
       one int fewer from rank 1; an alltoallw whose types differ in one
       pair; a scatterv whose root sends MPI_DOUBLE where rank 1 expects
       two ints (as many bytes: fine) and then three ints (not). */
    {
        int sc[64], rcn[64], sd[64], rd[64];
        MPI_Datatype st[64], rt[64];
        for (int i = 0; i < size; i++) {
            sc[i] = rcn[i] = 1;
            sd[i] = rd[i] = i;
            st[i] = rt[i] = MPI_INT;
        }
        if (rank == last) sc[0] = 2;
        if (rank == last) for (int i = 1; i < size; i++) sd[i] = i + 1;
        rc = MPI_Alltoallv(a, sc, sd, MPI_INT, b, rcn, rd, MPI_INT, MPI_COMM_WORLD);
        expect_error(rc, MPI_ERR_TYPE, "alltoallv pairs");
        for (int i = 0; i < size; i++) { sc[i] = 1; sd[i] = i; rcn[i] = i == 1 ? 1 : 2; rd[i] = 2 * i; }
        rc = MPI_Gatherv(a, 2, MPI_INT, b, rcn, rd, MPI_INT, 0, MPI_COMM_WORLD);
        expect_error(rc, MPI_ERR_TYPE, "gatherv pairs");
        int wd[64];
        for (int i = 0; i < size; i++) wd[i] = 4 * i;
        if (rank == 1) rt[0] = MPI_FLOAT;
        rc = MPI_Alltoallw(a, sc, wd, st, b, sc, wd, rt, MPI_COMM_WORLD);
        expect_error(rc, MPI_ERR_TYPE, "alltoallw pairs");
        for (int i = 0; i < size; i++) { sc[i] = 1; sd[i] = 2 * i; }
        double dd[64] = {0};
        rc = MPI_Scatterv(dd, sc, sd, MPI_DOUBLE, b, 8, MPI_BYTE, 0, MPI_COMM_WORLD);
        CHECK(rc == MPI_SUCCESS, "scatterv of one MPI_DOUBLE into 8 MPI_BYTE: %d", rc);
        rc = MPI_Scatterv(dd, sc, sd, MPI_DOUBLE, b, rank == 1 ? 3 : 2, MPI_INT, 0, MPI_COMM_WORLD);
        expect_error(rc, MPI_ERR_TYPE, "scatterv pairs");
        /* agreeing: every rank sends rank j (j + 1) ints, and an alltoallw of them */
        int *sa = malloc(sizeof(int) * 64 * 64), *ra = malloc(sizeof(int) * 64 * 64);
        int off = 0;
        for (int j = 0; j < size; j++) {
            sc[j] = j + 1; sd[j] = off;
            for (int k = 0; k <= j; k++) sa[off + k] = 100 * rank + 10 * j + k;
            off += j + 1;
            rcn[j] = rank + 1; rd[j] = j * (rank + 1);
        }
        CHECK(MPI_Alltoallv(sa, sc, sd, MPI_INT, ra, rcn, rd, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS, "alltoallv that agrees");
        for (int j = 0; j < size; j++)
            for (int k = 0; k <= rank; k++)
                CHECK(ra[j * (rank + 1) + k] == 100 * j + 10 * rank + k, "alltoallv from %d element %d: %d", j, k, ra[j * (rank + 1) + k]);
        for (int j = 0; j < size; j++) { sd[j] *= 4; rd[j] *= 4; rt[j] = MPI_INT; }
        CHECK(MPI_Alltoallw(sa, sc, sd, st, ra, rcn, rd, rt, MPI_COMM_WORLD) == MPI_SUCCESS, "alltoallw that agrees");
        CHECK(ra[rank] == 10 * rank + rank, "alltoallw from 0: %d", ra[rank]);
        free(sa); free(ra);
    }

    /* Neighbourhood collectives on a periodic ring: rank 1 sends 2 ints
       per neighbour where its neighbours expect 1; then agreeing calls
       (also on a ring of 2, where both neighbours are one rank). */
    {
        MPI_Comm ring;
        int dims[1] = {size}, periods[1] = {1};
        MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
        MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
        int sbuf[8] = {rank, rank, rank, rank}, rbuf[8] = {0};
        rc = MPI_Neighbor_alltoall(sbuf, rank == 1 ? 2 : 1, MPI_INT, rbuf, 1, MPI_INT, ring);
        expect_error(rc, MPI_ERR_TYPE, "neighbor_alltoall pairs");
        int lo, hi;
        MPI_Cart_shift(ring, 0, 1, &lo, &hi);
        CHECK(MPI_Neighbor_allgather(&rank, 1, MPI_INT, rbuf, 1, MPI_INT, ring) == MPI_SUCCESS,
              "neighbor_allgather that agrees");
        CHECK(rbuf[0] == lo && rbuf[1] == hi, "neighbor_allgather gave %d %d", rbuf[0], rbuf[1]);
        int nc[2] = {1, 1}, nd[2] = {0, 1};
        CHECK(MPI_Neighbor_alltoallv(sbuf, nc, nd, MPI_INT, rbuf, nc, nd, MPI_INT, ring) == MPI_SUCCESS,
              "neighbor_alltoallv that agrees");
        MPI_Comm_free(&ring);
    }

    /* Nonblocking forms, named as called. */
    MPI_Request q = MPI_REQUEST_NULL;
    if (rank == 0) rc = MPI_Ibcast(a, 4, MPI_INT, 0, MPI_COMM_WORLD, &q);
    else rc = MPI_Iallreduce(a, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
    expect_error(rc, MPI_ERR_OTHER, "nonblocking");
    CHECK(q == MPI_REQUEST_NULL, "a failed start left a request");

    /* Agreeing collectives run, with their results. */
    rc = MPI_Bcast(rank == 0 ? (void *)a : (void *)b, rank == 0 ? 4 : 16, rank == 0 ? MPI_INT : MPI_BYTE, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "bcast of 4 MPI_INT into 16 MPI_BYTE failed");
    if (rank != 0) CHECK(b[3] == 3, "bcast gave %d", b[3]);
    for (int i = 0; i < 64; i++) b[i] = a[i];
    CHECK(MPI_Allreduce(MPI_IN_PLACE, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "allreduce in place");
    CHECK(b[0] == size * (size - 1) / 2, "allreduce gave %d", b[0]);
    int *all = malloc(sizeof(int) * 2 * size), *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++) { counts[i] = i % 2 + 1; displs[i] = 2 * i; }
    CHECK(MPI_Allgather(a, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS, "allgather");
    CHECK(all[2 * last] == last, "allgather gave %d", all[2 * last]);
    all[2 * rank] = rank * 10;
    CHECK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 2, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS, "allgather in place");
    CHECK(all[2 * last] == last * 10, "allgather in place gave %d", all[2 * last]);
    CHECK(MPI_Gatherv(a, counts[rank], MPI_INT, all, counts, displs, MPI_INT, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "gatherv with per-rank counts");
    CHECK(MPI_Alltoall(all, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS, "alltoall");
    CHECK(MPI_Scatter(all, 2, MPI_INT, b, 2, MPI_INT, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "scatter");
    CHECK(MPI_Reduce_scatter_block(all, b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "reduce_scatter_block");
    CHECK(MPI_Scan(a, b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "scan");
    CHECK(b[0] == rank * (rank + 1) / 2, "scan gave %d", b[0]);
    CHECK(MPI_Iallreduce(a, b, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &q) == MPI_SUCCESS, "iallreduce");
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    CHECK(b[1] == last + 1, "iallreduce gave %d", b[1]);
    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS, "barrier");

    /* Persistent collectives, checked at their initialisation: a
       mismatch there leaves no request; agreeing ones are started in
       different orders on different ranks (allowed) and give their
       results. */
    {
        MPI_Request p[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        if (rank == 0) rc = MPI_Bcast_init(a, 4, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &p[0]);
        else rc = MPI_Allreduce_init(a, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &p[0]);
        expect_error(rc, MPI_ERR_OTHER, "persistent kind");
        CHECK(p[0] == MPI_REQUEST_NULL, "a failed initialisation left a request");
        rc = MPI_Reduce_init(a, b, rank == last ? 3 : 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &p[0]);
        expect_error(rc, MPI_ERR_TYPE, "persistent count");
        rc = MPI_Alltoallv_init(a, (int[64]){0}, (int[64]){0}, MPI_INT, b, (int[64]){0}, (int[64]){0}, MPI_INT,
                                MPI_COMM_WORLD, MPI_INFO_NULL, &p[0]);
        CHECK(rc == MPI_SUCCESS, "alltoallv_init of nothing: %d", rc);
        MPI_Request_free(&p[0]);
        int x[4] = {rank == 0 ? 42 : -1}, y[2] = {0}, one = 1;
        CHECK(MPI_Bcast_init(x, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &p[0]) == MPI_SUCCESS, "bcast_init");
        CHECK(MPI_Allreduce_init(&one, y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &p[1]) == MPI_SUCCESS, "allreduce_init");
        for (int round = 0; round < 2; round++) {
            if (rank % 2) { MPI_Start(&p[1]); MPI_Start(&p[0]); }
            else { MPI_Start(&p[0]); MPI_Start(&p[1]); }
            MPI_Waitall(2, p, MPI_STATUSES_IGNORE);
            CHECK(x[0] == 42 && y[0] == size, "persistent round %d gave %d %d", round, x[0], y[0]);
        }
        MPI_Request_free(&p[0]);
        MPI_Request_free(&p[1]);
    }

    /* Intercommunicators: both groups compared (evens against odds). */
    {
        MPI_Comm inter = halves();
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        int even = rank % 2 == 0, lrank, rsize;
        MPI_Comm_rank(inter, &lrank);
        MPI_Comm_remote_size(inter, &rsize);
        int root_here = even ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        int x[8] = {0};
        if (even) rc = MPI_Bcast(a, 4, MPI_INT, root_here, inter);
        else rc = MPI_Allreduce(a, b, 4, MPI_INT, MPI_SUM, inter);
        expect_error(rc, MPI_ERR_OTHER, "inter kind");
        /* MPI_ROOT in both groups */
        rc = MPI_Bcast(a, 4, MPI_INT, lrank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
        expect_error(rc, MPI_ERR_ROOT, "inter two roots");
        /* an odd rank names a root the evens do not have */
        rc = MPI_Bcast(a, 4, MPI_INT, even ? root_here : (lrank == 0 ? 0 : 1), inter);
        if (size > 3) expect_error(rc, MPI_ERR_ROOT, "inter remote root");
        else if (size == 2 || size == 3) CHECK(rc == MPI_SUCCESS, "inter bcast: %d", rc);
        /* an odd rank receives 5 ints where the root sends 4 */
        if (even && lrank == 0) for (int i = 0; i < 4; i++) x[i] = 7 + i;
        rc = MPI_Bcast(x, !even && lrank == 0 ? 5 : 4, MPI_INT, root_here, inter);
        expect_error(rc, MPI_ERR_TYPE, "inter bcast count");
        rc = MPI_Allreduce(a, b, rank == last ? 3 : 4, MPI_INT, MPI_SUM, inter);
        expect_error(rc, MPI_ERR_TYPE, "inter allreduce count");
        rc = MPI_Allreduce(a, b, 4, MPI_INT, rank == last ? MPI_MAX : MPI_SUM, inter);
        expect_error(rc, MPI_ERR_OP, "inter op");
        int *g = malloc(sizeof(int) * 2 * size);
        rc = MPI_Allgather(a, 1, MPI_INT, g, even ? 1 : 2, MPI_INT, inter);
        expect_error(rc, MPI_ERR_TYPE, "inter allgather blocks");
        /* agreeing: a bcast, an allgather, a gather to the root, a persistent bcast */
        rc = MPI_Bcast(x, 4, MPI_INT, root_here, inter);
        CHECK(rc == MPI_SUCCESS, "inter bcast that agrees: %d", rc);
        if (!even) CHECK(x[3] == 10, "inter bcast gave %d", x[3]);
        CHECK(MPI_Allgather(&rank, 1, MPI_INT, g, 1, MPI_INT, inter) == MPI_SUCCESS, "inter allgather");
        for (int j = 0; j < rsize; j++) CHECK(g[j] == 2 * j + even, "inter allgather [%d] = %d", j, g[j]);
        CHECK(MPI_Gather(&rank, 1, MPI_INT, g, 1, MPI_INT, root_here, inter) == MPI_SUCCESS, "inter gather");
        if (even && lrank == 0) for (int j = 0; j < rsize; j++) CHECK(g[j] == 2 * j + 1, "inter gather [%d] = %d", j, g[j]);
        MPI_Request p;
        x[0] = even ? 5 : 0;
        CHECK(MPI_Bcast_init(x, 1, MPI_INT, root_here, inter, MPI_INFO_NULL, &p) == MPI_SUCCESS, "inter bcast_init");
        MPI_Start(&p);
        MPI_Wait(&p, MPI_STATUS_IGNORE);
        if (!even) CHECK(x[0] == 5, "inter persistent bcast gave %d", x[0]);
        MPI_Request_free(&p);
        rc = MPI_Allreduce_init(a, b, rank == last ? 3 : 4, MPI_INT, MPI_SUM, inter, MPI_INFO_NULL, &p);
        expect_error(rc, MPI_ERR_TYPE, "inter persistent count");
        free(g);
        MPI_Comm_free(&inter);
    }

    /* On a communicator of its own, with its own call count. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &half);
    MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
    MPI_Barrier(half);
    if (rank == 0) rc = MPI_Barrier(half);
    else rc = MPI_Allreduce(a, b, 1, MPI_INT, MPI_SUM, half);
    expect_error(rc, MPI_ERR_OTHER, "split");
    MPI_Comm_free(&half);
    free(all); free(counts); free(displs);
    if (rank == 0) printf("coll_mismatch ok\n");
    MPI_Finalize();
    return 0;
}
