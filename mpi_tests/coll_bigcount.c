/* The MPI-4 large-count collectives (MPI_Xxx_c, MPI_Count counts and
 * MPI_Aint displacements): every one, blocking, nonblocking and persistent
 * (started twice, with new data the second time), results checked exactly
 * on world and on a periodic ring (the neighbor forms). A persistent v-form
 * is started after other persistent calls with other arrays were set up
 * and freed. Then the errors, each with its class under MPI_ERRORS_RETURN:
 * a count or displacement beyond the address space and a negative count; with
 * OXMPI_TEST_FATAL=1, a huge count under the default handler, whose
 * message the testlist checks. */
#include "util.h"

static int me, np;
static int val(int who, int it, int i) { return who * 10000 + it * 1000 + i; }

/* mode 0: blocking; 1: nonblocking + wait; 2: persistent (init at it 0,
 * start and wait every it, freed after it 1). */
#define RUN(mode, it, preq, blk, nb, init)                                     \
    do {                                                                       \
        if ((mode) == 0) {                                                     \
            CHECK((blk) == MPI_SUCCESS, "blocking call failed");               \
        } else if ((mode) == 1) {                                              \
            MPI_Request rq_;                                                   \
            CHECK((nb) == MPI_SUCCESS, "nonblocking call failed");             \
            MPI_Wait(&rq_, MPI_STATUS_IGNORE);                                 \
        } else {                                                               \
            if ((it) == 0) CHECK((init) == MPI_SUCCESS, "init failed");        \
            MPI_Start(preq);                                                   \
            MPI_Wait(preq, MPI_STATUS_IGNORE);                                 \
            if ((it) == 1) MPI_Request_free(preq);                             \
        }                                                                      \
    } while (0)

static const char *mname[] = {"blocking", "nonblocking", "persistent"};

static void rooted(int mode) {
    int root = np - 1, n = 5;
    MPI_Request pb, pr, pg, pgv, ps, psv;
    int *s = malloc(sizeof(int) * 64 * np), *r = malloc(sizeof(int) * 64 * np);
    MPI_Count cnt[64], *rc = malloc(sizeof(MPI_Count) * np);
    MPI_Aint *dp = malloc(sizeof(MPI_Aint) * np);
    for (int i = 0; i < np; i++) {
        rc[i] = i + 1;
        dp[i] = (MPI_Aint)i * (np + 2);
    }
    (void)cnt;
    for (int it = 0; it < 2; it++) {
        /* bcast */
        for (int i = 0; i < n; i++) r[i] = me == root ? val(root, it, i) : -1;
        RUN(mode, it, &pb, MPI_Bcast_c(r, n, MPI_INT, root, MPI_COMM_WORLD),
            MPI_Ibcast_c(r, n, MPI_INT, root, MPI_COMM_WORLD, &rq_),
            MPI_Bcast_init_c(r, n, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &pb));
        for (int i = 0; i < n; i++) CHECK(r[i] == val(root, it, i), "%s bcast_c [%d] = %d", mname[mode], i, r[i]);
        /* reduce */
        for (int i = 0; i < n; i++) s[i] = val(me, it, i), r[i] = -1;
        RUN(mode, it, &pr, MPI_Reduce_c(s, r, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD),
            MPI_Ireduce_c(s, r, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &rq_),
            MPI_Reduce_init_c(s, r, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, MPI_INFO_NULL, &pr));
        if (me == root)
            for (int i = 0; i < n; i++) {
                int want = 0;
                for (int k = 0; k < np; k++) want += val(k, it, i);
                CHECK(r[i] == want, "%s reduce_c [%d] = %d, want %d", mname[mode], i, r[i], want);
            }
        /* gather */
        for (int i = 0; i < n; i++) s[i] = val(me, it, i);
        for (int i = 0; i < n * np; i++) r[i] = -1;
        RUN(mode, it, &pg, MPI_Gather_c(s, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD),
            MPI_Igather_c(s, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD, &rq_),
            MPI_Gather_init_c(s, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &pg));
        if (me == root)
            for (int k = 0; k < np; k++)
                for (int i = 0; i < n; i++)
                    CHECK(r[k * n + i] == val(k, it, i), "%s gather_c from %d [%d] = %d", mname[mode], k, i,
                          r[k * n + i]);
        /* gatherv: rank k sends k + 1 ints to displacement k * (np + 2) */
        for (int i = 0; i < me + 1; i++) s[i] = val(me, it, i);
        for (int i = 0; i < np * (np + 2); i++) r[i] = -1;
        RUN(mode, it, &pgv, MPI_Gatherv_c(s, me + 1, MPI_INT, r, rc, dp, MPI_INT, root, MPI_COMM_WORLD),
            MPI_Igatherv_c(s, me + 1, MPI_INT, r, rc, dp, MPI_INT, root, MPI_COMM_WORLD, &rq_),
            MPI_Gatherv_init_c(s, me + 1, MPI_INT, r, rc, dp, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &pgv));
        if (me == root)
            for (int k = 0; k < np; k++)
                for (int i = 0; i < np + 2; i++) {
                    int want = i < k + 1 ? val(k, it, i) : -1;
                    CHECK(r[k * (np + 2) + i] == want, "%s gatherv_c from %d [%d] = %d, want %d", mname[mode], k,
                          i, r[k * (np + 2) + i], want);
                }
        /* scatter */
        if (me == root)
            for (int k = 0; k < np; k++)
                for (int i = 0; i < n; i++) s[k * n + i] = val(k, it, i);
        for (int i = 0; i < n; i++) r[i] = -1;
        RUN(mode, it, &ps, MPI_Scatter_c(s, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD),
            MPI_Iscatter_c(s, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD, &rq_),
            MPI_Scatter_init_c(s, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &ps));
        for (int i = 0; i < n; i++) CHECK(r[i] == val(me, it, i), "%s scatter_c [%d] = %d", mname[mode], i, r[i]);
        /* scatterv: rank k gets k + 1 ints from displacement k * (np + 2) */
        if (me == root)
            for (int k = 0; k < np; k++)
                for (int i = 0; i < np + 2; i++) s[k * (np + 2) + i] = val(k, it, i);
        for (int i = 0; i < np + 2; i++) r[i] = -1;
        RUN(mode, it, &psv, MPI_Scatterv_c(s, rc, dp, MPI_INT, r, me + 1, MPI_INT, root, MPI_COMM_WORLD),
            MPI_Iscatterv_c(s, rc, dp, MPI_INT, r, me + 1, MPI_INT, root, MPI_COMM_WORLD, &rq_),
            MPI_Scatterv_init_c(s, rc, dp, MPI_INT, r, me + 1, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &psv));
        for (int i = 0; i < np + 2; i++) {
            int want = i < me + 1 ? val(me, it, i) : -1;
            CHECK(r[i] == want, "%s scatterv_c [%d] = %d, want %d", mname[mode], i, r[i], want);
        }
    }
    free(s);
    free(r);
    free(rc);
    free(dp);
}

static void reductions(int mode) {
    int n = 6;
    MPI_Request pa, prsb, prs, psc, pex;
    int *s = malloc(sizeof(int) * 64 * np), *r = malloc(sizeof(int) * 64 * np);
    MPI_Count *rc = malloc(sizeof(MPI_Count) * np);
    int total = 0;
    for (int i = 0; i < np; i++) rc[i] = i + 1, total += i + 1;
    for (int it = 0; it < 2; it++) {
        /* allreduce */
        for (int i = 0; i < n; i++) s[i] = val(me, it, i), r[i] = -1;
        RUN(mode, it, &pa, MPI_Allreduce_c(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
            MPI_Iallreduce_c(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq_),
            MPI_Allreduce_init_c(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &pa));
        for (int i = 0; i < n; i++) {
            int want = 0;
            for (int k = 0; k < np; k++) want += val(k, it, i);
            CHECK(r[i] == want, "%s allreduce_c [%d] = %d, want %d", mname[mode], i, r[i], want);
        }
        /* reduce_scatter_block: n per rank */
        for (int i = 0; i < n * np; i++) s[i] = val(me, it, i);
        for (int i = 0; i < n; i++) r[i] = -1;
        RUN(mode, it, &prsb, MPI_Reduce_scatter_block_c(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
            MPI_Ireduce_scatter_block_c(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq_),
            MPI_Reduce_scatter_block_init_c(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &prsb));
        for (int i = 0; i < n; i++) {
            int want = 0;
            for (int k = 0; k < np; k++) want += val(k, it, me * n + i);
            CHECK(r[i] == want, "%s reduce_scatter_block_c [%d] = %d, want %d", mname[mode], i, r[i], want);
        }
        /* reduce_scatter: rank k gets k + 1 elements */
        for (int i = 0; i < total; i++) s[i] = val(me, it, i);
        for (int i = 0; i < np; i++) r[i] = -1;
        RUN(mode, it, &prs, MPI_Reduce_scatter_c(s, r, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
            MPI_Ireduce_scatter_c(s, r, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq_),
            MPI_Reduce_scatter_init_c(s, r, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &prs));
        int off = me * (me + 1) / 2;
        for (int i = 0; i < me + 1; i++) {
            int want = 0;
            for (int k = 0; k < np; k++) want += val(k, it, off + i);
            CHECK(r[i] == want, "%s reduce_scatter_c [%d] = %d, want %d", mname[mode], i, r[i], want);
        }
        CHECK(me + 1 >= np || r[me + 1] == -1, "%s reduce_scatter_c wrote past its block", mname[mode]);
        /* scan and exscan (MAX of increasing values: the latest rank's) */
        for (int i = 0; i < n; i++) s[i] = val(me, it, i), r[i] = -1;
        RUN(mode, it, &psc, MPI_Scan_c(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
            MPI_Iscan_c(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq_),
            MPI_Scan_init_c(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &psc));
        for (int i = 0; i < n; i++) {
            int want = 0;
            for (int k = 0; k <= me; k++) want += val(k, it, i);
            CHECK(r[i] == want, "%s scan_c [%d] = %d, want %d", mname[mode], i, r[i], want);
        }
        for (int i = 0; i < n; i++) r[i] = -1;
        RUN(mode, it, &pex, MPI_Exscan_c(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
            MPI_Iexscan_c(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq_),
            MPI_Exscan_init_c(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &pex));
        if (me > 0)
            for (int i = 0; i < n; i++) {
                int want = 0;
                for (int k = 0; k < me; k++) want += val(k, it, i);
                CHECK(r[i] == want, "%s exscan_c [%d] = %d, want %d", mname[mode], i, r[i], want);
            }
    }
    free(s);
    free(r);
    free(rc);
}

static void alls(int mode) {
    int n = 4, w = np + 3; /* v-forms: rank k's block k + 1 ints at k * w */
    MPI_Request pag, pagv, pat, patv, patw;
    int *s = malloc(sizeof(int) * 64 * np), *r = malloc(sizeof(int) * 64 * np);
    MPI_Count *rc = malloc(sizeof(MPI_Count) * np), *sc = malloc(sizeof(MPI_Count) * np);
    MPI_Aint *rd = malloc(sizeof(MPI_Aint) * np), *sd = malloc(sizeof(MPI_Aint) * np);
    MPI_Aint *rdb = malloc(sizeof(MPI_Aint) * np), *sdb = malloc(sizeof(MPI_Aint) * np);
    MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * np);
    for (int k = 0; k < np; k++) {
        rc[k] = k + 1;    /* from rank k: k + 1 ints */
        rd[k] = k * w;    /* at k * w */
        sc[k] = me + 1;   /* to every rank: me + 1 ints */
        sd[k] = k * w;    /* from k * w */
        rdb[k] = rd[k] * (MPI_Aint)sizeof(int);
        sdb[k] = sd[k] * (MPI_Aint)sizeof(int);
        ty[k] = MPI_INT;
    }
    for (int it = 0; it < 2; it++) {
        /* allgather */
        for (int i = 0; i < n; i++) s[i] = val(me, it, i);
        for (int i = 0; i < n * np; i++) r[i] = -1;
        RUN(mode, it, &pag, MPI_Allgather_c(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD),
            MPI_Iallgather_c(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD, &rq_),
            MPI_Allgather_init_c(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &pag));
        for (int k = 0; k < np; k++)
            for (int i = 0; i < n; i++)
                CHECK(r[k * n + i] == val(k, it, i), "%s allgather_c from %d [%d] = %d", mname[mode], k, i,
                      r[k * n + i]);
        /* allgatherv */
        for (int i = 0; i < me + 1; i++) s[i] = val(me, it, i);
        for (int i = 0; i < w * np; i++) r[i] = -1;
        RUN(mode, it, &pagv, MPI_Allgatherv_c(s, me + 1, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD),
            MPI_Iallgatherv_c(s, me + 1, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD, &rq_),
            MPI_Allgatherv_init_c(s, me + 1, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &pagv));
        for (int k = 0; k < np; k++)
            for (int i = 0; i < w; i++) {
                int want = i < k + 1 ? val(k, it, i) : -1;
                CHECK(r[k * w + i] == want, "%s allgatherv_c from %d [%d] = %d, want %d", mname[mode], k, i,
                      r[k * w + i], want);
            }
        /* alltoall: block j of my send buffer goes to rank j */
        for (int j = 0; j < np; j++)
            for (int i = 0; i < n; i++) s[j * n + i] = val(me, it, j * 100 + i);
        for (int i = 0; i < n * np; i++) r[i] = -1;
        RUN(mode, it, &pat, MPI_Alltoall_c(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD),
            MPI_Ialltoall_c(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD, &rq_),
            MPI_Alltoall_init_c(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &pat));
        for (int k = 0; k < np; k++)
            for (int i = 0; i < n; i++)
                CHECK(r[k * n + i] == val(k, it, me * 100 + i), "%s alltoall_c from %d [%d] = %d", mname[mode], k,
                      i, r[k * n + i]);
        /* alltoallv and alltoallw: me + 1 ints to every rank from j * w */
        for (int j = 0; j < np; j++)
            for (int i = 0; i < w; i++) s[j * w + i] = val(me, it, j * 100 + i);
        for (int form = 0; form < 2; form++) {
            for (int i = 0; i < w * np; i++) r[i] = -1;
            if (form == 0)
                RUN(mode, it, &patv, MPI_Alltoallv_c(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD),
                    MPI_Ialltoallv_c(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD, &rq_),
                    MPI_Alltoallv_init_c(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                                         &patv));
            else
                RUN(mode, it, &patw, MPI_Alltoallw_c(s, sc, sdb, ty, r, rc, rdb, ty, MPI_COMM_WORLD),
                    MPI_Ialltoallw_c(s, sc, sdb, ty, r, rc, rdb, ty, MPI_COMM_WORLD, &rq_),
                    MPI_Alltoallw_init_c(s, sc, sdb, ty, r, rc, rdb, ty, MPI_COMM_WORLD, MPI_INFO_NULL, &patw));
            for (int k = 0; k < np; k++)
                for (int i = 0; i < w; i++) {
                    int want = i < k + 1 ? val(k, it, me * 100 + i) : -1;
                    CHECK(r[k * w + i] == want, "%s alltoall%c_c from %d [%d] = %d, want %d", mname[mode],
                          form ? 'w' : 'v', k, i, r[k * w + i], want);
                }
        }
    }
    free(s);
    free(r);
    free(rc);
    free(sc);
    free(rd);
    free(sd);
    free(rdb);
    free(sdb);
    free(ty);
}

/* Neighbor forms on a periodic ring: sources and destinations are
 * (left, right); with 1 or 2 ranks they coincide. */
static void neighbors(int mode, MPI_Comm ring) {
    int n = 3, src[2], dst[2];
    MPI_Cart_shift(ring, 0, 1, &src[0], &dst[1]);
    src[1] = dst[1];
    dst[0] = src[0];
    MPI_Request pa, pav, pt, ptv, ptw;
    int s[64], r[64];
    MPI_Count c2[2] = {2, 3}, sc2[2] = {2, 3};
    MPI_Aint d2[2] = {0, 10}, sd2[2] = {0, 10}, db2[2] = {0, 10 * sizeof(int)}, sdb2[2] = {0, 10 * sizeof(int)};
    MPI_Datatype ty2[2] = {MPI_INT, MPI_INT};
    for (int it = 0; it < 2; it++) {
        /* allgather: n ints from each neighbor, in source order */
        for (int i = 0; i < n; i++) s[i] = val(me, it, i);
        for (int i = 0; i < 2 * n; i++) r[i] = -1;
        RUN(mode, it, &pa, MPI_Neighbor_allgather_c(s, n, MPI_INT, r, n, MPI_INT, ring),
            MPI_Ineighbor_allgather_c(s, n, MPI_INT, r, n, MPI_INT, ring, &rq_),
            MPI_Neighbor_allgather_init_c(s, n, MPI_INT, r, n, MPI_INT, ring, MPI_INFO_NULL, &pa));
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < n; i++)
                CHECK(r[k * n + i] == val(src[k], it, i), "%s neighbor_allgather_c from %d [%d] = %d", mname[mode],
                      src[k], i, r[k * n + i]);
        /* allgatherv: 3 ints from each neighbor, at 0 and 10 */
        for (int i = 0; i < 3; i++) s[i] = val(me, it, i);
        for (int i = 0; i < 20; i++) r[i] = -1;
        c2[0] = c2[1] = 3;
        RUN(mode, it, &pav, MPI_Neighbor_allgatherv_c(s, 3, MPI_INT, r, c2, d2, MPI_INT, ring),
            MPI_Ineighbor_allgatherv_c(s, 3, MPI_INT, r, c2, d2, MPI_INT, ring, &rq_),
            MPI_Neighbor_allgatherv_init_c(s, 3, MPI_INT, r, c2, d2, MPI_INT, ring, MPI_INFO_NULL, &pav));
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < 10; i++) {
                int want = i < 3 ? val(src[k], it, i) : -1;
                CHECK(r[k * 10 + i] == want, "%s neighbor_allgatherv_c from %d [%d] = %d, want %d", mname[mode],
                      src[k], i, r[k * 10 + i], want);
            }
        /* alltoall: block k to destination k */
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < n; i++) s[k * n + i] = val(me, it, k * 100 + i);
        for (int i = 0; i < 2 * n; i++) r[i] = -1;
        RUN(mode, it, &pt, MPI_Neighbor_alltoall_c(s, n, MPI_INT, r, n, MPI_INT, ring),
            MPI_Ineighbor_alltoall_c(s, n, MPI_INT, r, n, MPI_INT, ring, &rq_),
            MPI_Neighbor_alltoall_init_c(s, n, MPI_INT, r, n, MPI_INT, ring, MPI_INFO_NULL, &pt));
        /* from the left (source 0) comes its block for its right (1), and
         * the other way round */
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < n; i++)
                CHECK(r[k * n + i] == val(src[k], it, (1 - k) * 100 + i), "%s neighbor_alltoall_c from %d [%d] = %d",
                      mname[mode], src[k], i, r[k * n + i]);
        /* alltoallv / alltoallw: 2 ints to the left from 0, 3 to the right
         * from 10; so 3 come from the left (its right block), 2 from the
         * right */
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < 10; i++) s[k * 10 + i] = val(me, it, k * 100 + i);
        c2[0] = 3;
        c2[1] = 2;
        for (int form = 0; form < 2; form++) {
            for (int i = 0; i < 20; i++) r[i] = -1;
            if (form == 0)
                RUN(mode, it, &ptv, MPI_Neighbor_alltoallv_c(s, sc2, sd2, MPI_INT, r, c2, d2, MPI_INT, ring),
                    MPI_Ineighbor_alltoallv_c(s, sc2, sd2, MPI_INT, r, c2, d2, MPI_INT, ring, &rq_),
                    MPI_Neighbor_alltoallv_init_c(s, sc2, sd2, MPI_INT, r, c2, d2, MPI_INT, ring, MPI_INFO_NULL,
                                                  &ptv));
            else
                RUN(mode, it, &ptw, MPI_Neighbor_alltoallw_c(s, sc2, sdb2, ty2, r, c2, db2, ty2, ring),
                    MPI_Ineighbor_alltoallw_c(s, sc2, sdb2, ty2, r, c2, db2, ty2, ring, &rq_),
                    MPI_Neighbor_alltoallw_init_c(s, sc2, sdb2, ty2, r, c2, db2, ty2, ring, MPI_INFO_NULL, &ptw));
            for (int k = 0; k < 2; k++)
                for (int i = 0; i < 10; i++) {
                    int want = i < (int)c2[k] ? val(src[k], it, (1 - k) * 100 + i) : -1;
                    CHECK(r[k * 10 + i] == want, "%s neighbor_alltoall%c_c from %d [%d] = %d, want %d",
                          mname[mode], form ? 'w' : 'v', src[k], i, r[k * 10 + i], want);
                }
        }
    }
}

/* A persistent v-form whose converted arrays must outlive the init call:
 * set up, then other persistent calls with other arrays are set up and
 * freed (their memory is reused), then it is started twice. */
static void persistent_arrays(void) {
    int w = np + 1;
    int *s = malloc(sizeof(int) * w), *r = malloc(sizeof(int) * w * np);
    MPI_Count *rc = malloc(sizeof(MPI_Count) * np);
    MPI_Aint *rd = malloc(sizeof(MPI_Aint) * np);
    for (int k = 0; k < np; k++) rc[k] = k + 1, rd[k] = k * w;
    MPI_Request p;
    MPI_Allgatherv_init_c(s, me + 1, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &p);
    for (int j = 0; j < 8; j++) {
        MPI_Request q;
        MPI_Count *c = malloc(sizeof(MPI_Count) * np);
        MPI_Aint *d = malloc(sizeof(MPI_Aint) * np);
        for (int k = 0; k < np; k++) c[k] = 1, d[k] = 0;
        MPI_Allgatherv_init_c(s, 1, MPI_INT, r, c, d, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &q);
        MPI_Request_free(&q);
        free(c);
        free(d);
    }
    for (int it = 0; it < 2; it++) {
        for (int i = 0; i < me + 1; i++) s[i] = val(me, it, i);
        for (int i = 0; i < w * np; i++) r[i] = -1;
        MPI_Start(&p);
        MPI_Wait(&p, MPI_STATUS_IGNORE);
        for (int k = 0; k < np; k++)
            for (int i = 0; i < w; i++) {
                int want = i < k + 1 ? val(k, it, i) : -1;
                CHECK(r[k * w + i] == want, "persistent allgatherv_c start %d from %d [%d] = %d, want %d", it, k, i,
                      r[k * w + i], want);
            }
    }
    MPI_Request_free(&p);
    free(s);
    free(r);
    free(rc);
    free(rd);
}

static void errors(void) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int buf[4] = {0}, cls, rc;
    MPI_Count huge = (MPI_Count)1 << 33;
    /* Bcast_c, Reduce_c and Allreduce_c take counts above 2^31 - 1
       (coll_huge_c), up to 2^51 elements. */
    rc = MPI_Bcast_c(buf, (MPI_Count)1 << 52, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "bcast_c of 2^52 ints: class %d, want MPI_ERR_COUNT", cls);
    rc = MPI_Allreduce_c(buf, buf + 2, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "allreduce_c of -1 ints: class %d, want MPI_ERR_COUNT", cls);
    MPI_Count *c = calloc(np, sizeof(MPI_Count));
    MPI_Aint *d = calloc(np, sizeof(MPI_Aint));
    /* The v forms take counts and displacements above 2^31 - 1
       (coll_huge_v_c); beyond the address space they are refused. */
    MPI_Count beyond = (MPI_Count)1 << 62;
    c[np - 1] = beyond;
    rc = MPI_Allgatherv_c(buf, 0, MPI_INT, buf, c, d, MPI_INT, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "allgatherv_c with recvcounts[%d] = 2^62: class %d, want MPI_ERR_COUNT", np - 1,
          cls);
    c[np - 1] = 0;
    d[0] = beyond;
    rc = MPI_Allgatherv_c(buf, 0, MPI_INT, buf, c, d, MPI_INT, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "allgatherv_c with displs[0] = 2^62: class %d, want MPI_ERR_ARG", cls);
    MPI_Request q;
    /* Iallgather_c takes counts above 2^31 - 1 too (coll_huge_c), up to
       2^51 elements. */
    rc = MPI_Iallgather_c(buf, (MPI_Count)1 << 52, MPI_INT, buf, 1, MPI_INT, MPI_COMM_WORLD, &q);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "iallgather_c of 2^52: class %d, want MPI_ERR_COUNT", cls);
    /* Reduce_local_c takes counts above 2^31 - 1 (coll_huge_v_c) */
    rc = MPI_Reduce_local_c(buf, buf + 2, -huge, MPI_INT, MPI_SUM);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "reduce_local_c of -2^33: class %d, want MPI_ERR_COUNT", cls);
    /* the calls above failed before any communication: the next works */
    int a[3] = {1, 2, 3}, b[3] = {0};
    CHECK(MPI_Reduce_local_c(a, b, 3, MPI_INT, MPI_SUM) == MPI_SUCCESS && b[0] == 1 && b[2] == 3,
          "reduce_local_c: %d %d %d", b[0], b[1], b[2]);
    CHECK(MPI_Allreduce_c(a, b, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD) == MPI_SUCCESS && b[2] == 3,
          "allreduce_c after the errors: %d", b[2]);
    free(c);
    free(d);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    test_rank = me;
    const char *fatal = getenv("OXMPI_TEST_FATAL");
    if (fatal && atoi(fatal)) {
        int x = 0;
        MPI_Bcast_c(&x, (MPI_Count)1 << 52, MPI_INT, 0, MPI_COMM_WORLD);
        CHECK(0, "bcast_c of 2^52 ints returned under MPI_ERRORS_ARE_FATAL");
    }
    int dims[1] = {np}, periods[1] = {1};
    MPI_Comm ring;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    for (int mode = 0; mode < 3; mode++) {
        rooted(mode);
        reductions(mode);
        alls(mode);
        neighbors(mode, ring);
    }
    persistent_arrays();
    errors();
    MPI_Comm_free(&ring);
    MPI_Finalize();
    if (me == 0) printf("coll_bigcount ok\n");
    return 0;
}
