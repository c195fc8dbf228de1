/* MPI_Reduce_local on device buffers against the same call on host
 * buffers, bit for bit, for every builtin op on every type the device
 * kernels cover (on a GPU: the NVRTC kernels; with the test double: the
 * host-copy fallback), plus a user-defined op on device buffers. */
#include "gpu_util.h"

static unsigned long long seed = 88172645463325252ull;
static unsigned char rnd(void) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return (unsigned char)(seed >> 24);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    test_rank = rank;
    GPU_OR_SKIP(rank);
    struct { MPI_Datatype t; const char *name; int kind; } types[] = {
        /* kind: 0 integer, 1 floating, 2 complex, 3 logical, 4 byte */
        {MPI_SIGNED_CHAR, "signed char", 0}, {MPI_UNSIGNED_CHAR, "unsigned char", 0},
        {MPI_SHORT, "short", 0}, {MPI_UNSIGNED_SHORT, "unsigned short", 0},
        {MPI_INT, "int", 0}, {MPI_UNSIGNED, "unsigned", 0},
        {MPI_LONG, "long", 0}, {MPI_UNSIGNED_LONG, "unsigned long", 0},
        {MPI_INT64_T, "int64_t", 0}, {MPI_UINT8_T, "uint8_t", 0},
        {MPI_FLOAT, "float", 1}, {MPI_DOUBLE, "double", 1},
        {MPIX_C_FLOAT16, "float16", 1}, {OXMPI_BFLOAT16, "bfloat16", 1},
        {MPI_C_FLOAT_COMPLEX, "float complex", 2}, {MPI_C_DOUBLE_COMPLEX, "double complex", 2},
        {MPI_C_BOOL, "bool", 3}, {MPI_LOGICAL, "LOGICAL", 3}, {MPI_BYTE, "byte", 4},
    };
    MPI_Op ops[] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND, MPI_LOR, MPI_LXOR,
                    MPI_BAND, MPI_BOR, MPI_BXOR, MPI_REPLACE};
    const char *opn[] = {"MAX", "MIN", "SUM", "PROD", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR", "REPLACE"};
    int ok_for[5] = {0x7ff, 0x40f, 0x40c, 0x470, 0x780};
    const int n = 100003;
    int checked = 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (unsigned k = 0; k < sizeof types / sizeof types[0]; k++) {
        int sz;
        MPI_Type_size(types[k].t, &sz);
        size_t bytes = (size_t)n * sz;
        unsigned char *a = malloc(bytes), *b = malloc(bytes), *g = malloc(bytes);
        for (int o = 0; o < 11; o++) {
            if (!(ok_for[types[k].kind] >> o & 1)) continue;
            for (size_t i = 0; i < bytes; i++) { a[i] = rnd(); b[i] = rnd(); }
            if (types[k].kind == 1 || types[k].kind == 2) {
                /* Finite values of moderate size (the top byte of each real
                 * part): no NaN payloads, which a GPU does not propagate as
                 * the host does. */
                size_t part = types[k].kind == 2 ? (size_t)sz / 2 : (size_t)sz;
                for (size_t i = 0; i < bytes; i++) if (i % part == part - 1) { a[i] &= 0x3f; b[i] &= 0x3f; }
            }
            if (types[k].kind == 3 && types[k].t == MPI_C_BOOL)
                for (size_t i = 0; i < bytes; i++) { a[i] &= 1; b[i] &= 1; }
            void *da = dcopy(a, bytes), *db = dcopy(b, bytes);
            int e1 = MPI_Reduce_local(a, b, n, types[k].t, ops[o]);
            int e2 = MPI_Reduce_local(da, db, n, types[k].t, ops[o]);
            CHECK(e1 == MPI_SUCCESS && e2 == MPI_SUCCESS, "%s on %s: errors %d %d", opn[o], types[k].name, e1, e2);
            from_dev(g, db, bytes);
            size_t bad = 0;
            while (bad < bytes && g[bad] == b[bad]) bad++;
            CHECK(bad == bytes, "%s on %s: device result differs from the host's at byte %zu", opn[o], types[k].name, bad);
            dfree(da);
            dfree(db);
            checked++;
        }
        free(a); free(b); free(g);
    }
    /* A user-defined op on device buffers runs on host copies. */
    MPI_Op mine;
    MPI_Op_create(user_sum, 1, &mine);
    int x[64], y[64], r[64];
    for (int i = 0; i < 64; i++) { x[i] = i; y[i] = 1000 * i; }
    int *dx = dcopy(x, sizeof x), *dy = dcopy(y, sizeof y);
    MPI_Reduce_local(dx, dy, 64, MPI_INT, mine);
    from_dev(r, dy, sizeof r);
    for (int i = 0; i < 64; i++) CHECK(r[i] == 1001 * i, "user op on device buffers [%d]", i);
    MPI_Op_free(&mine);
    dfree(dx); dfree(dy);
    if (rank == 0) printf("gpu_reduce ok: %d op/type pairs\n", checked);
    MPI_Finalize();
    return 0;
}
