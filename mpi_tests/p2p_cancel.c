/* MPI_Cancel of sends: a send no receive has taken yet is dropped by the
 * receiver (MPI_Test_cancelled true, the receiver never sees it), at eager
 * sizes (fast path and general path), rendezvous sizes and for MPI_Ssend's
 * and MPI_Bsend's nonblocking forms (a buffered one frees its part of the
 * attached buffer: MPI_Buffer_detach returns); one the receiver has taken is not cancelled (the data
 * arrives, MPI_Test_cancelled false); messages after a cancelled one still
 * arrive in order. Also a cancelled receive, and a send to this rank.
 * Over UCX too (a rendezvous: the receiver drops UCX's descriptor, which
 * ends the sender's send), and from device buffers (cuda=devbuf: CUDA
 * IPC, and staged with OXMPI_CUDA_IPC=0). */
#include "util.h"
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    int flag;
    MPI_Status st;
    MPI_Request r;
    int bsize = (1 << 21) + 64 * MPI_BSEND_OVERHEAD;
    char *battached = malloc(bsize);
    MPI_Buffer_attach(battached, bsize);
    if (size >= 2 && rank < 2) {
        int peer = 1 - rank;
        size_t sizes[] = {8, 1000, 40000, 1 << 20};
        char *buf = malloc(1 << 20), *in = malloc(1 << 20);
        int nk = 4;
        for (int k = 0; k < 4; k++) {
            if (k >= nk) {
                MPI_Barrier(MPI_COMM_WORLD);
                continue;
            }
            size_t n = sizes[k];
            if (rank == 0) {
                memset(buf, 'a' + k, n);
                /* Standard and synchronous sends, both cancelled. */
                MPI_Isend(buf, (int)n, MPI_CHAR, peer, 10 + k, MPI_COMM_WORLD, &r);
                MPI_Cancel(&r);
                MPI_Wait(&r, &st);
                MPI_Test_cancelled(&st, &flag);
                CHECK(flag, "size %zu: Isend not cancelled", n);
                MPI_Issend(buf, (int)n, MPI_CHAR, peer, 20 + k, MPI_COMM_WORLD, &r);
                MPI_Cancel(&r);
                MPI_Wait(&r, &st);
                MPI_Test_cancelled(&st, &flag);
                CHECK(flag, "size %zu: Issend not cancelled", n);
                MPI_Ibsend(buf, (int)n, MPI_CHAR, peer, 60 + k, MPI_COMM_WORLD, &r);
                MPI_Cancel(&r);
                MPI_Wait(&r, &st);
                MPI_Test_cancelled(&st, &flag);
                CHECK(flag, "size %zu: Ibsend not cancelled", n);
                /* What follows still arrives, in order. */
                buf[0] = 'z';
                MPI_Isend(buf, (int)n, MPI_CHAR, peer, 30 + k, MPI_COMM_WORLD, &r);
                MPI_Barrier(MPI_COMM_WORLD);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Barrier(MPI_COMM_WORLD);
                MPI_Iprobe(peer, 10 + k, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                CHECK(!flag, "size %zu: a cancelled send is still there", n);
                MPI_Iprobe(peer, 20 + k, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                CHECK(!flag, "size %zu: a cancelled Issend is still there", n);
                MPI_Iprobe(peer, 60 + k, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                CHECK(!flag, "size %zu: a cancelled Ibsend is still there", n);
                MPI_Recv(in, (int)n, MPI_CHAR, peer, 30 + k, MPI_COMM_WORLD, &st);
                int cnt;
                MPI_Get_count(&st, MPI_CHAR, &cnt);
                CHECK(cnt == (int)n && in[0] == 'z' && in[n - 1] == 'a' + k, "size %zu: next message %c", n, in[0]);
            }
        }
        /* A send the receiver has taken is not cancelled. */
        if (rank == 0) {
            memset(buf, 'm', 1000);
            MPI_Isend(buf, 1000, MPI_CHAR, peer, 40, MPI_COMM_WORLD, &r);
            int ack;
            MPI_Recv(&ack, 1, MPI_INT, peer, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Cancel(&r);
            MPI_Wait(&r, &st);
            MPI_Test_cancelled(&st, &flag);
            CHECK(!flag, "a matched send was cancelled");
            MPI_Ibsend(buf, 1000, MPI_CHAR, peer, 42, MPI_COMM_WORLD, &r);
            MPI_Recv(&ack, 1, MPI_INT, peer, 43, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Cancel(&r);
            MPI_Wait(&r, &st);
            MPI_Test_cancelled(&st, &flag);
            CHECK(!flag, "a matched buffered send was cancelled");
        } else {
            MPI_Recv(in, 1000, MPI_CHAR, peer, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(in[999] == 'm', "matched send data");
            int ack = 1;
            MPI_Send(&ack, 1, MPI_INT, peer, 41, MPI_COMM_WORLD);
            MPI_Recv(in, 1000, MPI_CHAR, peer, 42, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(in[999] == 'm', "matched buffered send data");
            MPI_Send(&ack, 1, MPI_INT, peer, 43, MPI_COMM_WORLD);
        }
        free(buf);
        free(in);
    } else if (size >= 2) {
        for (int k = 0; k < 4; k++) MPI_Barrier(MPI_COMM_WORLD);
    }
    /* A send to this rank, and a receive, cancelled. */
    int v = 5, w = 0;
    MPI_Isend(&v, 1, MPI_INT, rank, 50, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag, "send to self not cancelled");
    MPI_Iprobe(rank, 50, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    CHECK(!flag, "cancelled send to self still there");
    MPI_Ibsend(&v, 1, MPI_INT, rank, 52, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag, "buffered send to self not cancelled");
    MPI_Iprobe(rank, 52, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    CHECK(!flag, "cancelled buffered send to self still there");
    /* Every buffered message is gone: the buffer detaches at once. */
    void *back;
    int bback;
    MPI_Buffer_detach(&back, &bback);
    CHECK(back == battached && bback == bsize, "detached %p %d", back, bback);
    free(battached);
    MPI_Irecv(&w, 1, MPI_INT, MPI_ANY_SOURCE, 51, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag, "receive not cancelled");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("p2p_cancel: OK\n");
    MPI_Finalize();
    return 0;
}
