/* Small conformance points that outside suites checked:
 * - every error class (0-127 and MPI_ERR_LASTCODE) is a valid error code for
 *   MPI_Error_class and MPI_Error_string, named ones with their own string;
 *   MPI_Comm_disconnect(MPI_COMM_NULL) is MPI_ERR_COMM;
 * - MPI_Dims_create is balanced (72 in 2: 9 x 8);
 * - MPI_Type_get_name(MPI_C_COMPLEX) answers as MPICH does;
 * - a null datatype with count 0 is accepted;
 * - the PMPI_ handle conversion macros exist. */
#include "util.h"

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* ---- error classes */
    int named[] = {MPI_ERR_BUFFER, MPI_ERR_IN_STATUS, MPI_ERR_ASSERT, MPI_ERR_RMA_FLAVOR, MPI_T_ERR_MEMORY,
                   MPI_T_ERR_CANNOT_INIT, MPI_T_ERR_INVALID, MPI_ERR_SESSION, MPI_ERR_PROC_ABORTED,
                   MPI_ERR_VALUE_TOO_LARGE, MPI_T_ERR_NOT_SUPPORTED, MPI_ERR_ERRHANDLER, MPI_ERR_LASTCODE};
    char prev[MPI_MAX_ERROR_STRING] = "";
    for (unsigned k = 0; k < sizeof named / sizeof named[0]; k++) {
        int c = -1, len = -1;
        char s[MPI_MAX_ERROR_STRING];
        int e = MPI_Error_class(named[k], &c);
        CHECK(e == MPI_SUCCESS && c == named[k], "MPI_Error_class(%d): rc %d class %d", named[k], e, c);
        e = MPI_Error_string(named[k], s, &len);
        CHECK(e == MPI_SUCCESS && len > 0 && (int)strlen(s) == len, "MPI_Error_string(%d): rc %d len %d", named[k], e, len);
        CHECK(strcmp(s, prev) != 0, "MPI_Error_string(%d) is the string of the class before: %s", named[k], s);
        strcpy(prev, s);
    }
    {
        char s[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(MPI_T_ERR_MEMORY, s, &len);
        CHECK(strstr(s, "MPI_T_ERR_MEMORY") != NULL, "MPI_T_ERR_MEMORY's string: %s", s);
        MPI_Error_string(MPI_ERR_ERRHANDLER, s, &len);
        CHECK(strstr(s, "MPI_ERR_ERRHANDLER") != NULL, "MPI_ERR_ERRHANDLER's string: %s", s);
    }
    /* every value from 0 to 109 is an error class (as MPICH has it) */
    for (int v = 0; v <= 109; v++) {
        int c = -1, len = -1;
        char s[MPI_MAX_ERROR_STRING];
        CHECK(MPI_Error_class(v, &c) == MPI_SUCCESS && c == v, "MPI_Error_class(%d) gives %d", v, c);
        CHECK(MPI_Error_string(v, s, &len) == MPI_SUCCESS && len > 0, "MPI_Error_string(%d)", v);
    }
    {
        int c = 0;
        CHECK(MPI_Error_class(-1, &c) == MPI_ERR_ARG, "MPI_Error_class(-1) must fail");
    }
    MPI_Comm nullc = MPI_COMM_NULL;
    int e = MPI_Comm_disconnect(&nullc);
    {
        int c = -1;
        MPI_Error_class(e, &c);
        CHECK(c == MPI_ERR_COMM, "MPI_Comm_disconnect(MPI_COMM_NULL): class %d, want MPI_ERR_COMM", c);
    }

    /* ---- balanced dims */
    {
        int d[2] = {0, 0};
        MPI_Dims_create(72, 2, d);
        CHECK(d[0] == 9 && d[1] == 8, "MPI_Dims_create(72, 2): %d x %d", d[0], d[1]);
        d[0] = d[1] = 0;
        MPI_Dims_create(180, 2, d);
        CHECK(d[0] == 15 && d[1] == 12, "MPI_Dims_create(180, 2): %d x %d", d[0], d[1]);
        int t[3] = {0, 3, 0};
        MPI_Dims_create(72, 3, t);
        CHECK(t[0] == 6 && t[1] == 3 && t[2] == 4, "MPI_Dims_create(72, 3) with dims[1]=3: %d x %d x %d", t[0], t[1], t[2]);
        int q[3] = {0, 0, 0};
        MPI_Dims_create(24, 3, q);
        CHECK(q[0] == 4 && q[1] == 3 && q[2] == 2, "MPI_Dims_create(24, 3): %d x %d x %d", q[0], q[1], q[2]);
    }

    /* ---- names */
    {
        char n[MPI_MAX_OBJECT_NAME];
        int len;
        MPI_Type_get_name(MPI_C_COMPLEX, n, &len);
        CHECK(strcmp(n, "MPI_C_COMPLEX") == 0, "MPI_Type_get_name(MPI_C_COMPLEX): %s", n);
        MPI_Type_get_name(MPI_C_DOUBLE_COMPLEX, n, &len);
        CHECK(strcmp(n, "MPI_C_DOUBLE_COMPLEX") == 0, "MPI_Type_get_name(MPI_C_DOUBLE_COMPLEX): %s", n);
    }

    /* ---- a null datatype with nothing to move */
    {
        MPI_Request r[2];
        MPI_Status st;
        CHECK(MPI_Irecv(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r[0]) == MPI_SUCCESS,
              "MPI_Irecv(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL)");
        CHECK(MPI_Isend(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r[1]) == MPI_SUCCESS,
              "MPI_Isend(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL)");
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        CHECK(MPI_Sendrecv(NULL, 0, MPI_DATATYPE_NULL, to, 5, NULL, 0, MPI_DATATYPE_NULL, from, 5, MPI_COMM_WORLD, &st) ==
                  MPI_SUCCESS && st.MPI_SOURCE == from,
              "a zero-count message with MPI_DATATYPE_NULL");
        /* with data, a null datatype is still an error */
        int x = 0;
        e = MPI_Send(&x, 1, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
        int c = -1;
        MPI_Error_class(e, &c);
        CHECK(c == MPI_ERR_TYPE, "MPI_Send with count 1 and MPI_DATATYPE_NULL: class %d", c);
    }

    /* ---- the PMPI_ conversion macros (compile-time: each names the same handle) */
    {
        MPI_Fint f = PMPI_Comm_c2f(MPI_COMM_WORLD);
        CHECK(PMPI_Comm_f2c(f) == MPI_COMM_WORLD, "PMPI_Comm_c2f/f2c");
        CHECK(PMPI_Type_f2c(PMPI_Type_c2f(MPI_INT)) == MPI_INT, "PMPI_Type_c2f/f2c");
        CHECK(PMPI_Group_f2c(PMPI_Group_c2f(MPI_GROUP_EMPTY)) == MPI_GROUP_EMPTY, "PMPI_Group");
        CHECK(PMPI_Info_f2c(PMPI_Info_c2f(MPI_INFO_NULL)) == MPI_INFO_NULL, "PMPI_Info");
        CHECK(PMPI_Request_f2c(PMPI_Request_c2f(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL, "PMPI_Request");
        CHECK(PMPI_Op_f2c(PMPI_Op_c2f(MPI_SUM)) == MPI_SUM, "PMPI_Op");
        CHECK(PMPI_Errhandler_f2c(PMPI_Errhandler_c2f(MPI_ERRORS_RETURN)) == MPI_ERRORS_RETURN, "PMPI_Errhandler");
        CHECK(PMPI_Win_f2c(PMPI_Win_c2f(MPI_WIN_NULL)) == MPI_WIN_NULL, "PMPI_Win");
        CHECK(PMPI_Message_f2c(PMPI_Message_c2f(MPI_MESSAGE_NULL)) == MPI_MESSAGE_NULL, "PMPI_Message");
    }

    if (rank == 0) printf("basics_conformance: ok\n");
    MPI_Finalize();
    return 0;
}
