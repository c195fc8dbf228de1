/* Communicators created and freed at the same time by several threads of
 * each rank (MPI_THREAD_MULTIPLE), each thread on its own parent: every new
 * communicator gets a context id of its own, so messages sent on it with the
 * same source and tag as the other threads' never cross. */
#include "util.h"
#include <pthread.h>

#define THREADS 3
#define ITERS 40
static int rank_g, size_g;
static MPI_Comm parent[THREADS];

static void *worker(void *arg) {
    int id = (int)(long)arg;
    int right = (rank_g + 1) % size_g, left = (rank_g + size_g - 1) % size_g;
    for (int it = 0; it < ITERS; it++) {
        MPI_Comm c;
        switch (it % 3) {
        case 0:
            MPI_Comm_dup(parent[id], &c);
            break;
        case 1:
            MPI_Comm_split(parent[id], 0, rank_g, &c);
            break;
        default: {
            MPI_Request q;
            MPI_Comm_idup(parent[id], &c, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
        }
        int out = rank_g * 10000 + id * 1000 + it, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, right, 0, &in, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c,
                     MPI_STATUS_IGNORE);
        CHECK(in == left * 10000 + id * 1000 + it, "thread %d iteration %d got %d", id, it, in);
        int s = 0;
        MPI_Allreduce(&out, &s, 1, MPI_INT, MPI_MAX, c);
        CHECK(s == (size_g - 1) * 10000 + id * 1000 + it, "thread %d iteration %d max %d", id, it, s);
        MPI_Comm_free(&c);
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
    for (int i = 0; i < THREADS; i++) MPI_Comm_dup(MPI_COMM_WORLD, &parent[i]);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) MPI_Comm_free(&parent[i]);
    MPI_Finalize();
    if (rank_g == 0) printf("comm_threads ok\n");
    return 0;
}
