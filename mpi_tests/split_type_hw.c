/* MPI_Comm_split_type's MPI-4 kinds: MPI_COMM_TYPE_HW_GUIDED with
 * mpi_hw_resource_type = mpi_shared_memory gives the node communicator (an
 * unknown or missing resource gives MPI_COMM_NULL); MPI_COMM_TYPE_HW_UNGUIDED
 * gives strict subsets (the nodes, when there are several) or
 * MPI_COMM_NULL; MPI_COMM_TYPE_RESOURCE_GUIDED takes a resource or the
 * process sets mpi://WORLD and mpi://SELF. */
#include "util.h"

static MPI_Comm split(int kind, const char *key, const char *val) {
    MPI_Info info = MPI_INFO_NULL;
    if (key) {
        MPI_Info_create(&info);
        MPI_Info_set(info, key, val);
    }
    MPI_Comm c;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int e = MPI_Comm_split_type(MPI_COMM_WORLD, kind, rank, info, &c);
    CHECK(e == MPI_SUCCESS, "MPI_Comm_split_type(%d, %s=%s) rc %d", kind, key ? key : "-", val ? val : "-", e);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    return c;
}

static int size_of(MPI_Comm c) {
    int n;
    MPI_Comm_size(c, &n);
    return n;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;

    MPI_Comm node = split(MPI_COMM_TYPE_SHARED, NULL, NULL);
    CHECK(node != MPI_COMM_NULL, "MPI_COMM_TYPE_SHARED gave MPI_COMM_NULL");

    MPI_Comm hw = split(MPI_COMM_TYPE_HW_GUIDED, "mpi_hw_resource_type", "mpi_shared_memory");
    CHECK(hw != MPI_COMM_NULL, "HW_GUIDED mpi_shared_memory gave MPI_COMM_NULL");
    int res;
    MPI_Comm_compare(hw, node, &res);
    CHECK(res == MPI_CONGRUENT, "HW_GUIDED mpi_shared_memory is not the node communicator (%d)", res);
    {
        MPI_Info used;
        char v[64];
        int flag = 0;
        MPI_Comm_get_info(hw, &used);
        MPI_Info_get(used, "mpi_hw_resource_type", 63, v, &flag);
        CHECK(flag && strcmp(v, "mpi_shared_memory") == 0, "the new communicator's mpi_hw_resource_type: %s", flag ? v : "(none)");
        MPI_Info_free(&used);
    }
    MPI_Comm_free(&hw);

    MPI_Comm none = split(MPI_COMM_TYPE_HW_GUIDED, NULL, NULL);
    CHECK(none == MPI_COMM_NULL, "HW_GUIDED without a resource type must give MPI_COMM_NULL");
    none = split(MPI_COMM_TYPE_HW_GUIDED, "mpi_hw_resource_type", "no_such_resource");
    CHECK(none == MPI_COMM_NULL, "HW_GUIDED with an unknown resource type must give MPI_COMM_NULL");

    /* unguided: strict subsets, the nodes first */
    MPI_Comm ung = split(MPI_COMM_TYPE_HW_UNGUIDED, NULL, NULL);
    int nodes_split = size_of(node) < size;
    if (nodes_split) {
        CHECK(ung != MPI_COMM_NULL, "HW_UNGUIDED over several nodes gave MPI_COMM_NULL");
        MPI_Comm_compare(ung, node, &res);
        CHECK(res == MPI_CONGRUENT, "HW_UNGUIDED over several nodes is not the node communicator");
    }
    if (ung != MPI_COMM_NULL) {
        CHECK(size_of(ung) < size, "HW_UNGUIDED result of %d ranks is not a strict subset of %d", size_of(ung), size);
        /* within the node */
        MPI_Group g1, g2, gi;
        MPI_Comm_group(ung, &g1);
        MPI_Comm_group(node, &g2);
        MPI_Group_intersection(g1, g2, &gi);
        int ni;
        MPI_Group_size(gi, &ni);
        CHECK(ni == size_of(ung), "HW_UNGUIDED result crosses nodes");
        MPI_Group_free(&g1);
        MPI_Group_free(&g2);
        MPI_Group_free(&gi);
        MPI_Comm_free(&ung);
    }

    /* resource guided */
    MPI_Comm w = split(MPI_COMM_TYPE_RESOURCE_GUIDED, "mpi_pset_name", "mpi://WORLD");
    CHECK(w != MPI_COMM_NULL && size_of(w) == size, "RESOURCE_GUIDED mpi://WORLD");
    MPI_Comm_free(&w);
    MPI_Comm s = split(MPI_COMM_TYPE_RESOURCE_GUIDED, "mpi_pset_name", "mpi://SELF");
    CHECK(s != MPI_COMM_NULL && size_of(s) == 1, "RESOURCE_GUIDED mpi://SELF");
    MPI_Comm_free(&s);
    MPI_Comm r = split(MPI_COMM_TYPE_RESOURCE_GUIDED, "mpi_hw_resource_type", "mpi_shared_memory");
    CHECK(r != MPI_COMM_NULL, "RESOURCE_GUIDED mpi_shared_memory");
    MPI_Comm_compare(r, node, &res);
    CHECK(res == MPI_CONGRUENT, "RESOURCE_GUIDED mpi_shared_memory is not the node communicator");
    MPI_Comm_free(&r);
    none = split(MPI_COMM_TYPE_RESOURCE_GUIDED, "mpi_pset_name", "mpi://nowhere");
    CHECK(none == MPI_COMM_NULL, "RESOURCE_GUIDED with an unknown process set must give MPI_COMM_NULL");

    MPI_Comm_free(&node);
    if (rank == 0) printf("split_type_hw: ok\n");
    MPI_Finalize();
    return 0;
}
