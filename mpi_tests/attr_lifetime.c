/* Attribute lifetimes as the standard has them:
 * - MPI_Finalize first deletes the attributes on MPI_COMM_SELF (as if it
 *   were freed), running their delete callbacks last set first, while MPI
 *   is still usable (MPI_Finalized says false);
 * - a keyval freed while attributes use it keeps working for them (get,
 *   delete, the delete callback) until the last one is gone, but cannot be
 *   set again;
 * - attributes on predefined datatypes. */
#include "util.h"

static int order[8], norder;
static int finalized_inside = -1;
static int extra_seen[8];

static int del_self(MPI_Comm comm, int keyval, void *val, void *extra) {
    (void)comm;
    (void)keyval;
    int fl = -1;
    MPI_Finalized(&fl);
    finalized_inside = fl;
    if (norder < 8) order[norder++] = (int)(long)val;
    extra_seen[(int)(long)val] = (int)(long)extra;
    return MPI_SUCCESS;
}

static int deleted_freed;
static int del_freed(MPI_Comm comm, int keyval, void *val, void *extra) {
    (void)comm;
    (void)keyval;
    (void)extra;
    deleted_freed += (int)(long)val;
    return MPI_SUCCESS;
}

static int type_deleted;
static int del_type(MPI_Datatype t, int keyval, void *val, void *extra) {
    (void)keyval;
    (void)extra;
    if (t == MPI_INT || t == MPI_DOUBLE_INT) type_deleted += (int)(long)val;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    test_rank = rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* ---- a freed keyval still serves its attributes */
    {
        int kv, flag = 0;
        void *v = NULL;
        MPI_Comm dup;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del_freed, &kv, NULL);
        int saved = kv;
        MPI_Comm_set_attr(dup, kv, (void *)7L);
        MPI_Comm_set_attr(MPI_COMM_WORLD, kv, (void *)100L);
        MPI_Comm_free_keyval(&kv);
        CHECK(kv == MPI_KEYVAL_INVALID, "MPI_Comm_free_keyval resets the handle");
        int e = MPI_Comm_get_attr(dup, saved, &v, &flag);
        CHECK(e == MPI_SUCCESS && flag && v == (void *)7L, "get through a freed keyval: rc %d flag %d", e, flag);
        e = MPI_Comm_delete_attr(dup, saved);
        CHECK(e == MPI_SUCCESS && deleted_freed == 7, "delete through a freed keyval: rc %d, callback sum %d", e, deleted_freed);
        /* setting it again is erroneous */
        e = MPI_Comm_set_attr(dup, saved, (void *)1L);
        int c = -1;
        MPI_Error_class(e, &c);
        CHECK(c == MPI_ERR_KEYVAL, "set through a freed keyval: class %d", c);
        /* the world attribute is still there; freeing dup runs nothing more */
        MPI_Comm_free(&dup);
        CHECK(deleted_freed == 7, "freeing dup ran a callback for an attribute it no longer has");
        e = MPI_Comm_get_attr(MPI_COMM_WORLD, saved, &v, &flag);
        CHECK(e == MPI_SUCCESS && flag && v == (void *)100L, "world's attribute through the freed keyval");
        e = MPI_Comm_delete_attr(MPI_COMM_WORLD, saved);
        CHECK(e == MPI_SUCCESS && deleted_freed == 107, "last delete through a freed keyval");
    }

    /* ---- attributes on predefined datatypes */
    {
        int kv, flag = 0;
        void *v = NULL;
        MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, del_type, &kv, NULL);
        CHECK(MPI_Type_set_attr(MPI_INT, kv, (void *)3L) == MPI_SUCCESS, "MPI_Type_set_attr on MPI_INT");
        CHECK(MPI_Type_set_attr(MPI_DOUBLE_INT, kv, (void *)40L) == MPI_SUCCESS, "MPI_Type_set_attr on MPI_DOUBLE_INT");
        CHECK(MPI_Type_get_attr(MPI_INT, kv, &v, &flag) == MPI_SUCCESS && flag && v == (void *)3L, "get on MPI_INT");
        CHECK(MPI_Type_get_attr(MPI_DOUBLE, kv, &v, &flag) == MPI_SUCCESS && !flag, "MPI_DOUBLE has none");
        CHECK(MPI_Type_get_attr(MPI_DOUBLE_INT, kv, &v, &flag) == MPI_SUCCESS && flag && v == (void *)40L, "get on MPI_DOUBLE_INT");
        CHECK(MPI_Type_set_attr(MPI_INT, kv, (void *)5L) == MPI_SUCCESS && type_deleted == 3, "replacing runs the delete callback");
        CHECK(MPI_Type_delete_attr(MPI_INT, kv) == MPI_SUCCESS && type_deleted == 8, "delete on MPI_INT");
        CHECK(MPI_Type_delete_attr(MPI_DOUBLE_INT, kv) == MPI_SUCCESS && type_deleted == 48, "delete on MPI_DOUBLE_INT");
        MPI_Type_free_keyval(&kv);
    }

    /* ---- attributes on MPI_COMM_SELF, deleted at MPI_Finalize last set first */
    int kv[4];
    for (int i = 0; i < 4; i++) MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del_self, &kv[i], (void *)(long)(10 + i));
    MPI_Comm_set_attr(MPI_COMM_SELF, kv[2], (void *)2L);
    MPI_Comm_set_attr(MPI_COMM_SELF, kv[0], (void *)0L);
    MPI_Comm_set_attr(MPI_COMM_SELF, kv[3], (void *)3L);
    MPI_Comm_set_attr(MPI_COMM_SELF, kv[1], (void *)1L);
    /* a keyval freed before MPI_Finalize: its attribute is still deleted */
    MPI_Comm_free_keyval(&kv[3]);
    MPI_Finalize();
    /* printf is allowed after MPI_Finalize; CHECK's MPI_Abort is not */
    int want[4] = {1, 3, 0, 2};
    int ok = norder == 4 && finalized_inside == 0;
    for (int i = 0; ok && i < 4; i++) ok = order[i] == want[i] && extra_seen[order[i]] == 10 + order[i];
    if (!ok) {
        printf("FAIL rank %d: MPI_COMM_SELF attributes deleted at MPI_Finalize: %d callbacks (", rank, norder);
        for (int i = 0; i < norder; i++) printf(" %d", order[i]);
        printf(" ), want 1 3 0 2, MPI_Finalized inside %d\n", finalized_inside);
        return 1;
    }
    if (rank == 0) printf("attr_lifetime: ok\n");
    return 0;
}
