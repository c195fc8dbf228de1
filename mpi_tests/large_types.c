/* The MPI-4 large-count forms of the datatype constructors (as mpi4py 4
 * builds every derived type), the envelope and contents queries in the
 * standard's large-count layout, MPI_Op_create_c (the function's len is an
 * MPI_Count), pack/unpack and the Bsend buffer: each gives what its int
 * form gives, and counts, strides, displacements and positions beyond an
 * int work (int queries that cannot hold the answer say so). */
#include "util.h"

static int same_type(MPI_Datatype a, MPI_Datatype b, const char *what) {
    MPI_Type_commit(&a);
    MPI_Type_commit(&b);
    int sa, sb;
    MPI_Aint la, ea, lb, eb, tla, tea, tlb, teb;
    MPI_Type_size(a, &sa);
    MPI_Type_size(b, &sb);
    MPI_Type_get_extent(a, &la, &ea);
    MPI_Type_get_extent(b, &lb, &eb);
    MPI_Type_get_true_extent(a, &tla, &tea);
    MPI_Type_get_true_extent(b, &tlb, &teb);
    CHECK(sa == sb && la == lb && ea == eb && tla == tlb && tea == teb,
          "%s: size %d/%d lb %ld/%ld extent %ld/%ld", what, sa, sb, (long)la, (long)lb, (long)ea, (long)eb);
    /* same pack stream of a patterned buffer */
    char src[4096];
    for (int i = 0; i < 4096; i++) src[i] = (char)(i * 7 + 3);
    char pa[2048], pb[2048];
    int qa = 0, qb = 0;
    MPI_Pack(src + 1024, 2, a, pa, sizeof pa, &qa, MPI_COMM_SELF);
    MPI_Pack(src + 1024, 2, b, pb, sizeof pb, &qb, MPI_COMM_SELF);
    CHECK(qa == qb && memcmp(pa, pb, qa) == 0, "%s: packed streams differ", what);
    return 1;
}

/* the large-count envelope: (ni, na, nc, nd, combiner) */
static void envelope_is(MPI_Datatype t, MPI_Count ni, MPI_Count na, MPI_Count nc, MPI_Count nd, int comb,
                        const char *what) {
    MPI_Count i, a, c, d;
    int k;
    MPI_Type_get_envelope_c(t, &i, &a, &c, &d, &k);
    CHECK(i == ni && a == na && c == nc && d == nd && k == comb,
          "%s: envelope_c (%lld, %lld, %lld, %lld, %d), want (%lld, %lld, %lld, %lld, %d)", what, (long long)i,
          (long long)a, (long long)c, (long long)d, k, (long long)ni, (long long)na, (long long)nc, (long long)nd, comb);
}

static int op_calls;
static void sum_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt) {
    op_calls++;
    CHECK(*dt == MPI_INT && *len >= 0 && *len <= 100, "MPI_Op_create_c function: len %lld", (long long)*len);
    for (MPI_Count i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    MPI_Datatype a, b;

    MPI_Type_contiguous_c(5, MPI_INT, &a);
    MPI_Type_contiguous(5, MPI_INT, &b);
    same_type(a, b, "contiguous");
    envelope_is(a, 0, 0, 1, 1, MPI_COMBINER_CONTIGUOUS, "contiguous_c");
    envelope_is(b, 1, 0, 0, 1, MPI_COMBINER_CONTIGUOUS, "contiguous (int form)");
    MPI_Type_free(&a);
    MPI_Type_free(&b);

    MPI_Type_vector_c(3, 2, -4, MPI_SHORT, &a);
    MPI_Type_vector(3, 2, -4, MPI_SHORT, &b);
    same_type(a, b, "vector with a negative stride");
    envelope_is(a, 0, 0, 3, 1, MPI_COMBINER_VECTOR, "vector_c");
    {
        int ints[1];
        MPI_Aint addrs[1];
        MPI_Count lc[3];
        MPI_Datatype ts[1];
        MPI_Type_get_contents_c(a, 0, 0, 3, 1, ints, addrs, lc, ts);
        CHECK(lc[0] == 3 && lc[1] == 2 && lc[2] == -4 && ts[0] == MPI_SHORT, "vector_c contents %lld %lld %lld",
              (long long)lc[0], (long long)lc[1], (long long)lc[2]);
    }
    MPI_Type_free(&a);
    MPI_Type_free(&b);

    MPI_Type_create_hvector_c(3, 1, 24, MPI_DOUBLE, &a);
    MPI_Type_create_hvector(3, 1, 24, MPI_DOUBLE, &b);
    same_type(a, b, "hvector");
    envelope_is(a, 0, 0, 3, 1, MPI_COMBINER_HVECTOR, "hvector_c");
    MPI_Type_free(&a);
    MPI_Type_free(&b);

    {
        MPI_Count blc[3] = {1, 3, 2}, dlc[3] = {0, 5, 12};
        int bl[3] = {1, 3, 2}, dl[3] = {0, 5, 12};
        MPI_Aint da[3] = {0, 40, 96};
        MPI_Count dac[3] = {0, 40, 96};
        MPI_Type_indexed_c(3, blc, dlc, MPI_INT, &a);
        MPI_Type_indexed(3, bl, dl, MPI_INT, &b);
        same_type(a, b, "indexed");
        envelope_is(a, 0, 0, 7, 1, MPI_COMBINER_INDEXED, "indexed_c");
        MPI_Type_free(&a);
        MPI_Type_free(&b);
        MPI_Type_create_hindexed_c(3, blc, dac, MPI_INT, &a);
        MPI_Type_create_hindexed(3, bl, da, MPI_INT, &b);
        same_type(a, b, "hindexed");
        envelope_is(a, 0, 0, 7, 1, MPI_COMBINER_HINDEXED, "hindexed_c");
        {
            MPI_Count lc[7];
            int ints[1];
            MPI_Aint addrs[1];
            MPI_Datatype ts[1];
            MPI_Type_get_contents_c(a, 0, 0, 7, 1, ints, addrs, lc, ts);
            CHECK(lc[0] == 3 && lc[1] == 1 && lc[3] == 2 && lc[4] == 0 && lc[5] == 40 && lc[6] == 96,
                  "hindexed_c contents");
        }
        MPI_Type_free(&a);
        MPI_Type_free(&b);
        MPI_Type_create_indexed_block_c(3, 2, dlc, MPI_INT, &a);
        MPI_Type_create_indexed_block(3, 2, dl, MPI_INT, &b);
        same_type(a, b, "indexed_block");
        envelope_is(a, 0, 0, 5, 1, MPI_COMBINER_INDEXED_BLOCK, "indexed_block_c");
        MPI_Type_free(&a);
        MPI_Type_free(&b);
        MPI_Type_create_hindexed_block_c(3, 2, dac, MPI_INT, &a);
        MPI_Type_create_hindexed_block(3, 2, da, MPI_INT, &b);
        same_type(a, b, "hindexed_block");
        envelope_is(a, 0, 0, 5, 1, MPI_COMBINER_HINDEXED_BLOCK, "hindexed_block_c");
        MPI_Type_free(&a);
        MPI_Type_free(&b);
        MPI_Datatype ts[3] = {MPI_CHAR, MPI_INT, MPI_DOUBLE};
        MPI_Type_create_struct_c(3, blc, dac, ts, &a);
        MPI_Type_create_struct(3, bl, da, ts, &b);
        same_type(a, b, "struct");
        envelope_is(a, 0, 0, 7, 3, MPI_COMBINER_STRUCT, "struct_c");
        MPI_Type_free(&a);
        MPI_Type_free(&b);
    }
    MPI_Type_create_resized_c(MPI_INT, -4, 16, &a);
    MPI_Type_create_resized(MPI_INT, -4, 16, &b);
    same_type(a, b, "resized");
    envelope_is(a, 0, 0, 2, 1, MPI_COMBINER_RESIZED, "resized_c");
    MPI_Type_free(&a);
    MPI_Type_free(&b);
    {
        MPI_Count szc[2] = {6, 5}, subc[2] = {2, 3}, stc[2] = {1, 2};
        int sz[2] = {6, 5}, sub[2] = {2, 3}, st[2] = {1, 2};
        MPI_Type_create_subarray_c(2, szc, subc, stc, MPI_ORDER_C, MPI_INT, &a);
        MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &b);
        same_type(a, b, "subarray");
        envelope_is(a, 2, 0, 6, 1, MPI_COMBINER_SUBARRAY, "subarray_c");
        {
            int ints[2];
            MPI_Aint addrs[1];
            MPI_Count lc[6];
            MPI_Datatype t1[1];
            MPI_Type_get_contents_c(a, 2, 0, 6, 1, ints, addrs, lc, t1);
            CHECK(ints[0] == 2 && ints[1] == MPI_ORDER_C && lc[0] == 6 && lc[3] == 3 && lc[5] == 2, "subarray_c contents");
        }
        MPI_Type_free(&a);
        MPI_Type_free(&b);
        MPI_Count gc[2] = {8, 6};
        int g[2] = {8, 6}, distr[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
        int darg[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {1, 1};
        MPI_Type_create_darray_c(1, 0, 2, gc, distr, darg, ps, MPI_ORDER_C, MPI_INT, &a);
        MPI_Type_create_darray(1, 0, 2, g, distr, darg, ps, MPI_ORDER_C, MPI_INT, &b);
        same_type(a, b, "darray");
        envelope_is(a, 3 * 2 + 4, 0, 2, 1, MPI_COMBINER_DARRAY, "darray_c");
        MPI_Type_free(&a);
        MPI_Type_free(&b);
    }

    /* MPI_Op_create_c: a user function with an MPI_Count len */
    {
        MPI_Op op;
        MPI_Op_create_c(sum_c, 1, &op);
        int x[10], y[10];
        for (int i = 0; i < 10; i++) x[i] = rank + i;
        MPI_Allreduce(x, y, 10, MPI_INT, op, MPI_COMM_WORLD);
        CHECK(op_calls > 0 || size == 1, "the large-count function was not called");
        for (int i = 0; i < 10; i++)
            CHECK(y[i] == size * i + size * (size - 1) / 2, "allreduce with an MPI_Op_create_c op: y[%d]=%d", i, y[i]);
        int a1[4] = {1, 2, 3, 4}, a2[4] = {10, 20, 30, 40};
        MPI_Reduce_local(a1, a2, 4, MPI_INT, op);
        CHECK(a2[0] == 11 && a2[3] == 44, "MPI_Reduce_local with an MPI_Op_create_c op: %d %d", a2[0], a2[3]);
        MPI_Op_free(&op);
    }

    /* pack / unpack, sizes */
    {
        int v[6] = {1, 2, 3, 4, 5, 6}, w[6] = {0};
        char buf[256];
        MPI_Count pos = 0, psz = 0;
        MPI_Pack_size_c(6, MPI_INT, MPI_COMM_WORLD, &psz);
        CHECK(psz >= 24, "MPI_Pack_size_c %lld", (long long)psz);
        MPI_Pack_c(v, 6, MPI_INT, buf, sizeof buf, &pos, MPI_COMM_WORLD);
        CHECK(pos == 24, "MPI_Pack_c position %lld", (long long)pos);
        pos = 0;
        MPI_Unpack_c(buf, 24, &pos, w, 6, MPI_INT, MPI_COMM_WORLD);
        CHECK(pos == 24 && w[5] == 6, "MPI_Unpack_c");
        MPI_Count es = 0;
        MPI_Pack_external_size_c("external32", 6, MPI_INT, &es);
        CHECK(es == 24, "MPI_Pack_external_size_c %lld", (long long)es);
        pos = 0;
        MPI_Pack_external_c("external32", v, 6, MPI_INT, buf, sizeof buf, &pos);
        CHECK(pos == 24 && buf[3] == 1 && buf[0] == 0, "MPI_Pack_external_c is big-endian");
        memset(w, 0, sizeof w);
        pos = 0;
        MPI_Unpack_external_c("external32", buf, 24, &pos, w, 6, MPI_INT);
        CHECK(pos == 24 && w[0] == 1 && w[5] == 6, "MPI_Unpack_external_c");
    }

    /* Bsend buffer */
    {
        int bsz = 1 << 16;
        char *b0 = malloc(bsz);
        MPI_Buffer_attach_c(b0, bsz);
        int to = (rank + 1) % size, from = (rank + size - 1) % size, x = rank, y = -1;
        MPI_Bsend(&x, 1, MPI_INT, to, 3, MPI_COMM_WORLD);
        MPI_Recv(&y, 1, MPI_INT, from, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(y == from, "Bsend through MPI_Buffer_attach_c");
        void *back;
        MPI_Count got = 0;
        MPI_Buffer_detach_c(&back, &got);
        CHECK(back == b0 && got == bsz, "MPI_Buffer_detach_c gives %p %lld", back, (long long)got);
        free(b0);
    }

    /* Beyond an int. The buffers are reserved, not touched but for the
     * bytes a type names, so they cost the pages they use. */
    {
        const MPI_Count G = (MPI_Count)1 << 31;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        int e, c;

        /* 2^33 ints: size and extent 2^35, one large count in the envelope */
        MPI_Datatype big;
        CHECK(MPI_Type_contiguous_c((MPI_Count)1 << 33, MPI_INT, &big) == MPI_SUCCESS, "contiguous_c 2^33");
        MPI_Type_commit(&big);
        MPI_Count sz, lb, ext;
        MPI_Type_size_c(big, &sz);
        MPI_Type_get_extent_c(big, &lb, &ext);
        CHECK(sz == (MPI_Count)1 << 35 && lb == 0 && ext == (MPI_Count)1 << 35,
              "contiguous_c of 2^33 ints: size %lld extent %lld", (long long)sz, (long long)ext);
        int isz = 0;
        MPI_Type_size(big, &isz);
        CHECK(isz == MPI_UNDEFINED, "MPI_Type_size of 2^35 bytes gives %d, want MPI_UNDEFINED", isz);
        envelope_is(big, 0, 0, 1, 1, MPI_COMBINER_CONTIGUOUS, "contiguous_c 2^33");
        MPI_Count lc[1] = {0};
        MPI_Datatype dt1[1];
        MPI_Type_get_contents_c(big, 0, 0, 1, 1, NULL, NULL, lc, dt1);
        CHECK(lc[0] == (MPI_Count)1 << 33 && dt1[0] == MPI_INT, "contents_c gives %lld", (long long)lc[0]);
        {
            int ni, na, nd, comb, iv[1];
            MPI_Aint av[1];
            MPI_Datatype tv[1];
            MPI_Type_get_envelope(big, &ni, &na, &nd, &comb);
            e = MPI_Type_get_contents(big, ni, na, nd, iv, av, tv);
            MPI_Error_class(e, &c);
            CHECK(c == MPI_ERR_VALUE_TOO_LARGE, "int MPI_Type_get_contents of a 2^33 count: class %d", c);
        }
        MPI_Count psz = 0;
        MPI_Pack_size_c((MPI_Count)1 << 33, MPI_INT, MPI_COMM_WORLD, &psz);
        CHECK(psz == (MPI_Count)1 << 35, "MPI_Pack_size_c of 2^33 ints: %lld", (long long)psz);
        int ipsz = -7;
        e = MPI_Pack_size(1 << 30, MPI_INT, MPI_COMM_WORLD, &ipsz);
        MPI_Error_class(e, &c);
        CHECK(c == MPI_ERR_VALUE_TOO_LARGE && ipsz == -7, "int MPI_Pack_size of 2^32 bytes: class %d", c);
        MPI_Type_free(&big);

        /* a vector whose stride is beyond an int, packed and unpacked */
        char *far = malloc((size_t)(2 * G + 64));
        CHECK(far != NULL, "reserving 4 GiB");
        MPI_Datatype vec;
        MPI_Type_vector_c(3, 4, G + 5, MPI_CHAR, &vec);
        MPI_Type_commit(&vec);
        MPI_Type_size_c(vec, &sz);
        MPI_Type_get_extent_c(vec, &lb, &ext);
        CHECK(sz == 12 && ext == 2 * (G + 5) + 4, "vector_c stride 2^31+5: size %lld extent %lld", (long long)sz,
              (long long)ext);
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < 4; j++) far[k * (G + 5) + j] = (char)(10 * k + j + 1);
        char packed[16];
        MPI_Count pos = 0;
        CHECK(MPI_Pack_c(far, 1, vec, packed, sizeof packed, &pos, MPI_COMM_SELF) == MPI_SUCCESS && pos == 12,
              "MPI_Pack_c of the wide vector: position %lld", (long long)pos);
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < 4; j++)
                CHECK(packed[4 * k + j] == (char)(10 * k + j + 1), "wide vector packed byte %d", 4 * k + j);
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < 4; j++) far[k * (G + 5) + j] = 0;
        pos = 0;
        MPI_Unpack_c(packed, 12, &pos, far, 1, vec, MPI_COMM_SELF);
        CHECK(pos == 12 && far[0] == 1 && far[G + 5] == 11 && far[2 * (G + 5) + 3] == 24,
              "MPI_Unpack_c of the wide vector");
        MPI_Count vlc[3];
        MPI_Type_get_contents_c(vec, 0, 0, 3, 1, NULL, NULL, vlc, dt1);
        CHECK(vlc[0] == 3 && vlc[1] == 4 && vlc[2] == G + 5, "vector_c contents");
        MPI_Type_free(&vec);

        /* indexed with a displacement beyond an int, and a subarray */
        MPI_Count bls[2] = {2, 3}, dsp[2] = {1, G + 3};
        MPI_Datatype idx;
        MPI_Type_indexed_c(2, bls, dsp, MPI_CHAR, &idx);
        MPI_Type_commit(&idx);
        MPI_Count tlb, text;
        MPI_Type_get_true_extent_c(idx, &tlb, &text);
        CHECK(tlb == 1 && text == G + 5, "indexed_c true extent %lld %lld", (long long)tlb, (long long)text);
        memcpy(far + 1, "ab", 2);
        memcpy(far + G + 3, "cde", 3);
        pos = 0;
        MPI_Pack_c(far, 1, idx, packed, sizeof packed, &pos, MPI_COMM_SELF);
        CHECK(pos == 5 && memcmp(packed, "abcde", 5) == 0, "indexed_c packs its two blocks");
        MPI_Type_free(&idx);
        MPI_Count sizes[1] = {G + 8}, subs[1] = {4}, starts[1] = {G + 2};
        MPI_Datatype sub;
        MPI_Type_create_subarray_c(1, sizes, subs, starts, MPI_ORDER_C, MPI_CHAR, &sub);
        MPI_Type_commit(&sub);
        MPI_Type_get_extent_c(sub, &lb, &ext);
        CHECK(lb == 0 && ext == G + 8, "subarray_c extent %lld", (long long)ext);
        memcpy(far + G + 2, "wxyz", 4);
        pos = 0;
        MPI_Pack_c(far, 1, sub, packed, sizeof packed, &pos, MPI_COMM_SELF);
        CHECK(pos == 4 && memcmp(packed, "wxyz", 4) == 0, "subarray_c packs its window");
        MPI_Type_free(&sub);

        /* pack and unpack at a position beyond an int */
        int four[4] = {7, 8, 9, 10}, back4[4] = {0};
        pos = G + 10;
        CHECK(MPI_Pack_c(four, 4, MPI_INT, far, G + 64, &pos, MPI_COMM_SELF) == MPI_SUCCESS && pos == G + 26,
              "MPI_Pack_c at 2^31+10: position %lld", (long long)pos);
        pos = G + 10;
        MPI_Unpack_c(far, G + 64, &pos, back4, 4, MPI_INT, MPI_COMM_SELF);
        CHECK(pos == G + 26 && back4[0] == 7 && back4[3] == 10, "MPI_Unpack_c at 2^31+10");
        pos = G + 60;
        e = MPI_Pack_c(four, 4, MPI_INT, far, G + 64, &pos, MPI_COMM_SELF);
        MPI_Error_class(e, &c);
        CHECK(c == MPI_ERR_TRUNCATE && pos == G + 60, "MPI_Pack_c past outsize: class %d", c);
        free(far);
    }

    if (rank == 0) printf("large_types: ok\n");
    MPI_Finalize();
    return 0;
}
