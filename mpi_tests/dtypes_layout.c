/* Datatype layout as C and the standard define it:
 * - MPI_Type_create_struct pads its extent to the strictest alignment of its
 *   parts, as the C compiler pads the struct (arrays of structs are read at
 *   the compiler's stride), unless a part was resized;
 * - the pair types' size is the sum of their parts, their extent keeps the
 *   padding (MPI_Type_size, MPI_Get_elements, MPI_Get_count, MAXLOC/MINLOC
 *   on arrays of them);
 * - MPI_BOTTOM with datatypes built from absolute addresses, in
 *   point-to-point and collective calls. */
#include "util.h"
#include <stddef.h>

typedef struct { int i; char c; } ic;
typedef struct { char c; double d; } cd;
typedef struct { double d; char c; } dc;
typedef struct { short s; char c; } sc;
typedef struct { double v; int i; } di;
typedef struct { short v; int i; } si;
typedef struct { long double v; int i; } ldi;

static MPI_Datatype mkstruct(int n, const int *bl, const MPI_Aint *d, const MPI_Datatype *t) {
    MPI_Datatype r;
    MPI_Type_create_struct(n, (int *)bl, (MPI_Aint *)d, (MPI_Datatype *)t, &r);
    MPI_Type_commit(&r);
    return r;
}

static void extent_is(MPI_Datatype t, MPI_Aint want, int wsize, const char *what) {
    MPI_Aint lb, ext;
    int size;
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_size(t, &size);
    CHECK(lb == 0 && ext == want, "%s: lb %ld extent %ld, want 0 and %ld", what, (long)lb, (long)ext, (long)want);
    CHECK(size == wsize, "%s: size %d, want %d", what, size, wsize);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    int one[2] = {1, 1};

    /* ---- struct extents padded as C pads them */
    MPI_Aint d_ic[2] = {offsetof(ic, i), offsetof(ic, c)};
    MPI_Datatype t_ic2[2] = {MPI_INT, MPI_CHAR};
    MPI_Datatype t_ic = mkstruct(2, one, d_ic, t_ic2);
    extent_is(t_ic, sizeof(ic), 5, "struct {int; char}");
    MPI_Aint d_cd[2] = {offsetof(cd, c), offsetof(cd, d)};
    MPI_Datatype t_cd2[2] = {MPI_CHAR, MPI_DOUBLE};
    MPI_Datatype t_cd = mkstruct(2, one, d_cd, t_cd2);
    extent_is(t_cd, sizeof(cd), 9, "struct {char; double}");
    MPI_Aint d_dc[2] = {offsetof(dc, d), offsetof(dc, c)};
    MPI_Datatype t_dc2[2] = {MPI_DOUBLE, MPI_CHAR};
    MPI_Datatype t_dc = mkstruct(2, one, d_dc, t_dc2);
    extent_is(t_dc, sizeof(dc), 9, "struct {double; char}");
    MPI_Aint d_sc[2] = {offsetof(sc, s), offsetof(sc, c)};
    MPI_Datatype t_sc2[2] = {MPI_SHORT, MPI_CHAR};
    MPI_Datatype t_sc = mkstruct(2, one, d_sc, t_sc2);
    extent_is(t_sc, sizeof(sc), 3, "struct {short; char}");
    MPI_Aint d_cc[2] = {0, 1};
    MPI_Datatype t_cc2[2] = {MPI_CHAR, MPI_CHAR};
    MPI_Datatype t_cc = mkstruct(2, one, d_cc, t_cc2);
    extent_is(t_cc, 2, 2, "struct {char; char}");
    /* a struct of a struct: the inner one's alignment counts */
    MPI_Aint d_outer[2] = {0, sizeof(ic)};
    MPI_Datatype t_outer2[2] = {t_ic, MPI_CHAR};
    MPI_Datatype t_outer = mkstruct(2, one, d_outer, t_outer2);
    extent_is(t_outer, 12, 6, "struct {struct {int; char}; char}");
    /* a resized part sets the bounds: no padding added */
    MPI_Datatype r5;
    MPI_Type_create_resized(MPI_INT, 0, 5, &r5);
    MPI_Aint d_r[1] = {0};
    MPI_Datatype t_r = mkstruct(1, one, d_r, &r5);
    extent_is(t_r, 5, 4, "struct {resized int of extent 5}");

    /* an array of structs sent with the struct type arrives at C's stride */
    {
        ic a[4], b[4];
        memset(a, 0, sizeof a);
        memset(b, 0x7f, sizeof b);
        for (int k = 0; k < 4; k++) { a[k].i = 1000 * rank + k; a[k].c = (char)('a' + k); }
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        MPI_Sendrecv(a, 4, t_ic, to, 1, b, 4, t_ic, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int k = 0; k < 4; k++)
            CHECK(b[k].i == 1000 * from + k && b[k].c == 'a' + k, "array of struct {int; char}: element %d is (%d, %c)", k,
                  b[k].i, b[k].c);
        dc x[3], y[3];
        for (int k = 0; k < 3; k++) { x[k].d = rank + k * 0.25; x[k].c = (char)('x' + k); }
        MPI_Allgather(&x[0], 1, t_dc, y, 1, t_dc, MPI_COMM_SELF);
        CHECK(y[0].d == x[0].d && y[0].c == x[0].c, "self allgather of struct {double; char}");
        MPI_Bcast(x, 3, t_dc, 0, MPI_COMM_WORLD);
        for (int k = 0; k < 3; k++) CHECK(x[k].d == k * 0.25 && x[k].c == 'x' + k, "bcast of struct {double; char}: element %d", k);
    }

    /* ---- pair types: size is the parts, extent the padded C struct */
    extent_is(MPI_FLOAT_INT, 8, 8, "MPI_FLOAT_INT");
    extent_is(MPI_DOUBLE_INT, sizeof(di), 12, "MPI_DOUBLE_INT");
    extent_is(MPI_LONG_INT, 16, 12, "MPI_LONG_INT");
    extent_is(MPI_SHORT_INT, sizeof(si), 6, "MPI_SHORT_INT");
    extent_is(MPI_LONG_DOUBLE_INT, sizeof(ldi), 20, "MPI_LONG_DOUBLE_INT");
    {
        di a[5], m[5], n[5];
        for (int k = 0; k < 5; k++) { a[k].v = (double)((rank * 7 + k * 3) % 5); a[k].i = rank; }
        MPI_Allreduce(a, m, 5, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
        MPI_Allreduce(a, n, 5, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD);
        for (int k = 0; k < 5; k++) {
            double best = -1, worst = 1e9;
            int bi = -1, wi = -1;
            for (int r = 0; r < size; r++) {
                double v = (double)((r * 7 + k * 3) % 5);
                if (v > best) { best = v; bi = r; }
                if (v < worst) { worst = v; wi = r; }
            }
            CHECK(m[k].v == best && m[k].i == bi, "MAXLOC DOUBLE_INT element %d: (%g, %d) want (%g, %d)", k, m[k].v, m[k].i, best, bi);
            CHECK(n[k].v == worst && n[k].i == wi, "MINLOC DOUBLE_INT element %d: (%g, %d) want (%g, %d)", k, n[k].v, n[k].i, worst, wi);
        }
        si s[4], t[4];
        for (int k = 0; k < 4; k++) { s[k].v = (short)(10 * k - rank); s[k].i = rank; }
        MPI_Allreduce(s, t, 4, MPI_SHORT_INT, MPI_MINLOC, MPI_COMM_WORLD);
        for (int k = 0; k < 4; k++)
            CHECK(t[k].v == 10 * k - (size - 1) && t[k].i == size - 1, "MINLOC SHORT_INT element %d: (%d, %d)", k, t[k].v, t[k].i);
        /* counts and elements of a received message of pairs */
        di r[3];
        MPI_Status st;
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        MPI_Sendrecv(a, 3, MPI_DOUBLE_INT, to, 2, r, 3, MPI_DOUBLE_INT, from, 2, MPI_COMM_WORLD, &st);
        int cnt, el, bytes;
        MPI_Get_count(&st, MPI_DOUBLE_INT, &cnt);
        MPI_Get_elements(&st, MPI_DOUBLE_INT, &el);
        MPI_Get_count(&st, MPI_BYTE, &bytes);
        CHECK(cnt == 3 && el == 6 && bytes == 36, "3 MPI_DOUBLE_INT: count %d elements %d bytes %d", cnt, el, bytes);
        for (int k = 0; k < 3; k++)
            CHECK(r[k].v == (double)((from * 7 + k * 3) % 5) && r[k].i == from, "received MPI_DOUBLE_INT element %d", k);
        int ps;
        MPI_Pack_size(3, MPI_DOUBLE_INT, MPI_COMM_WORLD, &ps);
        CHECK(ps >= 36, "MPI_Pack_size of 3 MPI_DOUBLE_INT: %d", ps);
        /* a contiguous type of pairs: size 3 x 12 */
        MPI_Datatype c3;
        MPI_Type_contiguous(3, MPI_DOUBLE_INT, &c3);
        MPI_Type_commit(&c3);
        extent_is(c3, 3 * sizeof(di), 36, "contiguous(3, MPI_DOUBLE_INT)");
        MPI_Type_free(&c3);
    }

    /* ---- MPI_BOTTOM with absolute addresses */
    {
        int x[10];
        double y[3];
        MPI_Aint ad[2];
        MPI_Get_address(x, &ad[0]);
        MPI_Get_address(y, &ad[1]);
        int bl[2] = {10, 3};
        MPI_Datatype tt[2] = {MPI_INT, MPI_DOUBLE}, abs_t;
        MPI_Type_create_struct(2, bl, ad, tt, &abs_t);
        MPI_Type_commit(&abs_t);
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        for (int k = 0; k < 10; k++) x[k] = rank * 100 + k;
        for (int k = 0; k < 3; k++) y[k] = rank + k / 4.0;
        int rx[10];
        double ry[3];
        struct { int x[10]; double y[3]; } in;
        int ibl[2] = {10, 3};
        MPI_Aint ioff[2] = {offsetof(__typeof__(in), x), offsetof(__typeof__(in), y)};
        MPI_Datatype rel;
        MPI_Type_create_struct(2, ibl, ioff, tt, &rel);
        MPI_Type_commit(&rel);
        MPI_Sendrecv(MPI_BOTTOM, 1, abs_t, to, 3, &in, 1, rel, from, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int k = 0; k < 10; k++) CHECK(in.x[k] == from * 100 + k, "MPI_BOTTOM send: x[%d]=%d", k, in.x[k]);
        for (int k = 0; k < 3; k++) CHECK(in.y[k] == from + k / 4.0, "MPI_BOTTOM send: y[%d]", k);
        /* receive into MPI_BOTTOM, nonblocking */
        MPI_Request rq[2];
        MPI_Irecv(MPI_BOTTOM, 1, abs_t, from, 4, MPI_COMM_WORLD, &rq[0]);
        in.x[0] = -rank;
        MPI_Isend(&in, 1, rel, to, 4, MPI_COMM_WORLD, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        /* what `from` received in the first exchange, from its own predecessor */
        CHECK(x[0] == -from && x[1] == ((from + size - 1) % size) * 100 + 1, "MPI_BOTTOM receive: x[0]=%d x[1]=%d", x[0], x[1]);
        /* collectives on MPI_BOTTOM */
        for (int k = 0; k < 10; k++) x[k] = rank == 0 ? 7 * k : -1;
        MPI_Bcast(MPI_BOTTOM, 1, abs_t, 0, MPI_COMM_WORLD);
        for (int k = 0; k < 10; k++) CHECK(x[k] == 7 * k, "MPI_BOTTOM bcast x[%d]=%d", k, x[k]);
        MPI_Datatype xs;
        MPI_Type_create_hindexed(1, &bl[0], &ad[0], MPI_INT, &xs);
        MPI_Type_commit(&xs);
        for (int k = 0; k < 10; k++) x[k] = rank + k;
        MPI_Allreduce(MPI_IN_PLACE, MPI_BOTTOM, 1, xs, MPI_SUM, MPI_COMM_WORLD);
        for (int k = 0; k < 10; k++) CHECK(x[k] == size * (size - 1) / 2 + size * k, "MPI_BOTTOM allreduce x[%d]=%d", k, x[k]);
        (void)rx;
        (void)ry;
        MPI_Type_free(&xs);
        MPI_Type_free(&rel);
        MPI_Type_free(&abs_t);
    }

    MPI_Type_free(&t_ic);
    MPI_Type_free(&t_cd);
    MPI_Type_free(&t_dc);
    MPI_Type_free(&t_sc);
    MPI_Type_free(&t_cc);
    MPI_Type_free(&t_outer);
    MPI_Type_free(&t_r);
    MPI_Type_free(&r5);
    if (rank == 0) printf("dtypes_layout: ok\n");
    MPI_Finalize();
    return 0;
}
