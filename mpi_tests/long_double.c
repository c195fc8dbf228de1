/* long double (x87 80-bit) reductions and external32: the expected values
 * are computed here with the compiler's own long double arithmetic, and are
 * chosen so that double precision would give a different answer. */
#include "util.h"
#include <complex.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    const long double tiny = 0x1p-60L;

    /* SUM: 1 + rank * 2^-60 (the small parts vanish in double). */
    long double in[4], out[4];
    in[0] = 1.0L + rank * tiny;
    in[1] = 1.0L + (rank + 1) * tiny; /* PROD operand */
    in[2] = (rank % 2 ? -1.0L : 1.0L) * (1.0L + rank * tiny);
    in[3] = in[2];
    MPI_Allreduce(&in[0], &out[0], 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&in[1], &out[1], 1, MPI_LONG_DOUBLE, MPI_PROD, MPI_COMM_WORLD);
    MPI_Allreduce(&in[2], &out[2], 1, MPI_LONG_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&in[3], &out[3], 1, MPI_LONG_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    long double sum = 0, prod = 1, mx = -1e30L, mn = 1e30L;
    for (int r = 0; r < size; r++) {
        long double v = (r % 2 ? -1.0L : 1.0L) * (1.0L + r * tiny);
        if (v > mx) mx = v;
        if (v < mn) mn = v;
    }
    /* The reduction order of a commutative op is the library's choice; with
     * these operands every order gives the same exact long double. */
    for (int r = 0; r < size; r++) sum += 1.0L + r * tiny;
    for (int r = 0; r < size; r++) prod *= 1.0L + (r + 1) * tiny;
    CHECK(out[0] == sum, "SUM %La expected %La", out[0], sum);
    CHECK(size == 1 || (double)out[0] == (double)size, "SUM sanity");
    CHECK(out[1] == prod, "PROD %La expected %La", out[1], prod);
    CHECK(out[2] == mx && out[3] == mn, "MAX %La MIN %La expected %La %La", out[2], out[3], mx, mn);
    if (size > 2) CHECK(out[0] != (long double)(double)out[0], "SUM lost the low bits");

    /* Complex long double SUM and PROD on (1 + rank i). */
    long double _Complex z = 1.0L + rank * 1.0L * I, zs, zp;
    MPI_Allreduce(&z, &zs, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&z, &zp, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD);
    long double _Complex es = 0, ep = 1;
    for (int r = 0; r < size; r++) es += 1.0L + r * 1.0L * I;
    for (int r = 0; r < size; r++) ep *= 1.0L + r * 1.0L * I;
    CHECK(creall(zs) == creall(es) && cimagl(zs) == cimagl(es), "complex SUM");
    CHECK(creall(zp) == creall(ep) && cimagl(zp) == cimagl(ep), "complex PROD %Lg%+Lgi expected %Lg%+Lgi",
          creall(zp), cimagl(zp), creall(ep), cimagl(ep));

    /* MAXLOC / MINLOC on (long double, int): ties go to the lower index. */
    struct { long double v; int i; } p = {1.0L + (rank / 2) * tiny, rank}, pmax, pmin;
    MPI_Allreduce(&p, &pmax, 1, MPI_LONG_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    MPI_Allreduce(&p, &pmin, 1, MPI_LONG_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD);
    int top = ((size - 1) / 2) * 2;
    CHECK(pmax.v == 1.0L + ((size - 1) / 2) * tiny && pmax.i == top, "MAXLOC (%La, %d)", pmax.v, pmax.i);
    CHECK(pmin.v == 1.0L && pmin.i == 0, "MINLOC (%La, %d)", pmin.v, pmin.i);

    /* Reduce_local; a logical op on long double is MPI_ERR_OP. */
    long double a[2] = {2.5L, tiny}, b[2] = {0.5L, 1.0L};
    MPI_Reduce_local(a, b, 2, MPI_LONG_DOUBLE, MPI_SUM);
    CHECK(b[0] == 3.0L && b[1] == 1.0L + tiny, "Reduce_local");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Reduce_local(a, b, 2, MPI_LONG_DOUBLE, MPI_BAND), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "BAND on long double gave class %d", cls);

    /* external32: binary128, big-endian. 1 + 2^-60 keeps every bit. */
    long double v[2] = {1.0L + tiny, -3.0L}, w[2] = {0, 0};
    unsigned char ext[64];
    MPI_Aint pos = 0, sz;
    MPI_Pack_external_size("external32", 2, MPI_LONG_DOUBLE, &sz);
    CHECK(sz == 32, "external32 size %ld", (long)sz);
    MPI_Pack_external("external32", v, 2, MPI_LONG_DOUBLE, ext, sizeof ext, &pos);
    CHECK(pos == 32, "packed %ld bytes", (long)pos);
    /* 1 + 2^-60: exponent 0x3fff, fraction bit 52 set (big-endian byte 15 - 52/8 = 9, bit 4). */
    unsigned char expect[16] = {0x3f, 0xff, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0};
    CHECK(memcmp(ext, expect, 16) == 0, "external32 bytes %02x %02x %02x %02x %02x %02x %02x", ext[0], ext[1], ext[2],
          ext[3], ext[4], ext[5], ext[6]);
    CHECK(ext[16] == 0xc0 && ext[17] == 0x00 && ext[18] == 0x80, "external32 of -3");
    pos = 0;
    MPI_Unpack_external("external32", ext, 32, &pos, w, 2, MPI_LONG_DOUBLE);
    CHECK(w[0] == v[0] && w[1] == v[1], "external32 round trip %La %La", w[0], w[1]);

    MPI_Finalize();
    if (rank == 0) printf("long_double ok\n");
    return 0;
}
