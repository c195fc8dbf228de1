/* A large non-contiguous message moves in bounded memory: a vector of N
 * long long with stride 2 (a 16 N byte buffer, half of it data) sent from
 * rank 0 to every other rank, received into the same vector type, and into
 * a contiguous buffer; then the other way round (contiguous to vector).
 * Each rank's peak resident memory (VmHWM) must stay within its buffers
 * plus a bounded margin (OXMPI_TEST_MARGIN_MB, default 96): no per-element
 * typemap, iovec list or whole-message staging copy. N: argv[1] (default
 * 4 Mi elements, a 64 MiB buffer); at 135 M (2.16 GB) it is the case that
 * was once killed at 8.4 GB resident. */
#include "util.h"
#include <stdint.h>

static long peak_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) kb = atol(line + 6);
    if (f) fclose(f);
    return kb;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    long long n = argc > 1 ? atoll(argv[1]) : 4LL << 20;
    const char *m = getenv("OXMPI_TEST_MARGIN_MB");
    long margin_mb = m ? atol(m) : 96;
    size_t bytes = (size_t)n * 16;
    long long *buf = malloc(bytes);
    CHECK(buf, "no memory for the %zu-byte buffer", bytes);
    /* every page of the buffer resident before the baseline is taken */
    for (long long i = 0; i < n; i++) {
        buf[2 * i] = rank == 0 ? i * 3 + 1 : 0;
        buf[2 * i + 1] = rank == 0 ? -1 : -7;
    }
    long before = peak_kb();
    MPI_Datatype v;
    MPI_Type_vector((int)n, 1, 2, MPI_LONG_LONG, &v);
    MPI_Type_commit(&v);
    if (rank == 0) {
        for (int r = 1; r < size; r++) MPI_Send(buf, 1, v, r, 1, MPI_COMM_WORLD);
        /* back: each rank sends its n values contiguous, received into the vector */
        for (int r = 1; r < size; r++) {
            for (long long i = 0; i < n; i++) buf[2 * i] = 0;
            MPI_Recv(buf, 1, v, r, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (long long i = 0; i < n; i += 4099)
                CHECK(buf[2 * i] == i * 5 + r && buf[2 * i + 1] == -1, "from rank %d: element %lld is %lld", r, i, buf[2 * i]);
            CHECK(buf[2 * (n - 1)] == (n - 1) * 5 + r, "from rank %d: last element", r);
        }
    } else {
        MPI_Status st;
        MPI_Recv(buf, 1, v, 0, 1, MPI_COMM_WORLD, &st);
        int cnt;
        MPI_Get_count(&st, MPI_LONG_LONG, &cnt);
        CHECK(cnt == n, "received %d long long, want %lld", cnt, n);
        for (long long i = 0; i < n; i += 4099)
            CHECK(buf[2 * i] == i * 3 + 1 && buf[2 * i + 1] == -7, "element %lld is %lld (gap %lld)", i, buf[2 * i], buf[2 * i + 1]);
        CHECK(buf[2 * (n - 1)] == (n - 1) * 3 + 1, "last element");
        /* the same values contiguous, then back as n contiguous to the vector */
        long long *c = (long long *)buf; /* reuse the first half as a contiguous array */
        for (long long i = 0; i < n; i++) c[i] = i * 5 + rank;
        MPI_Send(c, (int)n, MPI_LONG_LONG, 0, 2, MPI_COMM_WORLD);
    }
    long after = peak_kb();
    long extra_mb = (after - before) / 1024;
    CHECK(extra_mb <= margin_mb, "peak resident memory grew by %ld MiB while moving a %zu MiB message (margin %ld MiB)", extra_mb,
          bytes >> 21, margin_mb);
    long worst = 0;
    MPI_Reduce(&extra_mb, &worst, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("p2p_vector_huge: ok (%lld elements, %zu MiB buffers, peak grew by at most %ld MiB)\n", n, bytes >> 20, worst);
    free(buf);
    MPI_Type_free(&v);
    MPI_Finalize();
    return 0;
}
