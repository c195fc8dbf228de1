/* Making intercommunicators from intercommunicators and from groups:
 * MPI_Comm_split, MPI_Comm_create, MPI_Comm_idup and MPI_Comm_split_type on
 * an intercommunicator (MPI-4.0 semantics: each side's group, an
 * intercommunicator or MPI_COMM_NULL), MPI_Intercomm_create_from_groups and
 * MPI_Comm_create_from_group. Every result is checked for its groups (in
 * world ranks, in order) and carries traffic both ways. */
#include "util.h"
#include <stdlib.h>

static int wrank, wsize;

/* World ranks of a group, in its order. */
static void world_of(MPI_Group g, int *out, int n) {
    MPI_Group wg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int *idx = malloc(sizeof(int) * (n ? n : 1));
    for (int i = 0; i < n; i++) idx[i] = i;
    MPI_Group_translate_ranks(g, n, idx, wg, out);
    MPI_Group_free(&wg);
    free(idx);
}

/* Checks that intercommunicator `ic` has local group `lw` (world ranks, in
 * order, `ln` of them) and remote group `rw` (`rn`), then sends every
 * local rank's world rank to remote rank (local rank % rn), receives what
 * is aimed at it, checks each sender by its world rank, and runs a
 * barrier and an allreduce (whose result is the remote group's sum). */
static void check_inter(MPI_Comm ic, const int *lw, int ln, const int *rw, int rn, const char *what) {
    int flag, lsize, rsize, lrank;
    MPI_Comm_test_inter(ic, &flag);
    CHECK(flag, "%s: not an intercommunicator", what);
    MPI_Comm_size(ic, &lsize);
    MPI_Comm_remote_size(ic, &rsize);
    MPI_Comm_rank(ic, &lrank);
    CHECK(lsize == ln && rsize == rn, "%s: sizes %d/%d, expected %d/%d", what, lsize, rsize, ln, rn);
    CHECK(lrank >= 0 && lrank < ln && lw[lrank] == wrank, "%s: rank %d", what, lrank);
    MPI_Group g;
    int got[64];
    MPI_Comm_group(ic, &g);
    world_of(g, got, lsize);
    MPI_Group_free(&g);
    for (int i = 0; i < ln; i++) CHECK(got[i] == lw[i], "%s: local %d is world %d, expected %d", what, i, got[i], lw[i]);
    MPI_Comm_remote_group(ic, &g);
    world_of(g, got, rsize);
    MPI_Group_free(&g);
    for (int i = 0; i < rn; i++) CHECK(got[i] == rw[i], "%s: remote %d is world %d, expected %d", what, i, got[i], rw[i]);
    MPI_Request rq;
    MPI_Isend(&wrank, 1, MPI_INT, lrank % rn, 9, ic, &rq);
    int expected = 0;
    for (int q = 0; q < rn; q++) if (q % ln == lrank) expected++;
    for (int k = 0; k < expected; k++) {
        int v;
        MPI_Status st;
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 9, ic, &st);
        CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rn && v == rw[st.MPI_SOURCE],
              "%s: got %d from remote %d", what, v, st.MPI_SOURCE);
    }
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MPI_Barrier(ic);
    int sum = 0, want = 0;
    for (int i = 0; i < rn; i++) want += rw[i];
    MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, ic);
    CHECK(sum == want, "%s: allreduce %d, expected remote sum %d", what, sum, want);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    test_rank = wrank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (wsize < 2 || wsize > 64) { MPI_Finalize(); return 0; }
    /* Side A: world ranks [0, half), side B: [half, size). */
    int half = wsize / 2, side = wrank < half ? 0 : 1;
    int base[2] = {0, half}, n[2] = {half, wsize - half};
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, side, wrank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, side ? 0 : half, 5, &inter);
    int lrank = wrank - base[side];
    int lw[64], rw[64], ln, rn;

    /* 1. Split by parity of the local rank, keys reversing the order; a
     * color (7) only side A's rank 0 gives has no remote part: NULL. */
    {
        int color = (side == 0 && lrank == 0 && n[0] > 1) ? 7 : lrank % 2;
        MPI_Comm s;
        int rc = MPI_Comm_split(inter, color, -lrank, &s);
        CHECK(rc == MPI_SUCCESS, "split rc %d", rc);
        int cl = (side == 0 && lrank == 0 && n[0] > 1) ? 7 : lrank % 2;
        ln = rn = 0;
        for (int i = n[side] - 1; i >= 0; i--) {
            int c = (side == 0 && i == 0 && n[0] > 1) ? 7 : i % 2;
            if (c == cl) lw[ln++] = base[side] + i;
        }
        for (int i = n[1 - side] - 1; i >= 0; i--) {
            int c = (side == 1 && i == 0 && n[0] > 1) ? 7 : i % 2;
            if (c == cl) rw[rn++] = base[1 - side] + i;
        }
        if (rn == 0) {
            CHECK(s == MPI_COMM_NULL, "split: color %d has no remote processes, expected MPI_COMM_NULL", cl);
        } else {
            CHECK(s != MPI_COMM_NULL, "split: got MPI_COMM_NULL for color %d", cl);
            if (s != MPI_COMM_NULL) {
                check_inter(s, lw, ln, rw, rn, "split");
                MPI_Comm_free(&s);
            }
        }
        /* MPI_UNDEFINED on side B's last rank. */
        int undef = side == 1 && lrank == n[1] - 1;
        rc = MPI_Comm_split(inter, undef ? MPI_UNDEFINED : 0, lrank, &s);
        CHECK(rc == MPI_SUCCESS, "split undefined rc %d", rc);
        if (undef) {
            CHECK(s == MPI_COMM_NULL, "split: MPI_UNDEFINED gave a communicator");
        } else if (side == 1 || n[1] > 1) {
            ln = n[side] - (side == 1);
            rn = n[1 - side] - (side == 0);
            for (int i = 0; i < ln; i++) lw[i] = base[side] + i;
            for (int i = 0; i < rn; i++) rw[i] = base[1 - side] + i;
            check_inter(s, lw, ln, rw, rn, "split (one undefined)");
            MPI_Comm_free(&s);
        } else {
            CHECK(s == MPI_COMM_NULL, "split: empty remote side gave a communicator");
        }
    }

    /* 2. MPI_Comm_create: each side names its ranks in reverse order,
     * side A leaving out its rank 0 where it has more than one. */
    {
        MPI_Group lg, g;
        MPI_Comm_group(inter, &lg);
        int ranks[64], k = 0;
        int skip0 = side == 0 && n[0] > 1;
        for (int i = n[side] - 1; i >= (skip0 ? 1 : 0); i--) ranks[k++] = i;
        MPI_Group_incl(lg, k, ranks, &g);
        MPI_Comm c;
        int rc = MPI_Comm_create(inter, g, &c);
        CHECK(rc == MPI_SUCCESS, "create rc %d", rc);
        int askip = n[0] > 1;
        ln = rn = 0;
        for (int i = n[side] - 1; i >= (side == 0 && askip ? 1 : 0); i--) lw[ln++] = base[side] + i;
        for (int i = n[1 - side] - 1; i >= (side == 1 && askip ? 1 : 0); i--) rw[rn++] = base[1 - side] + i;
        if (skip0 && lrank == 0) {
            CHECK(c == MPI_COMM_NULL, "create: a process outside the group got a communicator");
        } else {
            CHECK(c != MPI_COMM_NULL, "create: got MPI_COMM_NULL");
            if (c != MPI_COMM_NULL) {
                check_inter(c, lw, ln, rw, rn, "create");
                MPI_Comm_free(&c);
            }
        }
        MPI_Group_free(&g);
        /* A group with a process of the other side is an error. */
        MPI_Group wg, bad;
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        int other = base[1 - side];
        MPI_Group_incl(wg, 1, &other, &bad);
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        rc = MPI_Comm_create(inter, bad, &c);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_GROUP, "create with a remote process: class %d", cls);
        MPI_Group_free(&bad);
        MPI_Group_free(&wg);
        MPI_Group_free(&lg);
    }

    /* 3. MPI_Comm_idup (and _with_info) of the intercommunicator. */
    {
        MPI_Comm d1, d2;
        MPI_Request r[2];
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
        MPI_Comm_idup(inter, &d1, &r[0]);
        MPI_Comm_idup_with_info(inter, info, &d2, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        MPI_Info_free(&info);
        ln = n[side];
        rn = n[1 - side];
        for (int i = 0; i < ln; i++) lw[i] = base[side] + i;
        for (int i = 0; i < rn; i++) rw[i] = base[1 - side] + i;
        check_inter(d1, lw, ln, rw, rn, "idup");
        check_inter(d2, lw, ln, rw, rn, "idup_with_info");
        MPI_Info used;
        char val[32];
        int flag = 0;
        MPI_Comm_get_info(d2, &used);
        MPI_Info_get(used, "mpi_assert_no_any_tag", sizeof val - 1, val, &flag);
        CHECK(flag, "idup_with_info: info key lost");
        MPI_Info_free(&used);
        MPI_Comm_free(&d1);
        MPI_Comm_free(&d2);
    }

    /* 4. MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) on the
     * intercommunicator: the processes of my node on each side. */
    {
        MPI_Comm node;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        int leader, leaders[64];
        MPI_Allreduce(&wrank, &leader, 1, MPI_INT, MPI_MIN, node);
        MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, MPI_COMM_WORLD);
        MPI_Comm_free(&node);
        ln = rn = 0;
        for (int i = 0; i < n[side]; i++) if (leaders[base[side] + i] == leader) lw[ln++] = base[side] + i;
        for (int i = 0; i < n[1 - side]; i++) if (leaders[base[1 - side] + i] == leader) rw[rn++] = base[1 - side] + i;
        MPI_Comm s;
        int rc = MPI_Comm_split_type(inter, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &s);
        CHECK(rc == MPI_SUCCESS, "split_type rc %d", rc);
        if (rn == 0) {
            CHECK(s == MPI_COMM_NULL, "split_type: no remote process on my node, expected MPI_COMM_NULL");
        } else {
            CHECK(s != MPI_COMM_NULL, "split_type: got MPI_COMM_NULL");
            if (s != MPI_COMM_NULL) {
                check_inter(s, lw, ln, rw, rn, "split_type");
                MPI_Comm_free(&s);
            }
        }
    }

    /* 5. From groups: the two halves (leaders: the last of each), and a
     * communicator of the even world ranks. */
    {
        MPI_Group wg, ga, gb;
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        int ra[64], rb[64];
        for (int i = 0; i < n[0]; i++) ra[i] = i;
        for (int i = 0; i < n[1]; i++) rb[i] = half + i;
        MPI_Group_incl(wg, n[0], ra, &ga);
        MPI_Group_incl(wg, n[1], rb, &gb);
        MPI_Comm ic;
        int rc = MPI_Intercomm_create_from_groups(side ? gb : ga, n[side] - 1, side ? ga : gb, n[1 - side] - 1,
                                                  "oxmpi-test-halves", MPI_INFO_NULL, MPI_ERRORS_RETURN, &ic);
        CHECK(rc == MPI_SUCCESS, "intercomm_create_from_groups rc %d", rc);
        ln = n[side];
        rn = n[1 - side];
        for (int i = 0; i < ln; i++) lw[i] = base[side] + i;
        for (int i = 0; i < rn; i++) rw[i] = base[1 - side] + i;
        check_inter(ic, lw, ln, rw, rn, "intercomm_create_from_groups");
        MPI_Errhandler eh;
        MPI_Comm_get_errhandler(ic, &eh);
        CHECK(eh == MPI_ERRORS_RETURN, "from_groups: error handler not set");
        MPI_Comm_free(&ic);
        /* Both groups the same: an error naming the overlap. */
        rc = MPI_Intercomm_create_from_groups(ga, 0, ga, 0, "oxmpi-bad", MPI_INFO_NULL, MPI_ERRORS_RETURN, &ic);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_GROUP, "overlapping groups: class %d", cls);

        int evens[64], ne = 0;
        for (int i = 0; i < wsize; i += 2) evens[ne++] = i;
        MPI_Group ge;
        MPI_Group_incl(wg, ne, evens, &ge);
        if (wrank % 2 == 0) {
            MPI_Comm c;
            rc = MPI_Comm_create_from_group(ge, "oxmpi-test-evens", MPI_INFO_NULL, MPI_ERRHANDLER_NULL, &c);
            CHECK(rc == MPI_SUCCESS, "comm_create_from_group rc %d", rc);
            int r, s, sum = 0;
            MPI_Comm_rank(c, &r);
            MPI_Comm_size(c, &s);
            CHECK(r == wrank / 2 && s == ne, "from_group: rank %d size %d", r, s);
            MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, c);
            CHECK(sum == (ne - 1) * ne, "from_group: allreduce %d", sum);
            MPI_Comm_free(&c);
        }
        MPI_Group_free(&ge);
        MPI_Group_free(&ga);
        MPI_Group_free(&gb);
        MPI_Group_free(&wg);
    }

    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Barrier(MPI_COMM_WORLD);
    if (wrank == 0) printf("intercomm_create: OK\n");
    MPI_Finalize();
    return 0;
}
