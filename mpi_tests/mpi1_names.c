/* The MPI-1 names MPI-3 removed (and the deprecated attribute names), as
 * MPICH exports them: MPI_Keyval_create/free, MPI_Attr_put/get/delete,
 * MPI_Errhandler_create/set/get, MPI_Address, MPI_Type_extent/lb/ub,
 * MPI_Type_hvector/hindexed/struct (with the MPI_LB and MPI_UB markers). */
#include "util.h"
#include <string.h>

static int copies, deletes, handled, handled_class;

static int copy_fn(MPI_Comm c, int kv, void *extra, void *in, void *out, int *flag) {
    (void)c; (void)kv;
    copies++;
    *(void **)out = (char *)in + *(int *)extra;
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm c, int kv, void *val, void *extra) {
    (void)c; (void)kv; (void)val; (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

static void handler(MPI_Comm *c, int *code, ...) {
    (void)c;
    handled++;
    MPI_Error_class(*code, &handled_class);
}

/* Packs `n` elements of `t` from `src` and returns the packed bytes. */
static int pack(const void *src, int n, MPI_Datatype t, char *out, int cap) {
    int pos = 0;
    MPI_Pack(src, n, t, out, cap, &pos, MPI_COMM_WORLD);
    return pos;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;

    /* Attributes through the MPI-1 names. */
    int kv, step = 3, flag = 0;
    CHECK(MPI_Keyval_create(copy_fn, delete_fn, &kv, &step) == MPI_SUCCESS, "keyval_create");
    static char base[16];
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Attr_put(dup, kv, base);
    void *v = NULL;
    MPI_Attr_get(dup, kv, &v, &flag);
    CHECK(flag && v == base, "attr_get %p flag %d", v, flag);
    MPI_Comm d2;
    MPI_Comm_dup(dup, &d2);
    CHECK(copies == 1, "copy callback ran %d times", copies);
    MPI_Attr_get(d2, kv, &v, &flag);
    CHECK(flag && v == base + 3, "copied attribute %p, expected %p", v, (void *)(base + 3));
    MPI_Attr_delete(dup, kv);
    CHECK(deletes == 1, "delete callback ran %d times", deletes);
    MPI_Attr_get(dup, kv, &v, &flag);
    CHECK(!flag, "attribute still there after MPI_Attr_delete");
    MPI_Comm_free(&d2);
    CHECK(deletes == 2, "freeing the duplicate ran delete %d times", deletes);
    MPI_Keyval_free(&kv);
    CHECK(kv == MPI_KEYVAL_INVALID, "keyval_free left %d", kv);
    /* MPI_DUP_FN copies the value as it is; MPI_NULL_COPY_FN does not copy. */
    int kd, kn;
    MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &kd, NULL);
    MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &kn, NULL);
    MPI_Attr_put(dup, kd, base + 5);
    MPI_Attr_put(dup, kn, base + 6);
    MPI_Comm_dup(dup, &d2);
    MPI_Attr_get(d2, kd, &v, &flag);
    CHECK(flag && v == base + 5, "MPI_DUP_FN copy %p", v);
    MPI_Attr_get(d2, kn, &v, &flag);
    CHECK(!flag, "MPI_NULL_COPY_FN copied");
    MPI_Comm_free(&d2);
    MPI_Keyval_free(&kd);
    MPI_Keyval_free(&kn);
    int *ub = NULL;
    MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    CHECK(flag && ub && *ub >= 32767, "MPI_TAG_UB through MPI_Attr_get");

    /* Error handlers through the MPI-1 names. */
    MPI_Errhandler eh, got;
    CHECK(MPI_Errhandler_create(handler, &eh) == MPI_SUCCESS, "errhandler_create");
    MPI_Errhandler_set(dup, eh);
    MPI_Errhandler_get(dup, &got);
    CHECK(got == eh, "errhandler_get 0x%x, set 0x%x", (unsigned)got, (unsigned)eh);
    MPI_Errhandler_free(&got);
    int x = 1;
    int rc = MPI_Send(&x, 1, MPI_INT, size + 3, 0, dup);
    CHECK(rc != MPI_SUCCESS && handled == 1 && handled_class == MPI_ERR_RANK,
          "handler: rc %d, ran %d times, class %d", rc, handled, handled_class);
    MPI_Errhandler_free(&eh);
    MPI_Comm_free(&dup);

    /* MPI_Address is MPI_Get_address. */
    double arr[4];
    MPI_Aint a1, a2;
    MPI_Address(&arr[2], &a1);
    MPI_Get_address(&arr[2], &a2);
    CHECK(a1 == a2, "MPI_Address %ld vs %ld", (long)a1, (long)a2);

    /* MPI_Type_struct with markers: LB at -4, an int at 0, UB at 16. */
    int bl[3] = {1, 1, 1};
    MPI_Aint ds[3] = {-4, 0, 16};
    MPI_Datatype ts[3] = {MPI_LB, MPI_INT, MPI_UB}, st;
    CHECK(MPI_Type_struct(3, bl, ds, ts, &st) == MPI_SUCCESS, "type_struct with markers");
    MPI_Type_commit(&st);
    MPI_Aint ext, lb, ubd;
    int tsz;
    MPI_Type_extent(st, &ext);
    MPI_Type_lb(st, &lb);
    MPI_Type_ub(st, &ubd);
    MPI_Type_size(st, &tsz);
    CHECK(ext == 20 && lb == -4 && ubd == 16 && tsz == 4, "markers: extent %ld lb %ld ub %ld size %d",
          (long)ext, (long)lb, (long)ubd, tsz);
    /* Three elements: ints 20 bytes apart. */
    int src[16], k;
    for (k = 0; k < 16; k++) src[k] = k;
    char buf[256];
    int n = pack(&src[1], 3, st, buf, sizeof buf);
    int got3[3];
    memcpy(got3, buf, sizeof got3);
    CHECK(n == 12 && got3[0] == 1 && got3[1] == 6 && got3[2] == 11, "markers: packed %d bytes %d %d %d", n, got3[0], got3[1], got3[2]);
    MPI_Type_free(&st);
    /* Only an MPI_UB marker: lb from the data, no padding. */
    MPI_Aint d2s[3] = {0, 8, 13};
    MPI_Datatype t2s[3] = {MPI_INT, MPI_CHAR, MPI_UB};
    MPI_Type_struct(3, bl, d2s, t2s, &st);
    MPI_Type_extent(st, &ext);
    MPI_Type_lb(st, &lb);
    CHECK(ext == 13 && lb == 0, "UB marker: extent %ld lb %ld", (long)ext, (long)lb);
    MPI_Type_free(&st);
    /* Without markers MPI_Type_struct is MPI_Type_create_struct. */
    MPI_Datatype t3s[2] = {MPI_DOUBLE, MPI_CHAR}, sa, sb;
    MPI_Aint d3s[2] = {0, 8};
    MPI_Type_struct(2, bl, d3s, t3s, &sa);
    MPI_Type_create_struct(2, bl, d3s, t3s, &sb);
    MPI_Aint ea, eb;
    MPI_Type_extent(sa, &ea);
    MPI_Type_extent(sb, &eb);
    CHECK(ea == eb && ea == 16, "struct extents %ld %ld", (long)ea, (long)eb);
    MPI_Type_free(&sa);
    MPI_Type_free(&sb);

    /* MPI_Type_hvector and MPI_Type_hindexed give their successors' layouts. */
    MPI_Datatype hv, chv, hi, chi;
    MPI_Type_hvector(3, 2, 5 * sizeof(int), MPI_INT, &hv);
    MPI_Type_create_hvector(3, 2, 5 * sizeof(int), MPI_INT, &chv);
    int hbl[2] = {2, 1};
    MPI_Aint hds[2] = {4 * sizeof(int), 0};
    MPI_Type_hindexed(2, hbl, hds, MPI_INT, &hi);
    MPI_Type_create_hindexed(2, hbl, hds, MPI_INT, &chi);
    MPI_Datatype pairs[4] = {hv, chv, hi, chi};
    for (k = 0; k < 4; k++) MPI_Type_commit(&pairs[k]);
    char b1[256], b2[256];
    int n1 = pack(src, 1, pairs[0], b1, sizeof b1), n2 = pack(src, 1, pairs[1], b2, sizeof b2);
    CHECK(n1 == 24 && n1 == n2 && memcmp(b1, b2, n1) == 0, "hvector packs %d vs %d bytes", n1, n2);
    int *iv = (int *)b1;
    CHECK(iv[0] == 0 && iv[1] == 1 && iv[2] == 5 && iv[5] == 11, "hvector layout %d %d %d %d", iv[0], iv[1], iv[2], iv[5]);
    n1 = pack(src, 1, pairs[2], b1, sizeof b1);
    n2 = pack(src, 1, pairs[3], b2, sizeof b2);
    CHECK(n1 == 12 && n1 == n2 && memcmp(b1, b2, n1) == 0, "hindexed packs %d vs %d bytes", n1, n2);
    CHECK(iv[0] == 4 && iv[1] == 5 && iv[2] == 0, "hindexed layout %d %d %d", iv[0], iv[1], iv[2]);
    MPI_Type_lb(pairs[2], &lb);
    MPI_Type_ub(pairs[2], &ubd);
    CHECK(lb == 0 && ubd == 6 * (MPI_Aint)sizeof(int), "hindexed bounds %ld %ld", (long)lb, (long)ubd);
    for (k = 0; k < 4; k++) MPI_Type_free(&pairs[k]);

    /* Errors get their class. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Type_extent(MPI_DATATYPE_NULL, &ext);
    int cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "MPI_Type_extent(MPI_DATATYPE_NULL): class %d", cls);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi1_names: OK\n");
    MPI_Finalize();
    return 0;
}
