/* MPI_THREAD_MULTIPLE: two threads per rank exchange messages with the
 * neighbours at the same time, each on its own tag. */
#include "util.h"
#include <pthread.h>

static int rank_g, size_g;
static void *worker(void *arg) {
    int id = (int)(long)arg;
    int right = (rank_g + 1) % size_g, left = (rank_g + size_g - 1) % size_g;
    for (int it = 0; it < 300; it++) {
        int out[64], in[64];
        for (int k = 0; k < 64; k++) out[k] = rank_g * 1000000 + id * 100000 + it * 100 + k;
        MPI_Sendrecv(out, 64, MPI_INT, right, id, in, 64, MPI_INT, left, id, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int k = 0; k < 64; k++) CHECK(in[k] == left * 1000000 + id * 100000 + it * 100 + k, "thread %d iter %d", id, it);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_g);
    MPI_Comm_size(MPI_COMM_WORLD, &size_g);
    test_rank = rank_g;
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    int q;
    MPI_Query_thread(&q);
    CHECK(q == MPI_THREAD_MULTIPLE, "query %d", q);
    MPI_Finalize();
    return 0;
}
