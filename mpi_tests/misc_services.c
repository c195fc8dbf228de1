/* MPI_Alloc_mem / MPI_Free_mem, the generalized-status setters,
 * MPI_Type_match_size, MPI_Comm_get_parent, MPI_Pcontrol and added error
 * classes, codes and strings: values checked exactly,
 * bad arguments get their error classes. */
#include "util.h"

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    /* memory: aligned, usable, as a send and receive buffer */
    int *p = NULL;
    CHECK(MPI_Alloc_mem(1000 * sizeof(int), MPI_INFO_NULL, &p) == MPI_SUCCESS && p, "Alloc_mem");
    CHECK(((size_t)p & 63) == 0, "Alloc_mem: %p is not 64-byte aligned", (void *)p);
    for (int i = 0; i < 1000; i++) p[i] = rank * 1000 + i;
    int *q;
    MPI_Alloc_mem(1000 * sizeof(int), MPI_INFO_NULL, &q);
    MPI_Sendrecv(p, 1000, MPI_INT, (rank + 1) % size, 0, q, 1000, MPI_INT, (rank + size - 1) % size, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < 1000; i++)
        CHECK(q[i] == ((rank + size - 1) % size) * 1000 + i, "received into Alloc_mem memory [%d] = %d", i, q[i]);
    CHECK(MPI_Free_mem(p) == MPI_SUCCESS && MPI_Free_mem(q) == MPI_SUCCESS, "Free_mem");
    void *z = NULL;
    CHECK(MPI_Alloc_mem(0, MPI_INFO_NULL, &z) == MPI_SUCCESS, "Alloc_mem of 0 bytes");
    MPI_Free_mem(z);
    /* statuses */
    MPI_Status st;
    memset(&st, 0, sizeof st);
    MPI_Status_set_elements(&st, MPI_DOUBLE, 5);
    int c, e, flag;
    MPI_Get_count(&st, MPI_DOUBLE, &c);
    MPI_Get_elements(&st, MPI_DOUBLE, &e);
    CHECK(c == 5 && e == 5, "set_elements 5 doubles: count %d elements %d", c, e);
    MPI_Get_count(&st, MPI_INT, &c);
    CHECK(c == 10, "5 doubles as ints: %d", c);
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    MPI_Status_set_elements(&st, pair, 3);
    MPI_Get_count(&st, pair, &c);
    MPI_Get_elements(&st, pair, &e);
    CHECK(c == 3 && e == 6, "3 pairs: count %d elements %d", c, e);
    MPI_Status_set_elements_x(&st, MPI_CHAR, (MPI_Count)5 << 32);
    MPI_Count ex;
    MPI_Get_elements_x(&st, MPI_CHAR, &ex);
    CHECK(ex == (MPI_Count)5 << 32, "set_elements_x 5*2^32 chars: %ld", (long)ex);
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag, "cancelled before set_cancelled");
    MPI_Status_set_cancelled(&st, 1);
    MPI_Test_cancelled(&st, &flag);
    MPI_Get_elements_x(&st, MPI_CHAR, &ex);
    CHECK(flag && ex == (MPI_Count)5 << 32, "set_cancelled: flag %d, count kept %ld", flag, (long)ex);
    MPI_Status_set_cancelled(&st, 0);
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag, "set_cancelled 0");
    MPI_Type_free(&pair);
    /* type_match_size: the type of each class and size has that size */
    int classes[3] = {MPI_TYPECLASS_REAL, MPI_TYPECLASS_INTEGER, MPI_TYPECLASS_COMPLEX};
    int sizes[3][4] = {{4, 8, 16, 0}, {1, 2, 4, 8}, {8, 16, 32, 0}};
    MPI_Datatype want[3][4] = {{MPI_REAL4, MPI_REAL8, MPI_REAL16},
                               {MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8},
                               {MPI_COMPLEX8, MPI_COMPLEX16, MPI_COMPLEX32}};
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 4 && sizes[k][j]; j++) {
            MPI_Datatype t;
            int ts;
            MPI_Type_match_size(classes[k], sizes[k][j], &t);
            MPI_Type_size(t, &ts);
            CHECK(t == want[k][j] && ts == sizes[k][j], "match_size(%d, %d) = 0x%x of size %d", classes[k],
                  sizes[k][j], t, ts);
        }
    CHECK(MPI_Pcontrol(0) == MPI_SUCCESS && MPI_Pcontrol(2, "extra", 3.5) == MPI_SUCCESS, "Pcontrol");
    MPI_Comm parent = 0;
    MPI_Comm_get_parent(&parent);
    CHECK(parent == MPI_COMM_NULL, "Comm_get_parent: 0x%x", parent);
    /* added error classes and codes */
    int ucls, ucode1, ucode2, ocode, got, len, *last, lflag;
    char text[MPI_MAX_ERROR_STRING];
    CHECK(MPI_Add_error_class(&ucls) == MPI_SUCCESS && ucls > MPI_ERR_LASTCODE, "Add_error_class: %d", ucls);
    MPI_Add_error_code(ucls, &ucode1);
    MPI_Add_error_code(ucls, &ucode2);
    MPI_Add_error_code(MPI_ERR_ARG, &ocode);
    CHECK(ucode1 != ucode2 && ucode1 != ucls && ocode != MPI_ERR_ARG, "codes %d %d %d of class %d", ucode1, ucode2,
          ocode, ucls);
    MPI_Add_error_string(ucls, "my class");
    MPI_Add_error_string(ucode2, "my second code");
    MPI_Error_class(ucode1, &got);
    CHECK(got == ucls, "class of code %d: %d, want %d", ucode1, got, ucls);
    MPI_Error_class(ucls, &got);
    CHECK(got == ucls, "class of class %d: %d", ucls, got);
    MPI_Error_class(ocode, &got);
    CHECK(got == MPI_ERR_ARG, "class of a code added to MPI_ERR_ARG: %d", got);
    MPI_Error_string(ucode2, text, &len);
    CHECK(strcmp(text, "my second code") == 0 && len == 14, "string of code: '%s' (%d)", text, len);
    MPI_Error_string(ucls, text, &len);
    CHECK(strcmp(text, "my class") == 0, "string of class: '%s'", text);
    MPI_Error_string(ucode1, text, &len);
    CHECK(len == 0 && text[0] == 0, "string never set: '%s'", text);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &lflag);
    CHECK(lflag && *last >= ucode1 && *last >= ucode2 && *last >= ocode, "MPI_LASTUSEDCODE %d", lflag ? *last : -1);
    /* errors */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int cls;
    MPI_Error_class(MPI_Add_error_string(MPI_ERR_TAG, "no"), &cls);
    CHECK(cls == MPI_ERR_ARG, "Add_error_string on a predefined class: class %d", cls);
    MPI_Error_class(MPI_Add_error_code(ucode1, &got), &cls);
    CHECK(cls == MPI_ERR_ARG, "Add_error_code to a code, not a class: class %d", cls);
    MPI_Datatype t;
    MPI_Error_class(MPI_Type_match_size(MPI_TYPECLASS_REAL, 6, &t), &cls);
    CHECK(cls == MPI_ERR_ARG, "match_size(REAL, 6): class %d", cls);
    MPI_Error_class(MPI_Type_match_size(7, 4, &t), &cls);
    CHECK(cls == MPI_ERR_ARG, "match_size(7, 4): class %d", cls);
    MPI_Error_class(MPI_Alloc_mem(-1, MPI_INFO_NULL, &z), &cls);
    CHECK(cls == MPI_ERR_SIZE, "Alloc_mem(-1): class %d", cls);
    MPI_Error_class(MPI_Status_set_elements(&st, MPI_INT, -3), &cls);
    CHECK(cls == MPI_ERR_COUNT, "set_elements(-3): class %d", cls);
    MPI_Error_class(MPI_Status_set_elements(MPI_STATUS_IGNORE, MPI_INT, 3), &cls);
    CHECK(cls == MPI_ERR_ARG, "set_elements(MPI_STATUS_IGNORE): class %d", cls);
    MPI_Finalize();
    if (rank == 0) printf("misc_services ok\n");
    return 0;
}
