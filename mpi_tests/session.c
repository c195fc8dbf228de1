/* Sessions (MPI-4): a program that never calls MPI_Init (SESSION_MODE
 * unset), and one that mixes a session with MPI_Init / MPI_Finalize
 * (SESSION_MODE=mixed: the session's communicator outlives MPI_Finalize).
 * Process sets, their info, groups and communicators from them, the
 * session's info and error handler, two sessions at once, and the
 * functions allowed before initialization (MPI_Info_*, versions,
 * MPI_Initialized / MPI_Finalized, MPI_Info_create_env). */
#include "util.h"
#include <stdlib.h>
#include <string.h>

static int handled, handled_code;
static void on_error(MPI_Session *s, int *code, ...) {
    (void)s;
    handled++;
    handled_code = *code;
}

/* A communicator of process set `pset` of session `s`; checks it with an
 * allreduce and a ring exchange. */
static MPI_Comm comm_of(MPI_Session s, const char *pset, const char *tag, int *rank, int *size) {
    MPI_Group g;
    MPI_Comm c;
    int rc = MPI_Group_from_session_pset(s, pset, &g);
    CHECK(rc == MPI_SUCCESS, "group_from_session_pset(%s) rc %d", pset, rc);
    rc = MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
    CHECK(rc == MPI_SUCCESS, "comm_create_from_group(%s) rc %d", pset, rc);
    MPI_Group_free(&g);
    MPI_Comm_rank(c, rank);
    MPI_Comm_size(c, size);
    int sum = 0;
    MPI_Allreduce(rank, &sum, 1, MPI_INT, MPI_SUM, c);
    CHECK(sum == *size * (*size - 1) / 2, "%s: allreduce %d", pset, sum);
    int right = (*rank + 1) % *size, left = (*rank + *size - 1) % *size, got = -1;
    MPI_Sendrecv(rank, 1, MPI_INT, right, 3, &got, 1, MPI_INT, left, 3, c, MPI_STATUS_IGNORE);
    CHECK(got == left, "%s: ring got %d", pset, got);
    return c;
}

int main(int argc, char **argv) {
    const char *mode = getenv("SESSION_MODE");
    int mixed = mode && strcmp(mode, "mixed") == 0;
    int flag, v, sv;

    /* Before any initialization. */
    MPI_Initialized(&flag);
    CHECK(!flag, "initialized before anything");
    MPI_Get_version(&v, &sv);
    CHECK(v == 4, "version %d.%d", v, sv);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(lib, &len);
    CHECK(len > 0 && strstr(lib, "OxMPI"), "library version %s", lib);
    MPI_Info info, env;
    MPI_Info_create(&info);
    MPI_Info_set(info, "thread_level", "MPI_THREAD_MULTIPLE");
    int nkeys;
    MPI_Info_get_nkeys(info, &nkeys);
    CHECK(nkeys == 1, "info before init: %d keys", nkeys);
    MPI_Info_create_env(argc, argv, &env);
    char val[MPI_MAX_INFO_VAL + 1];
    MPI_Info_get(env, "command", MPI_MAX_INFO_VAL, val, &flag);
    CHECK(flag && strstr(val, "session"), "info_create_env command: %s", flag ? val : "(none)");
    MPI_Info_get(env, "maxprocs", MPI_MAX_INFO_VAL, val, &flag);
    CHECK(flag && atoi(val) >= 1, "info_create_env maxprocs");
    MPI_Info_free(&env);

    int wrank = -1;
    if (mixed) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
        MPI_Initialized(&flag);
        CHECK(flag, "initialized after MPI_Init");
    }

    MPI_Session s, s2;
    int rc = MPI_Session_init(info, MPI_ERRORS_RETURN, &s);
    CHECK(rc == MPI_SUCCESS, "session_init rc %d", rc);
    MPI_Info_free(&info);
    if (!mixed) {
        MPI_Initialized(&flag);
        CHECK(!flag, "MPI_Initialized true with a session alone");
    }

    /* Process sets. */
    int n;
    MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n);
    CHECK(n == 2, "%d psets", n);
    int found_world = 0, found_self = 0;
    for (int i = 0; i < n; i++) {
        int l = 0;
        MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &l, NULL);
        char *name = malloc(l);
        MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &l, name);
        CHECK((int)strlen(name) == l - 1, "pset %d name length %d vs %d", i, (int)strlen(name), l);
        found_world |= strcmp(name, "mpi://WORLD") == 0;
        found_self |= strcmp(name, "mpi://SELF") == 0;
        free(name);
    }
    CHECK(found_world && found_self, "psets world %d self %d", found_world, found_self);

    int rank, size;
    MPI_Comm world = comm_of(s, "mpi://WORLD", "org.oxmpi.test.world", &rank, &size);
    test_rank = rank;
    if (mixed) CHECK(rank == wrank, "session rank %d vs world %d", rank, wrank);
    MPI_Info pi;
    MPI_Session_get_pset_info(s, "mpi://WORLD", &pi);
    MPI_Info_get(pi, "mpi_size", MPI_MAX_INFO_VAL, val, &flag);
    CHECK(flag && atoi(val) == size, "mpi_size %s, size %d", flag ? val : "-", size);
    MPI_Info_free(&pi);
    int r1, s1;
    MPI_Comm self = comm_of(s, "mpi://SELF", "org.oxmpi.test.self", &r1, &s1);
    CHECK(r1 == 0 && s1 == 1, "self comm %d/%d", r1, s1);

    MPI_Info used;
    MPI_Session_get_info(s, &used);
    MPI_Info_get(used, "thread_level", MPI_MAX_INFO_VAL, val, &flag);
    /* Alone: the level asked for; after MPI_Init (single): that one's. */
    CHECK(flag && strcmp(val, mixed ? "MPI_THREAD_SINGLE" : "MPI_THREAD_MULTIPLE") == 0,
          "thread_level %s", flag ? val : "-");
    MPI_Info_free(&used);

    /* Errors go to the session's handler. */
    MPI_Group g;
    rc = MPI_Group_from_session_pset(s, "mpi://NOWHERE", &g);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "unknown pset: class %d", cls);
    MPI_Errhandler eh, got;
    MPI_Session_create_errhandler(on_error, &eh);
    MPI_Session_set_errhandler(s, eh);
    MPI_Session_get_errhandler(s, &got);
    CHECK(got == eh, "session errhandler");
    MPI_Group_from_session_pset(s, "mpi://NOWHERE", &g);
    CHECK(handled == 1, "session handler ran %d times", handled);
    MPI_Session_call_errhandler(s, MPI_ERR_OTHER);
    CHECK(handled == 2 && handled_code == MPI_ERR_OTHER, "call_errhandler: %d %d", handled, handled_code);
    MPI_Errhandler_free(&got);
    MPI_Errhandler_free(&eh);

    /* A second session; the first one ends, the second's communicator works. */
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s2);
    MPI_Comm_free(&self);
    MPI_Comm w2 = comm_of(s2, "mpi://world", "org.oxmpi.test.world2", &r1, &s1);
    CHECK(s1 == size, "second session world size %d", s1);
    if (mixed) {
        /* MPI_Finalize while sessions live: their communicators go on. */
        MPI_Finalize();
        MPI_Finalized(&flag);
        CHECK(flag, "finalized after MPI_Finalize");
        int x = rank, y = 0;
        MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_MAX, world);
        CHECK(y == size - 1, "session comm after MPI_Finalize: %d", y);
    }
    MPI_Comm_free(&world);
    rc = MPI_Session_finalize(&s);
    CHECK(rc == MPI_SUCCESS && s == MPI_SESSION_NULL, "session_finalize rc %d", rc);
    int x = rank, y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, w2);
    CHECK(y == size * (size - 1) / 2, "second session after the first ended: %d", y);
    MPI_Comm_free(&w2);
    if (rank == 0) printf("session (%s): OK\n", mixed ? "mixed" : "alone");
    MPI_Session_finalize(&s2);
    return 0;
}
