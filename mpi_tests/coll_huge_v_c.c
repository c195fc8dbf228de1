/* Counts and displacements above 2^31 - 1 in the v and w collectives'
 * large-count forms. Displacements past 2^31 place small blocks far into
 * receive buffers that are reserved but touched only where data lands
 * (MPI_Gatherv_c, MPI_Scatterv_c, MPI_Allgatherv_c, MPI_Alltoallv_c,
 * MPI_Ialltoallv_c, MPI_Allgatherv_init_c started twice,
 * MPI_Neighbor_alltoallv_c, MPI_Alltoallw_c with byte displacements);
 * counts past 2^31 move 2^31 + 10 bytes from the last rank to rank 0
 * (MPI_Gatherv_c, MPI_Alltoallw_c); MPI_Reduce_scatter_c checks its
 * sums; MPI_Reduce_local_c reduces 2^31 + 10 bytes with MPI_SUM and a
 * user op. Every received byte that is looked at is checked. */
#include "util.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define G ((MPI_Count)1 << 31)
#define B 16 /* bytes per small block */

static MPI_Count max_len = 0;
static void xor_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt) {
    (void)dt;
    if (*len > max_len) max_len = *len;
    for (MPI_Count i = 0; i < *len; i++) ((signed char *)inout)[i] ^= ((signed char *)in)[i];
}

static unsigned char tagbyte(int from, int to, int i) { return (unsigned char)(from * 40 + to * 7 + i + 1); }

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    /* Block r of a far buffer lies at r * (G + 8): every displacement but
       the first is past 2^31. */
    const MPI_Count stride = G + 8;
    unsigned char *far = malloc((size_t)(stride * size + B));
    unsigned char *near = malloc((size_t)B * size);
    CHECK(far && near, "reserving %lld bytes", (long long)(stride * size + B));
    MPI_Count *cnt = malloc(sizeof(MPI_Count) * size), *dsp = malloc(sizeof(MPI_Count) * size);
    MPI_Aint *adsp = malloc(sizeof(MPI_Aint) * size);
    MPI_Count *ncnt = malloc(sizeof(MPI_Count) * size), *ndsp = malloc(sizeof(MPI_Aint) * size);
    for (int r = 0; r < size; r++) {
        cnt[r] = B;
        dsp[r] = r * stride;
        adsp[r] = (MPI_Aint)(r * stride);
        ncnt[r] = B;
        ndsp[r] = r * B;
    }
    unsigned char mine[B];
    for (int i = 0; i < B; i++) mine[i] = tagbyte(rank, 0, i);

    /* Gatherv_c to root 0 at far displacements */
    if (rank == 0)
        for (int r = 0; r < size; r++) memset(far + r * stride, 0, B);
    CHECK(MPI_Gatherv_c(mine, B, MPI_CHAR, far, cnt, adsp, MPI_CHAR, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "gatherv_c");
    if (rank == 0)
        for (int r = 0; r < size; r++)
            for (int i = 0; i < B; i++)
                CHECK(far[r * stride + i] == tagbyte(r, 0, i), "gatherv_c: block %d byte %d is %d", r, i,
                      far[r * stride + i]);

    /* Scatterv_c from root 0's far blocks */
    if (rank == 0)
        for (int r = 0; r < size; r++)
            for (int i = 0; i < B; i++) far[r * stride + i] = tagbyte(0, r, i);
    unsigned char got[B] = {0};
    CHECK(MPI_Scatterv_c(far, cnt, adsp, MPI_CHAR, got, B, MPI_CHAR, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "scatterv_c");
    for (int i = 0; i < B; i++) CHECK(got[i] == tagbyte(0, rank, i), "scatterv_c byte %d is %d", i, got[i]);

    /* Allgatherv_c, and its persistent form started twice */
    for (int r = 0; r < size; r++) memset(far + r * stride, 0, B);
    CHECK(MPI_Allgatherv_c(mine, B, MPI_CHAR, far, cnt, adsp, MPI_CHAR, MPI_COMM_WORLD) == MPI_SUCCESS,
          "allgatherv_c");
    for (int r = 0; r < size; r++)
        for (int i = 0; i < B; i++)
            CHECK(far[r * stride + i] == tagbyte(r, 0, i), "allgatherv_c: block %d byte %d", r, i);
    MPI_Request req;
    CHECK(MPI_Allgatherv_init_c(mine, B, MPI_CHAR, far, cnt, adsp, MPI_CHAR, MPI_COMM_WORLD, MPI_INFO_NULL, &req) ==
              MPI_SUCCESS,
          "allgatherv_init_c");
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < B; i++) mine[i] = (unsigned char)(tagbyte(rank, 0, i) + 100 * (round + 1));
        for (int r = 0; r < size; r++) memset(far + r * stride, 0, B);
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int r = 0; r < size; r++)
            for (int i = 0; i < B; i++)
                CHECK(far[r * stride + i] == (unsigned char)(tagbyte(r, 0, i) + 100 * (round + 1)),
                      "allgatherv_init_c round %d: block %d byte %d", round, r, i);
    }
    MPI_Request_free(&req);

    /* Alltoallv_c: rank s's block for rank d goes from far (sender side)
       to far (receiver side), both at displacement d or s * stride; then
       the nonblocking form, sending from a near buffer. */
    for (int d = 0; d < size; d++)
        for (int i = 0; i < B; i++) far[d * stride + i] = tagbyte(rank, d, i);
    unsigned char *rfar = malloc((size_t)(stride * size + B));
    CHECK(rfar != NULL, "reserving the receive side");
    CHECK(MPI_Alltoallv_c(far, cnt, adsp, MPI_CHAR, rfar, cnt, adsp, MPI_CHAR, MPI_COMM_WORLD) == MPI_SUCCESS,
          "alltoallv_c");
    for (int s = 0; s < size; s++)
        for (int i = 0; i < B; i++)
            CHECK(rfar[s * stride + i] == tagbyte(s, rank, i), "alltoallv_c: from %d byte %d is %d", s, i,
                  rfar[s * stride + i]);
    for (int d = 0; d < size; d++)
        for (int i = 0; i < B; i++) near[d * B + i] = (unsigned char)(tagbyte(rank, d, i) ^ 0x55);
    for (int s = 0; s < size; s++) memset(rfar + s * stride, 0, B);
    MPI_Aint *nadsp = malloc(sizeof(MPI_Aint) * size);
    for (int r = 0; r < size; r++) nadsp[r] = r * B;
    CHECK(MPI_Ialltoallv_c(near, ncnt, nadsp, MPI_CHAR, rfar, cnt, adsp, MPI_CHAR, MPI_COMM_WORLD, &req) ==
              MPI_SUCCESS,
          "ialltoallv_c");
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int s = 0; s < size; s++)
        for (int i = 0; i < B; i++)
            CHECK(rfar[s * stride + i] == (unsigned char)(tagbyte(s, rank, i) ^ 0x55), "ialltoallv_c: from %d byte %d",
                  s, i);

    /* Alltoallw_c with byte displacements past 2^31 (the far blocks, as MPI_INT) */
    {
        MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * size);
        MPI_Count *wc = malloc(sizeof(MPI_Count) * size);
        for (int r = 0; r < size; r++) {
            ty[r] = MPI_INT;
            wc[r] = B / 4;
        }
        for (int d = 0; d < size; d++)
            for (int i = 0; i < B; i++) far[d * stride + i] = (unsigned char)(tagbyte(rank, d, i) + 3);
        for (int s = 0; s < size; s++) memset(rfar + s * stride, 0, B);
        CHECK(MPI_Alltoallw_c(far, wc, adsp, ty, rfar, wc, adsp, ty, MPI_COMM_WORLD) == MPI_SUCCESS, "alltoallw_c");
        for (int s = 0; s < size; s++)
            for (int i = 0; i < B; i++)
                CHECK(rfar[s * stride + i] == (unsigned char)(tagbyte(s, rank, i) + 3), "alltoallw_c: from %d byte %d",
                      s, i);
        free(ty);
        free(wc);
    }

    /* Neighbor_alltoallv_c on a ring: one block to each side, received at
       far displacements (0 and stride). */
    {
        MPI_Comm ring;
        int dims[1] = {size}, periods[1] = {1};
        MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
        int lo, hi;
        MPI_Cart_shift(ring, 0, 1, &lo, &hi);
        MPI_Count c2[2] = {B, B};
        MPI_Aint sd[2] = {0, B}, rd[2] = {0, (MPI_Aint)stride};
        for (int i = 0; i < B; i++) {
            near[i] = tagbyte(rank, lo, i);     /* to the lower neighbour */
            near[B + i] = tagbyte(rank, hi, i); /* to the upper one */
        }
        memset(rfar, 0, B);
        memset(rfar + stride, 0, B);
        CHECK(MPI_Neighbor_alltoallv_c(near, c2, sd, MPI_CHAR, rfar, c2, rd, MPI_CHAR, ring) == MPI_SUCCESS,
              "neighbor_alltoallv_c");
        /* block 0 comes from the lower neighbour (what it sent up), block 1 from the upper */
        for (int i = 0; i < B; i++) {
            CHECK(rfar[i] == tagbyte(lo, rank, i), "neighbor_alltoallv_c: from below byte %d is %d", i, rfar[i]);
            CHECK(rfar[stride + i] == tagbyte(hi, rank, i), "neighbor_alltoallv_c: from above byte %d", i);
        }
        MPI_Comm_free(&ring);
    }

    /* Reduce_scatter_c: rank r gets r + 1 ints, the sum of every rank's (k + 1) * (j + 1) */
    {
        MPI_Count total = 0;
        MPI_Count *rc = malloc(sizeof(MPI_Count) * size);
        for (int r = 0; r < size; r++) total += rc[r] = r + 1;
        int *in = malloc(sizeof(int) * total), out[64];
        for (MPI_Count j = 0; j < total; j++) in[j] = (rank + 1) * (int)(j + 1);
        CHECK(MPI_Reduce_scatter_c(in, out, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "reduce_scatter_c");
        MPI_Count first = (MPI_Count)rank * (rank + 1) / 2;
        int ranks_sum = size * (size + 1) / 2;
        for (int j = 0; j <= rank; j++)
            CHECK(out[j] == ranks_sum * (int)(first + j + 1), "reduce_scatter_c element %d is %d", j, out[j]);
        free(in);
        free(rc);
    }

    /* Counts past 2^31: the last rank sends 2^31 + 10 bytes to rank 0 by
       MPI_Gatherv_c, then back by MPI_Alltoallw_c (everyone else sends
       and receives nothing). */
    {
        const MPI_Count n = G + 10;
        const int last = size - 1;
        unsigned char *big = NULL;
        int ok = 1, all;
        if (rank == 0 || rank == last) {
            big = malloc((size_t)n);
            ok = big != NULL;
        }
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all) {
            if (rank == 0) printf("2^31 + 10 byte blocks: skipped (no memory)\n");
        } else {
            if (rank == last) {
                for (size_t i = 0; i < (size_t)n; i += 4096) big[i] = (unsigned char)(i >> 12);
                big[n - 1] = 0x6b;
            } else if (rank == 0) {
                memset(big, 0, (size_t)n);
            }
            for (int r = 0; r < size; r++) {
                cnt[r] = r == last ? n : 0;
                adsp[r] = 0;
            }
            unsigned char dummy = 0;
            CHECK(MPI_Gatherv_c(rank == last ? big : &dummy, rank == last ? n : 0, MPI_CHAR, big, cnt, adsp, MPI_CHAR, 0,
                                MPI_COMM_WORLD) ==
                      MPI_SUCCESS,
                  "gatherv_c of 2^31 + 10 bytes");
            if (rank == 0) {
                int bad = 0;
                for (size_t i = 0; i < (size_t)n && !bad; i += 4096)
                    if (big[i] != (unsigned char)(i >> 12)) bad = 1;
                CHECK(!bad && big[n - 1] == 0x6b, "gatherv_c of 2^31 + 10 bytes: contents");
                big[0] = 0x11;
                big[n - 1] = 0x22;
            } else if (rank == last) {
                memset(big, 0, (size_t)n);
            }
            MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * size);
            MPI_Count *sc = malloc(sizeof(MPI_Count) * size), *rc = malloc(sizeof(MPI_Count) * size);
            for (int r = 0; r < size; r++) {
                ty[r] = MPI_BYTE;
                sc[r] = rank == 0 && r == last ? n : 0;
                rc[r] = rank == last && r == 0 ? n : 0;
                adsp[r] = 0;
            }
            CHECK(MPI_Alltoallw_c(rank == 0 ? big : &dummy, sc, adsp, ty, rank == last ? big : &dummy, rc, adsp, ty,
                                  MPI_COMM_WORLD) == MPI_SUCCESS,
                  "alltoallw_c of 2^31 + 10 bytes");
            if (rank == last) {
                int bad = 0;
                for (size_t i = 4096; i < (size_t)n - 1 && !bad; i += 4096)
                    if (big[i] != (unsigned char)(i >> 12)) bad = 1;
                CHECK(!bad && big[0] == 0x11 && big[n - 1] == 0x22, "alltoallw_c of 2^31 + 10 bytes: contents");
            }
            free(ty);
            free(sc);
            free(rc);
        }
        free(big);
    }

    /* Reduce_local_c of 2^31 + 10 MPI_INT8_T (rank 0), with MPI_SUM and
       with a user op (which sees pieces of at most 2^31 - 1 elements) */
    if (rank == 0) {
        const MPI_Count n = G + 10;
        signed char *a = malloc((size_t)n), *b = malloc((size_t)n);
        if (a && b) {
            memset(a, 3, (size_t)n);
            memset(b, 4, (size_t)n);
            a[n - 1] = 5;
            CHECK(MPI_Reduce_local_c(a, b, n, MPI_INT8_T, MPI_SUM) == MPI_SUCCESS, "reduce_local_c");
            CHECK(b[0] == 7 && b[n / 2] == 7 && b[n - 2] == 7 && b[n - 1] == 9, "reduce_local_c: %d %d %d", b[0],
                  b[n / 2], b[n - 1]);
            MPI_Op op;
            MPI_Op_create_c(xor_c, 1, &op);
            CHECK(MPI_Reduce_local_c(a, b, n, MPI_INT8_T, op) == MPI_SUCCESS, "reduce_local_c with a user op");
            CHECK(b[0] == (7 ^ 3) && b[n - 2] == (7 ^ 3) && b[n - 1] == (9 ^ 5) && max_len < G,
                  "reduce_local_c with a user op: %d %d, longest piece %lld", b[0], b[n - 1], (long long)max_len);
            MPI_Op_free(&op);
        } else {
            printf("reduce_local_c of 2^31 + 10: skipped (no memory)\n");
        }
        free(a);
        free(b);
    }

    free(rfar);
    free(far);
    free(near);
    free(cnt);
    free(dsp);
    free(adsp);
    free(nadsp);
    free(ncnt);
    free(ndsp);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("coll_huge_v_c: OK\n");
    MPI_Finalize();
    return 0;
}
