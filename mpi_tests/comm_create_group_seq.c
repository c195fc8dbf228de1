/* MPI_Comm_create_group over sequences of subsets, each call made only by
 * its group's members: first the sequence that hung ({2}, {0,2}, {0,1} at
 * 3 ranks), then pseudo-random subsets (the same sequence on every rank),
 * some communicators kept while later ones are made. Each new communicator
 * is checked with an allreduce of its members' world ranks. */
#include "util.h"

static unsigned long long state = 0x9e3779b97f4a7c15ULL;
static unsigned next(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (unsigned)(state >> 11);
}

static MPI_Comm make(MPI_Group world, const int *ranks, int n, int tag, int rank) {
    int in = 0;
    for (int j = 0; j < n; j++) in |= ranks[j] == rank;
    if (!in) return MPI_COMM_NULL;
    MPI_Group g;
    MPI_Group_incl(world, n, (int *)ranks, &g);
    MPI_Comm c;
    MPI_Comm_create_group(MPI_COMM_WORLD, g, tag, &c);
    MPI_Group_free(&g);
    CHECK(c != MPI_COMM_NULL, "member got MPI_COMM_NULL");
    int sz, sum = 0, want = 0;
    MPI_Comm_size(c, &sz);
    CHECK(sz == n, "size %d, want %d", sz, n);
    for (int j = 0; j < n; j++) want += ranks[j];
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c);
    CHECK(sum == want, "allreduce over the new communicator: %d, want %d", sum, want);
    return c;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);

    if (size >= 3) {
        int a[1] = {2}, b[2] = {0, 2}, c[2] = {0, 1};
        MPI_Comm x;
        x = make(world, a, 1, 5, rank);
        if (x != MPI_COMM_NULL) MPI_Comm_free(&x);
        x = make(world, b, 2, 5, rank);
        if (x != MPI_COMM_NULL) MPI_Comm_free(&x);
        x = make(world, c, 2, 5, rank);
        if (x != MPI_COMM_NULL) MPI_Comm_free(&x);
    }

    enum { KEEP = 4 };
    MPI_Comm kept[KEEP];
    for (int k = 0; k < KEEP; k++) kept[k] = MPI_COMM_NULL;
    int ranks[64];
    for (int it = 0; it < 300; it++) {
        int n = 0;
        unsigned mask = next() % (1u << (size < 16 ? size : 16));
        if (mask == 0) mask = 1u << (next() % size);
        for (int r = 0; r < size && r < 16; r++)
            if (mask & (1u << r)) ranks[n++] = r;
        /* the order of the group is its rank order in the new communicator */
        if (next() % 2)
            for (int j = 0; j < n / 2; j++) {
                int t = ranks[j];
                ranks[j] = ranks[n - 1 - j];
                ranks[n - 1 - j] = t;
            }
        int tag = (int)(next() % 3);
        MPI_Comm c = make(world, ranks, n, tag, rank);
        int slot = it % KEEP;
        if (kept[slot] != MPI_COMM_NULL) {
            /* still usable after later creations */
            MPI_Barrier(kept[slot]);
            MPI_Comm_free(&kept[slot]);
        }
        kept[slot] = c;
    }
    for (int k = 0; k < KEEP; k++)
        if (kept[k] != MPI_COMM_NULL) MPI_Comm_free(&kept[k]);
    MPI_Group_free(&world);
    if (rank == 0) printf("comm_create_group_seq: ok\n");
    MPI_Finalize();
    return 0;
}
