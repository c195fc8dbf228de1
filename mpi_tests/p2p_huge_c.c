/* Counts above 2^31 - 1 in the large-count point-to-point forms: MPI_Send_c
 * / MPI_Recv_c of 3 GiB of MPI_BYTE and MPI_Isend_c / MPI_Irecv_c of
 * 2^31 + 10 MPI_CHAR, checked by content and by MPI_Get_count_c; a
 * receive too small for the message is MPI_ERR_TRUNCATE; a partitioned
 * send of 4 partitions of 2^29 + 4 MPI_CHAR (2^31 + 16 in all), the
 * receive cut into 2 partitions, made ready in reverse. Two ranks; a
 * rank without the memory skips (and says so). */
#include "util.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static unsigned char hpat(size_t i) { return (unsigned char)((i * 2654435761u) >> 13); }

static int hcheck(const unsigned char *b, size_t n) {
    /* Every 4 KiB page and the last bytes. */
    for (size_t i = 0; i < n; i += 4093)
        if (b[i] != hpat(i)) return 0;
    for (size_t i = n - 64; i < n; i++)
        if (b[i] != hpat(i)) return 0;
    return 1;
}

static void hfill(unsigned char *b, size_t n) {
    for (size_t i = 0; i < n; i += 4093) b[i] = hpat(i);
    for (size_t i = n - 64; i < n; i++) b[i] = hpat(i);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    if (size != 2) {
        if (rank == 0) printf("skip: needs 2 ranks\n");
        MPI_Finalize();
        return 0;
    }
    MPI_Count counts[2] = {(MPI_Count)3 << 30, ((MPI_Count)1 << 31) + 10};
    MPI_Datatype types[2] = {MPI_BYTE, MPI_CHAR};
    for (int k = 0; k < 2; k++) {
        size_t n = (size_t)counts[k];
        unsigned char *b = malloc(n);
        int ok = b != NULL, all;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all) {
            if (rank == 0) printf("skip: no memory for %zu bytes\n", n);
            free(b);
            continue;
        }
        if (rank == 0) {
            hfill(b, n);
            if (k == 0) {
                CHECK(MPI_Send_c(b, counts[k], types[k], 1, 1, MPI_COMM_WORLD) == MPI_SUCCESS, "send_c");
            } else {
                MPI_Request r;
                MPI_Isend_c(b, counts[k], types[k], 1, 1, MPI_COMM_WORLD, &r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            }
        } else {
            memset(b, 0, 4096);
            MPI_Status st;
            if (k == 0) {
                CHECK(MPI_Recv_c(b, counts[k], types[k], 0, 1, MPI_COMM_WORLD, &st) == MPI_SUCCESS, "recv_c");
            } else {
                MPI_Request r;
                MPI_Irecv_c(b, counts[k], types[k], 0, 1, MPI_COMM_WORLD, &r);
                MPI_Wait(&r, &st);
            }
            MPI_Count got = -1;
            MPI_Get_count_c(&st, types[k], &got);
            CHECK(got == counts[k], "count %lld, expected %lld", (long long)got, (long long)counts[k]);
            int c = 0;
            MPI_Get_count(&st, types[k], &c);
            CHECK(c == MPI_UNDEFINED, "int count of a huge message: %d", c);
            CHECK(hcheck(b, n), "huge message %d: wrong contents", k);
        }
        free(b);
    }
    /* A huge message into a smaller receive. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    size_t n = ((size_t)1 << 31) + 4;
    unsigned char *b = malloc(n);
    if (b) {
        if (rank == 0) {
            hfill(b, n);
            MPI_Send_c(b, (MPI_Count)n, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
        } else {
            int rc = MPI_Recv_c(b, (MPI_Count)n - 4, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int cls = -1;
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE, "truncated huge receive: class %d", cls);
        }
        free(b);
    }
    /* Partitioned, 2^31 + 16 elements in all. */
    {
        MPI_Count per = ((MPI_Count)1 << 29) + 4, all = 4 * per;
        unsigned char *pb = malloc((size_t)all);
        int ok = pb != NULL, every;
        MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!every) {
            if (rank == 0) printf("skip: no memory for the partitioned message\n");
        } else {
            MPI_Request r;
            if (rank == 0) {
                hfill(pb, (size_t)all);
                CHECK(MPI_Psend_init(pb, 4, per, MPI_CHAR, 1, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &r) == MPI_SUCCESS,
                      "psend_init of 2^31 + 16");
                MPI_Start(&r);
                for (int i = 3; i >= 0; i--) MPI_Pready(i, r);
            } else {
                memset(pb, 0, 4096);
                CHECK(MPI_Precv_init(pb, 2, 2 * per, MPI_CHAR, 0, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &r) == MPI_SUCCESS,
                      "precv_init of 2^31 + 16");
                MPI_Start(&r);
            }
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            if (rank == 1) CHECK(hcheck(pb, (size_t)all), "partitioned message: wrong contents");
            MPI_Request_free(&r);
        }
        free(pb);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("p2p_huge_c: OK\n");
    MPI_Finalize();
    return 0;
}
