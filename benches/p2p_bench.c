/* OSU-style point-to-point benchmark, our own: for each size,
 *   lat   one-way latency (half the ping-pong round trip), us
 *   bw    unidirectional bandwidth, window of 64 nonblocking sends, MB/s
 *   bibw  bidirectional bandwidth, both sides windows of 64, MB/s
 *   rate  messages per second, 8 B, window of 64
 *   vbw   strided ping-pong: both sides use a vector of 512 B blocks (or
 *         $VBW_BLOCK bytes) at twice that stride; payload MB/s of the
 *         one-way time (sizes >= 4 KiB)
 *   cma   the hardware reference: rank 1 copies rank 0's buffer with one
 *         process_vm_readv per message (single thread, no MPI), MB/s, sizes
 *         from 64 KiB; printed only where the kernel allows it
 * Usage: p2p_bench [lat|bw|bibw|rate|vbw|cma|all] [max_bytes]   (run with 2 ranks)
 * Output lines: "<test> <size> <value>". Builds against any MPI. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>
#endif

#define WINDOW 64

static int iters_for(long n, int base) {
    if (n <= 8192) return base;
    long it = base * 8192L / n;
    return it < 20 ? 20 : (int)it;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *what = argc > 1 ? argv[1] : "all";
    long maxn = argc > 2 ? atol(argv[2]) : (16L << 20);
    if (size < 2) { if (rank == 0) printf("needs 2 ranks\n"); MPI_Finalize(); return 1; }
    char *sb = malloc(maxn > 0 ? maxn * WINDOW > (256L << 20) ? maxn : maxn : 1);
    char *rb = malloc(maxn > 0 ? maxn : 1);
    memset(sb, 1, maxn > 0 ? maxn : 1);
    memset(rb, 0, maxn > 0 ? maxn : 1);
    MPI_Request rq[2 * WINDOW];
    int peer = 1 - rank;
    int all = !strcmp(what, "all");
    if (rank < 2 && (all || !strcmp(what, "lat"))) {
        for (long n = 0; n <= maxn; n = n ? n * 2 : 1) {
            int iters = iters_for(n, 20000), warm = iters / 10 + 1;
            double t0 = 0;
            for (int i = 0; i < iters + warm; i++) {
                if (i == warm) t0 = MPI_Wtime();
                if (rank == 0) {
                    MPI_Send(sb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                    MPI_Recv(rb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(rb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(sb, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                }
            }
            if (rank == 0) printf("lat %ld %.3f\n", n, (MPI_Wtime() - t0) / iters / 2 * 1e6);
            fflush(stdout);
        }
    }
    if (rank < 2 && (all || !strcmp(what, "bw") || !strcmp(what, "bibw"))) {
        int bi = !strcmp(what, "bibw");
        for (int pass = 0; pass < (all ? 2 : 1); pass++) {
            if (all) bi = pass;
            for (long n = 1; n <= maxn; n *= 2) {
                int iters = iters_for(n, 200) / (n > (1 << 20) ? 4 : 1) + 2, warm = 2;
                double t0 = 0;
                for (int i = 0; i < iters + warm; i++) {
                    if (i == warm) t0 = MPI_Wtime();
                    int k = 0;
                    if (rank == 0 || bi)
                        for (int w = 0; w < WINDOW; w++) MPI_Isend(sb, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &rq[k++]);
                    if (rank == 1 || bi)
                        for (int w = 0; w < WINDOW; w++) MPI_Irecv(rb, (int)n, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &rq[k++]);
                    MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
                    char ack = 0;
                    if (rank == 1) MPI_Send(&ack, 1, MPI_BYTE, peer, 3, MPI_COMM_WORLD);
                    else MPI_Recv(&ack, 1, MPI_BYTE, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                }
                double dt = MPI_Wtime() - t0;
                if (rank == 0) printf("%s %ld %.1f\n", bi ? "bibw" : "bw", n, (double)n * WINDOW * iters * (bi ? 2 : 1) / dt / 1e6);
                fflush(stdout);
            }
        }
    }
    if (rank < 2 && (all || !strcmp(what, "rate"))) {
        int iters = 2000, warm = 100;
        double t0 = 0;
        for (int i = 0; i < iters + warm; i++) {
            if (i == warm) t0 = MPI_Wtime();
            for (int w = 0; w < WINDOW; w++) {
                if (rank == 0) MPI_Isend(sb, 8, MPI_BYTE, peer, 4, MPI_COMM_WORLD, &rq[w]);
                else MPI_Irecv(rb, 8, MPI_BYTE, peer, 4, MPI_COMM_WORLD, &rq[w]);
            }
            MPI_Waitall(WINDOW, rq, MPI_STATUSES_IGNORE);
            char ack = 0;
            if (rank == 1) MPI_Send(&ack, 1, MPI_BYTE, peer, 5, MPI_COMM_WORLD);
            else MPI_Recv(&ack, 1, MPI_BYTE, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (rank == 0) printf("rate 8 %.0f\n", (double)WINDOW * iters / (MPI_Wtime() - t0));
    }
    if (rank < 2 && (all || !strcmp(what, "vbw")) && maxn >= 4096) {
        /* The strided buffers span twice the payload. */
        char *vs = malloc(2 * maxn), *vr = malloc(2 * maxn);
        memset(vs, 3, 2 * maxn);
        memset(vr, 0, 2 * maxn);
        long blk = getenv("VBW_BLOCK") ? atol(getenv("VBW_BLOCK")) : 512;
        for (long n = 4096; n <= maxn; n *= 4) {
            MPI_Datatype v;
            long b = blk < n ? blk : n;
            MPI_Type_vector((int)(n / b), (int)b, (int)(2 * b), MPI_BYTE, &v);
            MPI_Type_commit(&v);
            int iters = iters_for(n, 2000) / 2 + 5, warm = 3;
            double t0 = 0;
            for (int i = 0; i < iters + warm; i++) {
                if (i == warm) t0 = MPI_Wtime();
                if (rank == 0) {
                    MPI_Send(vs, 1, v, peer, 6, MPI_COMM_WORLD);
                    MPI_Recv(vr, 1, v, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(vr, 1, v, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(vs, 1, v, peer, 6, MPI_COMM_WORLD);
                }
            }
            double one_way = (MPI_Wtime() - t0) / iters / 2;
            if (rank == 0) printf("vbw %ld %.1f\n", n, n / one_way / 1e6);
            fflush(stdout);
            MPI_Type_free(&v);
        }
        free(vs);
        free(vr);
    }
#ifdef __linux__
    if (rank < 2 && (all || !strcmp(what, "cma")) && maxn >= 65536) {
        /* Let the peer read this process (Yama ptrace_scope 1). */
        prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
        long info[2] = {(long)getpid(), (long)sb};
        if (rank == 0) MPI_Send(info, 2, MPI_LONG, 1, 7, MPI_COMM_WORLD);
        else MPI_Recv(info, 2, MPI_LONG, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (long n = 65536; n <= maxn; n *= 2) {
            int iters = iters_for(n, 200) * 4 + 2, ok = 1;
            double t0 = 0;
            if (rank == 1) {
                for (int i = 0; i < iters + 2 && ok; i++) {
                    if (i == 2) t0 = MPI_Wtime();
                    struct iovec l = {rb, (size_t)n}, r = {(void *)info[1], (size_t)n};
                    ok = process_vm_readv((pid_t)info[0], &l, 1, &r, 1, 0) == n;
                }
                double dt = MPI_Wtime() - t0;
                MPI_Send(&ok, 1, MPI_INT, 0, 8, MPI_COMM_WORLD);
                MPI_Send(&dt, 1, MPI_DOUBLE, 0, 8, MPI_COMM_WORLD);
            } else {
                double dt;
                MPI_Recv(&ok, 1, MPI_INT, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Recv(&dt, 1, MPI_DOUBLE, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (ok) printf("cma %ld %.1f\n", n, (double)n * iters / dt / 1e6);
                fflush(stdout);
            }
            if (!ok) break;
        }
    }
#endif
    free(sb);
    free(rb);
    MPI_Finalize();
    return 0;
}
