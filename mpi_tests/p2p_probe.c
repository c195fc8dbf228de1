/* Probe, Iprobe, Mprobe/Mrecv, Improbe/Imrecv, Cancel of a receive, and the
 * PROC_NULL forms. */
#include "util.h"

int main(int argc, char **argv) {
    int rank, size, flag, count;
    MPI_Status st;
    MPI_Request rq;
    MPI_Message msg;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    static unsigned char sb[200000], rb[200000];

    /* Probe learns the size, then receive exactly that. Small and rendezvous sizes. */
    long lens[] = {0, 10, 5000, 150000};
    for (int i = 0; i < 4; i++) {
        fill(sb, lens[i], rank, i);
        MPI_Isend(sb, (int)lens[i], MPI_BYTE, right, 20 + i, MPI_COMM_WORLD, &rq);
        MPI_Probe(MPI_ANY_SOURCE, 20 + i, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == lens[i] && st.MPI_SOURCE == left, "probe count %d src %d", count, st.MPI_SOURCE);
        MPI_Recv(rb, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st);
        CHECK(verify(rb, lens[i], left, i) < 0, "data after probe, size %ld", lens[i]);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    }

    /* Iprobe polls until the message is there; probing leaves it in place. */
    int v = rank * 10, w = -1;
    MPI_Isend(&v, 1, MPI_INT, right, 30, MPI_COMM_WORLD, &rq);
    do { MPI_Iprobe(left, 30, MPI_COMM_WORLD, &flag, &st); } while (!flag);
    MPI_Iprobe(left, 30, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag && st.MPI_SOURCE == left && st.MPI_TAG == 30, "second iprobe");
    MPI_Iprobe(left, 31, MPI_COMM_WORLD, &flag, &st);
    CHECK(!flag, "iprobe matched the wrong tag");
    MPI_Recv(&w, 1, MPI_INT, left, 30, MPI_COMM_WORLD, &st);
    CHECK(w == left * 10, "iprobe value %d", w);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);

    /* Mprobe takes the message out: a later Recv with the same envelope gets the next one. */
    int a[2] = {rank, 1}, b[2] = {rank, 2};
    MPI_Request r2[2];
    MPI_Isend(a, 2, MPI_INT, right, 40, MPI_COMM_WORLD, &r2[0]);
    MPI_Isend(b, 2, MPI_INT, right, 40, MPI_COMM_WORLD, &r2[1]);
    MPI_Mprobe(left, 40, MPI_COMM_WORLD, &msg, &st);
    CHECK(msg != MPI_MESSAGE_NULL, "mprobe message");
    int x[2] = {0, 0}, y[2] = {0, 0};
    MPI_Recv(y, 2, MPI_INT, left, 40, MPI_COMM_WORLD, &st);
    MPI_Mrecv(x, 2, MPI_INT, &msg, &st);
    CHECK(msg == MPI_MESSAGE_NULL, "mrecv nulls the message");
    CHECK(x[0] == left && x[1] == 1 && y[0] == left && y[1] == 2, "mprobe order x=%d,%d y=%d,%d", x[0], x[1], y[0], y[1]);
    MPI_Waitall(2, r2, MPI_STATUSES_IGNORE);

    /* Improbe + Imrecv of a rendezvous-size message. */
    fill(sb, 150000, rank, 9);
    MPI_Isend(sb, 150000, MPI_BYTE, right, 50, MPI_COMM_WORLD, &r2[0]);
    do { MPI_Improbe(left, 50, MPI_COMM_WORLD, &flag, &msg, &st); } while (!flag);
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == 150000, "improbe count %d", count);
    MPI_Imrecv(rb, count, MPI_BYTE, &msg, &r2[1]);
    MPI_Waitall(2, r2, MPI_STATUSES_IGNORE);
    CHECK(verify(rb, 150000, left, 9) < 0, "imrecv data");

    /* Cancel an unmatched receive. */
    MPI_Irecv(&w, 1, MPI_INT, left, 999, MPI_COMM_WORLD, &rq);
    MPI_Cancel(&rq);
    MPI_Wait(&rq, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag, "receive was not cancelled");
    /* A completed receive is not cancelled. */
    MPI_Isend(&v, 1, MPI_INT, right, 60, MPI_COMM_WORLD, &r2[0]);
    MPI_Recv(&w, 1, MPI_INT, left, 60, MPI_COMM_WORLD, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag, "completed receive reported cancelled");
    MPI_Wait(&r2[0], MPI_STATUS_IGNORE);

    /* PROC_NULL forms. */
    MPI_Probe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "probe proc_null");
    MPI_Iprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag && st.MPI_SOURCE == MPI_PROC_NULL, "iprobe proc_null");
    MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st);
    CHECK(msg == MPI_MESSAGE_NO_PROC, "mprobe proc_null gives MESSAGE_NO_PROC");
    MPI_Mrecv(&w, 1, MPI_INT, &msg, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && msg == MPI_MESSAGE_NULL, "mrecv no_proc");
    MPI_Irecv(&w, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && count == 0, "irecv proc_null");
    MPI_Finalize();
    return 0;
}
