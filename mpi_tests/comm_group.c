/* Communicators and groups: dup, split, split_type, create, create_group,
 * free, compare, names, info, attributes with callbacks, all group
 * operations, and traffic isolation between communicators. */
#include "util.h"

static int copies = 0, deletes = 0;
static int copy_fn(MPI_Comm c, int kv, void *extra, void *in, void *out, int *flag) {
    (void)c; (void)kv;
    copies++;
    *(long *)extra += 1;
    *(void **)out = (void *)((long)in + 1000);
    *flag = 1;
    return MPI_SUCCESS;
}
static int delete_fn(MPI_Comm c, int kv, void *val, void *extra) {
    (void)c; (void)kv; (void)val; (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    int rank, size, r, s, res, flag;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;

    /* dup: same group, different context; traffic does not cross. */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_rank(dup, &r);
    MPI_Comm_size(dup, &s);
    CHECK(r == rank && s == size, "dup rank/size %d %d", r, s);
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &res);
    CHECK(res == MPI_CONGRUENT, "compare world/dup %d", res);
    MPI_Comm_compare(dup, dup, &res);
    CHECK(res == MPI_IDENT, "compare dup/dup %d", res);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int a = 100 + rank, b = 200 + rank, x = -1, y = -1;
    MPI_Request rq[4];
    /* Same source, same tag on two communicators: each receive gets its own communicator's message. */
    MPI_Irecv(&x, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(&y, 1, MPI_INT, left, 5, dup, &rq[1]);
    MPI_Isend(&b, 1, MPI_INT, right, 5, dup, &rq[2]);
    MPI_Isend(&a, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &rq[3]);
    MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
    CHECK(x == 100 + left && y == 200 + left, "isolation: world got %d, dup got %d", x, y);

    /* Names. */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "world name '%s'", name);
    MPI_Comm_set_name(dup, "my dup");
    MPI_Comm_get_name(dup, name, &len);
    CHECK(strcmp(name, "my dup") == 0, "dup name '%s'", name);

    /* split: even/odd, reversed order by key. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    MPI_Comm_rank(half, &r);
    MPI_Comm_size(half, &s);
    int expect_size = (size + 1 - rank % 2) / 2;
    CHECK(s == expect_size, "split size %d expected %d", s, expect_size);
    /* ranks with the same parity in decreasing world rank order */
    int higher = 0;
    for (int q = rank + 2; q < size; q += 2) higher++;
    CHECK(r == higher, "split rank %d expected %d", r, higher);
    /* A sum around the half communicator with p2p checks its mapping. */
    int v = rank, got = 0, hr = (r + 1) % s, hl = (r + s - 1) % s;
    MPI_Sendrecv(&v, 1, MPI_INT, hr, 1, &got, 1, MPI_INT, hl, 1, half, MPI_STATUS_IGNORE);
    /* half rank k is world rank parity + 2 * (s - 1 - k) */
    int expect_left = (rank % 2) + 2 * ((s - 1) - hl);
    CHECK(got == expect_left, "half neighbour sent %d expected %d", got, expect_left);
    MPI_Group gw, gh;
    MPI_Comm_group(MPI_COMM_WORLD, &gw);
    MPI_Comm_group(half, &gh);
    int hr0 = 0, wr0;
    MPI_Group_translate_ranks(gh, 1, &hr0, gw, &wr0);
    CHECK(wr0 % 2 == rank % 2 && wr0 >= size - 2, "translate: half rank 0 is world %d", wr0);

    /* MPI_UNDEFINED color gives MPI_COMM_NULL. */
    MPI_Comm none;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, 0, &none);
    CHECK((rank == 0) == (none == MPI_COMM_NULL), "undefined color");
    if (none != MPI_COMM_NULL) MPI_Comm_free(&none);

    /* split_type shared: all ranks of this node. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &s);
    CHECK(s == size, "node communicator size %d", s);

    /* Groups. */
    int gs, grank;
    MPI_Group_size(gw, &gs);
    MPI_Group_rank(gw, &grank);
    CHECK(gs == size && grank == rank, "world group %d %d", gs, grank);
    int evens[64], ne = 0;
    for (int q = 0; q < size; q += 2) evens[ne++] = q;
    MPI_Group ge, go, gu, gi, gd, gr, grx;
    MPI_Group_incl(gw, ne, evens, &ge);
    MPI_Group_excl(gw, ne, evens, &go);
    MPI_Group_union(go, ge, &gu);
    MPI_Group_intersection(gw, ge, &gi);
    MPI_Group_difference(gw, ge, &gd);
    MPI_Group_compare(gi, ge, &res);
    CHECK(res == MPI_IDENT, "intersection == evens: %d", res);
    MPI_Group_compare(gd, go, &res);
    CHECK(res == MPI_IDENT, "difference == odds: %d", res);
    MPI_Group_compare(gu, gw, &res);
    CHECK(res == (size > 1 ? MPI_SIMILAR : MPI_IDENT), "union similar to world: %d", res);
    int ranges[1][3] = {{0, size - 1, 2}};
    MPI_Group_range_incl(gw, 1, ranges, &gr);
    MPI_Group_compare(gr, ge, &res);
    CHECK(res == MPI_IDENT, "range_incl == evens: %d", res);
    MPI_Group_range_excl(gw, 1, ranges, &grx);
    MPI_Group_compare(grx, go, &res);
    CHECK(res == MPI_IDENT, "range_excl == odds: %d", res);
    int tr[64], all[64];
    for (int q = 0; q < size; q++) all[q] = q;
    MPI_Group_translate_ranks(gw, size, all, ge, tr);
    for (int q = 0; q < size; q++) CHECK(tr[q] == (q % 2 ? MPI_UNDEFINED : q / 2), "translate %d -> %d", q, tr[q]);
    MPI_Group_rank(ge, &grank);
    CHECK(grank == (rank % 2 ? MPI_UNDEFINED : rank / 2), "rank in evens %d", grank);

    /* create (collective over world) and create_group (only the evens). */
    MPI_Comm ce, cg;
    MPI_Comm_create(MPI_COMM_WORLD, ge, &ce);
    CHECK((rank % 2 == 0) == (ce != MPI_COMM_NULL), "create membership");
    if (rank % 2 == 0) {
        MPI_Comm_create_group(MPI_COMM_WORLD, ge, 7, &cg);
        MPI_Comm_rank(cg, &r);
        MPI_Comm_size(cg, &s);
        CHECK(r == rank / 2 && s == ne, "create_group rank %d size %d", r, s);
        int t = r * 10, u = -1;
        MPI_Sendrecv(&t, 1, MPI_INT, (r + 1) % s, 0, &u, 1, MPI_INT, (r + s - 1) % s, 0, cg, MPI_STATUS_IGNORE);
        CHECK(u == ((r + s - 1) % s) * 10, "create_group traffic %d", u);
        MPI_Comm_compare(ce, cg, &res);
        CHECK(res == MPI_CONGRUENT, "create vs create_group %d", res);
        MPI_Comm_free(&cg);
        MPI_Comm_free(&ce);
        CHECK(ce == MPI_COMM_NULL, "free nulls the handle");
    }
    MPI_Group_free(&ge); MPI_Group_free(&go); MPI_Group_free(&gu); MPI_Group_free(&gi);
    MPI_Group_free(&gd); MPI_Group_free(&gr); MPI_Group_free(&grx); MPI_Group_free(&gh);
    CHECK(gh == MPI_GROUP_NULL, "group free nulls");

    /* Attributes: copy on dup, delete on free and on delete_attr. */
    int kv;
    long extra = 0;
    MPI_Comm_create_keyval(copy_fn, delete_fn, &kv, &extra);
    MPI_Comm_set_attr(dup, kv, (void *)42L);
    void *val;
    MPI_Comm_get_attr(dup, kv, &val, &flag);
    CHECK(flag && (long)val == 42, "get_attr %ld", (long)val);
    MPI_Comm dup2;
    MPI_Comm_dup(dup, &dup2);
    MPI_Comm_get_attr(dup2, kv, &val, &flag);
    CHECK(flag && (long)val == 1042 && copies == 1 && extra == 1, "copied attr %ld copies %d", (long)val, copies);
    MPI_Comm_set_attr(dup, kv, (void *)43L);
    CHECK(deletes == 1, "replacing an attribute deletes the old one (%d)", deletes);
    MPI_Comm_delete_attr(dup, kv);
    CHECK(deletes == 2, "delete_attr (%d)", deletes);
    MPI_Comm_get_attr(dup, kv, &val, &flag);
    CHECK(!flag, "attribute still there after delete");
    MPI_Comm_free_keyval(&kv);
    CHECK(kv == MPI_KEYVAL_INVALID, "free_keyval nulls");
    MPI_Comm_free(&dup2);
    CHECK(deletes == 3, "free runs delete callbacks (%d)", deletes);
    /* Null copy function: not copied. */
    int kv2;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kv2, NULL);
    MPI_Comm_set_attr(dup, kv2, (void *)7L);
    MPI_Comm_dup(dup, &dup2);
    MPI_Comm_get_attr(dup2, kv2, &val, &flag);
    CHECK(!flag, "null copy fn copied the attribute");
    MPI_Comm_free(&dup2);
    /* MPI_COMM_DUP_FN copies the value as is. */
    int kv3;
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kv3, NULL);
    MPI_Comm_set_attr(dup, kv3, (void *)9L);
    MPI_Comm_dup(dup, &dup2);
    MPI_Comm_get_attr(dup2, kv3, &val, &flag);
    CHECK(flag && (long)val == 9, "MPI_COMM_DUP_FN value %ld", (long)val);
    MPI_Comm stale = dup2;
    MPI_Comm_free(&dup2);

    /* Info objects. */
    MPI_Info info, info2;
    char buf[64];
    int nkeys;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alpha", "1");
    MPI_Info_set(info, "beta", "two");
    MPI_Info_set(info, "alpha", "one");
    MPI_Info_get_nkeys(info, &nkeys);
    CHECK(nkeys == 2, "nkeys %d", nkeys);
    MPI_Info_get(info, "alpha", 63, buf, &flag);
    CHECK(flag && strcmp(buf, "one") == 0, "info get '%s'", buf);
    MPI_Info_get_nthkey(info, 1, buf);
    CHECK(strcmp(buf, "beta") == 0, "nthkey '%s'", buf);
    MPI_Info_get_valuelen(info, "beta", &len, &flag);
    CHECK(flag && len == 3, "valuelen %d", len);
    MPI_Info_dup(info, &info2);
    MPI_Info_delete(info, "alpha");
    MPI_Info_get(info, "alpha", 63, buf, &flag);
    CHECK(!flag, "deleted key found");
    MPI_Info_get(info2, "alpha", 63, buf, &flag);
    CHECK(flag, "dup lost a key");
    MPI_Comm_set_info(dup, info2);
    MPI_Info info3;
    MPI_Comm_get_info(dup, &info3);
    MPI_Info_get(info3, "beta", 63, buf, &flag);
    CHECK(flag && strcmp(buf, "two") == 0, "comm info");
    MPI_Info_free(&info); MPI_Info_free(&info2); MPI_Info_free(&info3);
    CHECK(info == MPI_INFO_NULL, "info free nulls");

    /* Many communicators created and freed: context ids never collide. */
    for (int i = 0; i < 50; i++) {
        MPI_Comm t1, t2;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 3, rank, &t1);
        MPI_Comm_dup(t1, &t2);
        int p = 0, q = -1;
        MPI_Comm_size(t2, &s);
        MPI_Comm_rank(t2, &r);
        p = r + i;
        MPI_Sendrecv(&p, 1, MPI_INT, (r + 1) % s, 0, &q, 1, MPI_INT, (r + s - 1) % s, 0, t2, MPI_STATUS_IGNORE);
        CHECK(q == (r + s - 1) % s + i, "iteration %d", i);
        MPI_Comm_free(&t1);
        MPI_Comm_free(&t2);
    }
    MPI_Comm_test_inter(dup, &flag);
    CHECK(!flag, "intracommunicator reported as inter");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm w = MPI_COMM_WORLD;
    CHECK(MPI_Comm_free(&w) == MPI_ERR_COMM, "freeing MPI_COMM_WORLD");
    CHECK(MPI_Comm_rank(stale, &r) == MPI_ERR_COMM, "freed communicator still usable");
    MPI_Comm_free(&half);
    MPI_Comm_free(&node);
    MPI_Comm_free(&dup);
    MPI_Group_free(&gw);
    MPI_Finalize();
    return 0;
}
