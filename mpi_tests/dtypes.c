/* Derived datatypes through point-to-point, collectives and pack/unpack;
 * queries, envelope/contents; errors for bad types. */
#include "util.h"
#include <stddef.h>

typedef struct { char c; double d; int i[3]; } rec;

int main(int argc, char **argv) {
    int rank, size, n, cnt;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* A column of a 10x10 row-major matrix. */
    double m[10][10], col[10];
    MPI_Datatype column;
    MPI_Type_vector(10, 1, 10, MPI_DOUBLE, &column);
    MPI_Type_commit(&column);
    MPI_Type_size(column, &n);
    CHECK(n == 80, "vector size %d", n);
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_get_extent(column, &lb, &ext);
    MPI_Type_get_true_extent(column, &tlb, &text);
    CHECK(lb == 0 && ext == 9 * 80 + 8 && tlb == 0 && text == 728, "vector extent %ld %ld", (long)lb, (long)ext);
    for (int i = 0; i < 10; i++)
        for (int j = 0; j < 10; j++) m[i][j] = rank * 1000 + i * 10 + j;
    /* send column 3 as a vector, receive as 10 contiguous doubles */
    MPI_Sendrecv(&m[0][3], 1, column, right, 1, col, 10, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &st);
    for (int i = 0; i < 10; i++) CHECK(col[i] == left * 1000 + i * 10 + 3, "column elem %d = %g", i, col[i]);
    MPI_Get_count(&st, column, &cnt);
    CHECK(cnt == 1, "count of column %d", cnt);
    MPI_Get_elements(&st, column, &cnt);
    CHECK(cnt == 10, "elements of column %d", cnt);
    /* contiguous doubles into a column of the matrix (unpack at completion) */
    for (int i = 0; i < 10; i++) col[i] = rank + i * 0.5;
    MPI_Request rq;
    MPI_Irecv(&m[0][7], 1, column, left, 2, MPI_COMM_WORLD, &rq);
    MPI_Send(col, 10, MPI_DOUBLE, right, 2, MPI_COMM_WORLD);
    MPI_Wait(&rq, &st);
    for (int i = 0; i < 10; i++) CHECK(m[i][7] == left + i * 0.5 && m[i][6] == rank * 1000 + i * 10 + 6, "unpacked column %d: %g %g", i, m[i][7], m[i][6]);

    /* A struct with holes, described with MPI_Get_address, and a resized array of it. */
    rec r[4];
    MPI_Aint base, disp[3];
    MPI_Get_address(&r[0], &base);
    MPI_Get_address(&r[0].c, &disp[0]);
    MPI_Get_address(&r[0].d, &disp[1]);
    MPI_Get_address(&r[0].i, &disp[2]);
    for (int k = 0; k < 3; k++) disp[k] = MPI_Aint_diff(disp[k], base);
    int bl[3] = {1, 1, 3};
    MPI_Datatype types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, st1, rect;
    MPI_Type_create_struct(3, bl, disp, types, &st1);
    MPI_Type_create_resized(st1, 0, sizeof(rec), &rect);
    MPI_Type_commit(&rect);
    MPI_Type_size(rect, &n);
    CHECK(n == 1 + 8 + 12, "struct size %d", n);
    MPI_Type_get_extent(rect, &lb, &ext);
    CHECK(lb == 0 && ext == sizeof(rec), "resized extent %ld", (long)ext);
    rec in[4];
    memset(in, 0, sizeof in);
    for (int k = 0; k < 4; k++) { r[k].c = 'a' + rank + k; r[k].d = rank * 1.5 + k; r[k].i[0] = k; r[k].i[1] = rank; r[k].i[2] = -k; }
    MPI_Sendrecv(r, 4, rect, right, 3, in, 4, rect, left, 3, MPI_COMM_WORLD, &st);
    for (int k = 0; k < 4; k++)
        CHECK(in[k].c == 'a' + left + k && in[k].d == left * 1.5 + k && in[k].i[1] == left && in[k].i[2] == -k, "struct %d", k);
    MPI_Get_count(&st, rect, &cnt);
    CHECK(cnt == 4, "struct count %d", cnt);
    /* Three structs and a bit: count is undefined, elements are 3*5+2. */
    MPI_Sendrecv(r, 3 * 21 + 9, MPI_BYTE, right, 4, in, 4, rect, left, 4, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, rect, &cnt);
    CHECK(cnt == MPI_UNDEFINED, "partial struct count %d", cnt);
    MPI_Get_elements(&st, rect, &cnt);
    CHECK(cnt == 17, "partial struct elements %d", cnt);

    /* Envelope and contents. */
    int ni, na, nd, comb, ints[8];
    MPI_Aint aints[8];
    MPI_Datatype dts[8];
    MPI_Type_get_envelope(column, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_VECTOR && ni == 3 && na == 0 && nd == 1, "vector envelope");
    MPI_Type_get_contents(column, 8, 8, 8, ints, aints, dts);
    CHECK(ints[0] == 10 && ints[1] == 1 && ints[2] == 10 && dts[0] == MPI_DOUBLE, "vector contents");
    MPI_Type_get_envelope(st1, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_STRUCT && ni == 4 && na == 3 && nd == 3, "struct envelope");
    MPI_Type_get_contents(st1, 8, 8, 8, ints, aints, dts);
    CHECK(ints[0] == 3 && ints[3] == 3 && aints[1] == disp[1] && dts[2] == MPI_INT, "struct contents");
    MPI_Type_get_envelope(MPI_INT, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_NAMED, "named");

    /* Subarray: the interior 2x3 block of a 4x5 int array. */
    int a[4][5], b2[6];
    int sizes[2] = {4, 5}, subs[2] = {2, 3}, starts[2] = {1, 1};
    MPI_Datatype sub;
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub);
    MPI_Type_commit(&sub);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++) a[i][j] = rank * 100 + i * 10 + j;
    MPI_Sendrecv(a, 1, sub, right, 5, b2, 6, MPI_INT, left, 5, MPI_COMM_WORLD, &st);
    int expect[6] = {11, 12, 13, 21, 22, 23};
    for (int k = 0; k < 6; k++) CHECK(b2[k] == left * 100 + expect[k], "subarray %d = %d", k, b2[k]);

    /* Indexed, hindexed, indexed_block. */
    int blen[3] = {2, 1, 3}, idisp[3] = {0, 5, 9}, src[12], dst[12];
    for (int k = 0; k < 12; k++) src[k] = rank * 50 + k;
    MPI_Datatype idx, ib;
    MPI_Type_indexed(3, blen, idisp, MPI_INT, &idx);
    MPI_Type_commit(&idx);
    MPI_Type_size(idx, &n);
    CHECK(n == 24, "indexed size %d", n);
    memset(dst, 0xff, sizeof dst);
    MPI_Sendrecv(src, 1, idx, right, 6, dst, 1, idx, left, 6, MPI_COMM_WORLD, &st);
    int sel[6] = {0, 1, 5, 9, 10, 11};
    for (int k = 0; k < 6; k++) CHECK(dst[sel[k]] == left * 50 + sel[k], "indexed elem %d", sel[k]);
    CHECK(dst[2] == -1 && dst[8] == -1, "indexed wrote a gap");
    int bdisp[2] = {1, 7};
    MPI_Type_create_indexed_block(2, 2, bdisp, MPI_INT, &ib);
    MPI_Type_commit(&ib);
    MPI_Sendrecv(src, 1, ib, right, 7, dst, 4, MPI_INT, left, 7, MPI_COMM_WORLD, &st);
    CHECK(dst[0] == left * 50 + 1 && dst[1] == left * 50 + 2 && dst[2] == left * 50 + 7 && dst[3] == left * 50 + 8, "indexed_block");

    /* Pack / Unpack, and external32. */
    char packbuf[512];
    int pos = 0, psize;
    MPI_Pack_size(1, column, MPI_COMM_WORLD, &psize);
    CHECK(psize >= 80, "pack_size %d", psize);
    MPI_Pack(&m[0][3], 1, column, packbuf, sizeof packbuf, &pos, MPI_COMM_WORLD);
    int three = 3;
    MPI_Pack(&three, 1, MPI_INT, packbuf, sizeof packbuf, &pos, MPI_COMM_WORLD);
    CHECK(pos == 84, "pack position %d", pos);
    double c2[10];
    int t3 = 0;
    pos = 0;
    MPI_Unpack(packbuf, 84, &pos, c2, 10, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Unpack(packbuf, 84, &pos, &t3, 1, MPI_INT, MPI_COMM_WORLD);
    CHECK(t3 == 3 && c2[4] == rank * 1000 + 43, "unpack %d %g", t3, c2[4]);
    MPI_Aint xpos = 0, xsize;
    int vals[2] = {0x01020304, -2};
    unsigned char ext32[16];
    MPI_Pack_external_size("external32", 2, MPI_INT, &xsize);
    CHECK(xsize == 8, "external32 size %ld", (long)xsize);
    MPI_Pack_external("external32", vals, 2, MPI_INT, ext32, sizeof ext32, &xpos);
    CHECK(xpos == 8 && ext32[0] == 1 && ext32[3] == 4 && ext32[4] == 0xff, "external32 is big-endian");
    int back[2];
    xpos = 0;
    MPI_Unpack_external("external32", ext32, 8, &xpos, back, 2, MPI_INT);
    CHECK(back[0] == vals[0] && back[1] == -2, "unpack_external");

    /* Collectives with derived types. */
    double mm[10][10];
    for (int i = 0; i < 10; i++)
        for (int j = 0; j < 10; j++) mm[i][j] = rank == 0 ? i * 10 + j : -1;
    MPI_Bcast(&mm[0][2], 1, column, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 10; i++) CHECK(mm[i][2] == i * 10 + 2 && (rank == 0 || mm[i][3] == -1), "bcast column %d", i);
    MPI_Datatype three_d;
    MPI_Type_contiguous(3, MPI_DOUBLE, &three_d);
    MPI_Type_commit(&three_d);
    double v3[6] = {rank, rank * 2, 1, 2, 3, 4}, s3[6];
    MPI_Allreduce(v3, s3, 2, three_d, MPI_SUM, MPI_COMM_WORLD);
    CHECK(s3[0] == size * (size - 1) / 2 && s3[1] == size * (size - 1) && s3[5] == 4 * size, "allreduce on contiguous type");
    double colsum[10][10];
    memset(colsum, 0, sizeof colsum);
    MPI_Allreduce(&m[0][0], &colsum[0][0], 1, column, MPI_MAX, MPI_COMM_WORLD);
    CHECK(colsum[9][0] == (size - 1) * 1000 + 90 && colsum[0][1] == 0, "allreduce on vector type");
    double *g = malloc(sizeof(double) * 3 * size);
    MPI_Allgather(v3, 1, three_d, g, 3, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int q = 0; q < size; q++) CHECK(g[q * 3] == q && g[q * 3 + 2] == 1, "allgather with contiguous type");
    free(g);

    /* Persistent receive with a derived type. */
    MPI_Request pr;
    MPI_Recv_init(&m[0][0], 1, column, left, 8, MPI_COMM_WORLD, &pr);
    for (int it = 0; it < 3; it++) {
        for (int i = 0; i < 10; i++) col[i] = it * 100 + rank + i;
        MPI_Start(&pr);
        MPI_Send(col, 10, MPI_DOUBLE, right, 8, MPI_COMM_WORLD);
        MPI_Wait(&pr, MPI_STATUS_IGNORE);
        for (int i = 0; i < 10; i++) CHECK(m[i][0] == it * 100 + left + i, "persistent derived %d", i);
    }
    MPI_Request_free(&pr);

    /* Names. */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Type_get_name(MPI_DOUBLE, name, &len);
    CHECK(strcmp(name, "MPI_DOUBLE") == 0, "builtin name '%s'", name);
    MPI_Type_set_name(column, "column");
    MPI_Type_get_name(column, name, &len);
    CHECK(strcmp(name, "column") == 0 && len == 6, "type name '%s'", name);

    /* Datatype attributes: copied on dup, deleted on free. */
    {
        int tk, flag;
        void *val;
        MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &tk, NULL);
        MPI_Type_set_attr(column, tk, (void *)99L);
        MPI_Type_get_attr(column, tk, &val, &flag);
        CHECK(flag && (long)val == 99, "type attr");
        MPI_Datatype cd;
        MPI_Type_dup(column, &cd);
        MPI_Type_get_attr(cd, tk, &val, &flag);
        CHECK(flag && (long)val == 99, "type attr copied on dup");
        MPI_Type_delete_attr(cd, tk);
        MPI_Type_get_attr(cd, tk, &val, &flag);
        CHECK(!flag, "type attr deleted");
        MPI_Type_free(&cd);
        MPI_Type_free_keyval(&tk);
        CHECK(tk == MPI_KEYVAL_INVALID, "type keyval freed");
    }

    /* Errors. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype unc, dupt;
    MPI_Type_contiguous(2, MPI_INT, &unc);
    int rc = MPI_Send(src, 1, unc, right, 9, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_TYPE, "uncommitted type gave %d", rc);
    rc = MPI_Type_contiguous(-1, MPI_INT, &dupt);
    CHECK(rc == MPI_ERR_COUNT, "negative count gave %d", rc);
    MPI_Datatype freed = unc;
    MPI_Type_free(&unc);
    CHECK(unc == MPI_DATATYPE_NULL, "free nulls");
    rc = MPI_Type_size(freed, &n);
    CHECK(rc == MPI_ERR_TYPE, "freed type gave %d", rc);
    rc = MPI_Type_size((MPI_Datatype)MPI_COMM_WORLD, &n);
    CHECK(rc == MPI_ERR_TYPE, "communicator as datatype gave %d", rc);
    rc = MPI_Type_free(&three_d);
    MPI_Type_dup(column, &dupt);
    MPI_Type_get_envelope(dupt, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_DUP, "dup envelope %d", comb);
    MPI_Type_free(&dupt);
    MPI_Type_free(&column); MPI_Type_free(&rect); MPI_Type_free(&st1); MPI_Type_free(&sub); MPI_Type_free(&idx); MPI_Type_free(&ib);
    MPI_Finalize();
    return 0;
}
