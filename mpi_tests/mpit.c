/* The MPI tool information interface (MPI_T_): used before MPI_Init,
 * control variables enumerate, read (the environment's value), write where
 * they can and refuse where they cannot; performance variables count this
 * process's known traffic exactly (messages and bytes per link, eager and
 * rendezvous, arrivals, unexpected messages and the queue's length and
 * high-water mark, time waited, collective algorithm choices); categories
 * cover every variable and event type; events: an unexpected message and
 * a collective's algorithm choice reach a callback registered at
 * MPI_T_CB_REQUIRE_MPI_RESTRICTED with their elements, a registration
 * with a MPI_T_CB_REQUIRE_NONE callback only counts what it missed (its
 * dropped handler hears of it), handles free with their callback; errors
 * come back as MPI_T_ERR_* codes, never through an error
 * handler. At 1-4 ranks (2 or more for the traffic); run with
 * OXMPI_EAGER_LIMIT=4096 (testlist). */
#define _DEFAULT_SOURCE
#include <unistd.h>
#include "util.h"

static int rank, size;

#define T(call) CHECK((call) == MPI_SUCCESS, "%s failed", #call)
#define TERR(call, want) do { int e_ = (call); CHECK(e_ == (want), "%s returned %d, not %s (%d)", #call, e_, #want, want); } while (0)

static int cvar_index(const char *name) {
    int i = -1;
    T(MPI_T_cvar_get_index(name, &i));
    return i;
}

static unsigned long long cvar_read_ull(int i) {
    MPI_T_cvar_handle h;
    int count = 0;
    unsigned long long v = 0;
    T(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
    CHECK(count == 1, "cvar %d: count %d", i, count);
    T(MPI_T_cvar_read(h, &v));
    T(MPI_T_cvar_handle_free(&h));
    CHECK(h == MPI_T_CVAR_HANDLE_NULL, "cvar handle not set to NULL by free");
    return v;
}

static void cvars(void) {
    int n = 0;
    T(MPI_T_cvar_get_num(&n));
    CHECK(n >= 40, "only %d control variables", n);
    for (int i = 0; i < n; i++) {
        char name[128], desc[1024];
        int nl = sizeof name, dl = sizeof desc, verb, dt, bind, scope;
        MPI_T_enum et;
        T(MPI_T_cvar_get_info(i, name, &nl, &verb, &dt, &et, desc, &dl, &bind, &scope));
        CHECK(nl == (int)strlen(name) + 1 && nl > 1, "cvar %d: name length %d for %s", i, nl, name);
        CHECK(dl > 10, "cvar %s: no description", name);
        CHECK(dt == MPI_UNSIGNED_LONG_LONG || dt == MPI_CHAR, "cvar %s: datatype %x", name, dt);
        CHECK(bind == MPI_T_BIND_NO_OBJECT && et == MPI_T_ENUM_NULL, "cvar %s: bind %d", name, bind);
        int j = -1;
        T(MPI_T_cvar_get_index(name, &j));
        CHECK(j == i, "cvar %s: index %d, get_index %d", name, i, j);
    }
    /* The length alone, and a short buffer: truncated, NUL-terminated. */
    int i = cvar_index("OXMPI_EAGER_LIMIT"), nl = 0;
    T(MPI_T_cvar_get_info(i, NULL, &nl, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    CHECK(nl == (int)strlen("OXMPI_EAGER_LIMIT") + 1, "name length alone: %d", nl);
    char shortname[6];
    nl = sizeof shortname;
    T(MPI_T_cvar_get_info(i, shortname, &nl, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    CHECK(!strcmp(shortname, "OXMPI"), "truncated name %s", shortname);
    /* The environment's value (the testlist sets 4096; default 32768). */
    CHECK(cvar_read_ull(i) == 4096, "OXMPI_EAGER_LIMIT reads %llu", cvar_read_ull(i));
    int scope, dt;
    T(MPI_T_cvar_get_info(i, NULL, NULL, NULL, &dt, NULL, NULL, NULL, NULL, &scope));
    CHECK(scope == MPI_T_SCOPE_CONSTANT && dt == MPI_UNSIGNED_LONG_LONG, "OXMPI_EAGER_LIMIT scope %d", scope);
    /* A string variable. */
    int c = cvar_index("OXMPI_CUDA"), count = 0;
    MPI_T_cvar_handle h;
    T(MPI_T_cvar_handle_alloc(c, NULL, &h, &count));
    char val[256] = "";
    CHECK(count >= 16, "string cvar count %d", count);
    T(MPI_T_cvar_read(h, val));
    CHECK(!strcmp(val, "auto"), "OXMPI_CUDA reads %s", val);
    /* Read once at start: never written. */
    unsigned long long x = 1;
    TERR(MPI_T_cvar_write(h, &x), MPI_T_ERR_CVAR_SET_NEVER);
    T(MPI_T_cvar_handle_free(&h));
    /* The spin phase: written, read back, restored. */
    int s = cvar_index("OXMPI_SPIN_US");
    T(MPI_T_cvar_get_info(s, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, &scope));
    CHECK(scope == MPI_T_SCOPE_LOCAL, "OXMPI_SPIN_US scope %d", scope);
    unsigned long long before = cvar_read_ull(s), v = 7;
    T(MPI_T_cvar_handle_alloc(s, NULL, &h, &count));
    T(MPI_T_cvar_write(h, &v));
    CHECK(cvar_read_ull(s) == 7, "OXMPI_SPIN_US reads %llu after writing 7", cvar_read_ull(s));
    T(MPI_T_cvar_write(h, &before));
    T(MPI_T_cvar_handle_free(&h));
    /* Errors: codes, not the error handler (the default one aborts). */
    TERR(MPI_T_cvar_get_info(n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    TERR(MPI_T_cvar_get_info(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    int j;
    TERR(MPI_T_cvar_get_index("OXMPI_NO_SUCH_THING", &j), MPI_T_ERR_INVALID_NAME);
    TERR(MPI_T_cvar_read((MPI_T_cvar_handle)&j, &x), MPI_T_ERR_INVALID_HANDLE);
    TERR(MPI_T_enum_get_info(MPI_T_ENUM_NULL, &j, NULL, NULL), MPI_T_ERR_INVALID_HANDLE);
}

static MPI_T_pvar_session session;

typedef struct { const char *name; int cls; MPI_T_pvar_handle h; } pv;

static void pv_open(pv *p) {
    int i = -1, count = 0;
    T(MPI_T_pvar_get_index(p->name, p->cls, &i));
    T(MPI_T_pvar_handle_alloc(session, i, NULL, &p->h, &count));
    CHECK(count == 1, "%s: count %d", p->name, count);
}

static unsigned long long pv_read(pv *p) {
    unsigned long long v = 0;
    T(MPI_T_pvar_read(session, p->h, &v));
    return v;
}

/* Every pvar: its info, its index, a handle that reads. */
static void pvar_table(void) {
    int n = 0;
    T(MPI_T_pvar_get_num(&n));
    CHECK(n >= 14, "only %d performance variables", n);
    int algos = 0;
    for (int i = 0; i < n; i++) {
        char name[128];
        int nl = sizeof name, verb, cls, dt, bind, ro, cont, atomic;
        MPI_T_enum et;
        T(MPI_T_pvar_get_info(i, name, &nl, &verb, &cls, &dt, &et, NULL, NULL, &bind, &ro, &cont, &atomic));
        CHECK(cont == 1 && atomic == 0 && bind == MPI_T_BIND_NO_OBJECT, "pvar %s: continuous %d atomic %d", name, cont, atomic);
        CHECK(dt == (cls == MPI_T_PVAR_CLASS_TIMER ? MPI_DOUBLE : MPI_UNSIGNED_LONG_LONG), "pvar %s: datatype %x", name, dt);
        int j = -1;
        T(MPI_T_pvar_get_index(name, cls, &j));
        CHECK(j == i, "pvar %s: index %d, get_index %d", name, i, j);
        if (!strncmp(name, "oxmpi_coll_allreduce_", 21)) algos++;
    }
    CHECK(algos >= 3, "%d allreduce algorithm counters", algos);
    int j;
    TERR(MPI_T_pvar_get_index("oxmpi_sent_messages_shm", MPI_T_PVAR_CLASS_LEVEL, &j), MPI_T_ERR_INVALID_NAME);
    TERR(MPI_T_pvar_get_info(n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
}

static void traffic(void) {
    /* With OXMPI_TEST_UCX=1, or on two hosts (MPIT_UCX=1, multihost.sh),
     * ranks 0 and 1 talk through UCX (OXMPI_UCX_EAGER_LIMIT=4096 there). */
    const char *tu = getenv("OXMPI_TEST_UCX"), *mu = getenv("MPIT_UCX");
    int ucx = (tu && !strcmp(tu, "1")) || (mu && !strcmp(mu, "1"));
    pv shm_msgs = {ucx ? "oxmpi_sent_messages_ucx" : "oxmpi_sent_messages_shm", MPI_T_PVAR_CLASS_COUNTER},
       shm_bytes = {ucx ? "oxmpi_sent_bytes_ucx" : "oxmpi_sent_bytes_shm", MPI_T_PVAR_CLASS_COUNTER},
       self_msgs = {"oxmpi_sent_messages_self", MPI_T_PVAR_CLASS_COUNTER},
       eager = {"oxmpi_eager_sends", MPI_T_PVAR_CLASS_COUNTER},
       rndv = {"oxmpi_rendezvous_sends", MPI_T_PVAR_CLASS_COUNTER},
       rmsgs = {"oxmpi_received_messages", MPI_T_PVAR_CLASS_COUNTER},
       rbytes = {"oxmpi_received_bytes", MPI_T_PVAR_CLASS_COUNTER},
       unexp = {"oxmpi_unexpected_messages", MPI_T_PVAR_CLASS_COUNTER},
       qlen = {"oxmpi_unexpected_queue_length", MPI_T_PVAR_CLASS_LEVEL},
       hwm = {"oxmpi_unexpected_queue_hwm", MPI_T_PVAR_CLASS_HIGHWATERMARK},
       wait = {"oxmpi_wait_time", MPI_T_PVAR_CLASS_TIMER};
    pv *all[] = {&shm_msgs, &shm_bytes, &self_msgs, &eager, &rndv, &rmsgs, &rbytes, &unexp, &qlen, &hwm, &wait};
    for (int i = 0; i < 11; i++) pv_open(all[i]);
    /* A fresh handle counts from zero. */
    CHECK(pv_read(&shm_msgs) == 0 && pv_read(&eager) == 0, "fresh counters read %llu %llu", pv_read(&shm_msgs), pv_read(&eager));
    /* Continuous: no start or stop of one handle; all handles is fine. */
    TERR(MPI_T_pvar_start(session, shm_msgs.h), MPI_T_ERR_PVAR_NO_STARTSTOP);
    TERR(MPI_T_pvar_stop(session, shm_msgs.h), MPI_T_ERR_PVAR_NO_STARTSTOP);
    T(MPI_T_pvar_start(session, MPI_T_PVAR_ALL_HANDLES));
    unsigned long long v;
    TERR(MPI_T_pvar_readreset(session, shm_msgs.h, &v), MPI_T_ERR_PVAR_NO_ATOMIC);
    v = 5;
    TERR(MPI_T_pvar_write(session, qlen.h, &v), MPI_T_ERR_PVAR_NO_WRITE);
    TERR(MPI_T_pvar_reset(session, hwm.h), MPI_T_ERR_PVAR_NO_WRITE);

    /* Rank 0 sends rank 1 three eager messages (100 B each) and two by
     * rendezvous (10000 B, above OXMPI_EAGER_LIMIT=4096), all before rank
     * 1 posts a receive; then one to itself. */
    char *buf = calloc(1, 10000);
    const int n_eager = 3, n_rndv = 2;
    /* The bases are read before rank 1 tells rank 0 to go (a message of
     * its own: a barrier's messages, over UCX, would count too). */
    T(MPI_T_pvar_reset(session, MPI_T_PVAR_ALL_HANDLES));
    unsigned long long m0 = pv_read(&shm_msgs), b0 = pv_read(&shm_bytes), e0 = pv_read(&eager), r0 = pv_read(&rndv);
    unsigned long long rm0 = pv_read(&rmsgs), rb0 = pv_read(&rbytes), u0 = pv_read(&unexp), s0 = pv_read(&self_msgs);
    CHECK(m0 == 0 && e0 == 0 && r0 == 0 && rm0 == 0, "after reset: %llu %llu %llu %llu", m0, e0, r0, rm0);
    if (rank == 0) {
        MPI_Request q[5];
        MPI_Recv(NULL, 0, MPI_BYTE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < n_eager; i++) MPI_Isend(buf, 100, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &q[i]);
        for (int i = 0; i < n_rndv; i++) MPI_Isend(buf, 10000, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &q[n_eager + i]);
        MPI_Waitall(5, q, MPI_STATUSES_IGNORE);
        CHECK(pv_read(&shm_msgs) - m0 == 5, "sent messages (%s): %llu, not 5", shm_msgs.name, pv_read(&shm_msgs) - m0);
        CHECK(pv_read(&shm_bytes) - b0 == 3 * 100 + 2 * 10000, "sent bytes (%s): %llu", shm_bytes.name, pv_read(&shm_bytes) - b0);
        CHECK(pv_read(&eager) - e0 == 3 && pv_read(&rndv) - r0 == 2, "eager %llu, rendezvous %llu", pv_read(&eager) - e0, pv_read(&rndv) - r0);
        MPI_Request sq;
        MPI_Isend(buf, 64, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &sq);
        MPI_Recv(buf, 64, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&sq, MPI_STATUS_IGNORE);
        CHECK(pv_read(&self_msgs) - s0 == 1, "messages to itself: %llu", pv_read(&self_msgs) - s0);
        /* Rank 1 waits for this one about 30 ms. */
        usleep(30000);
        MPI_Send(buf, 8, MPI_BYTE, 1, 4, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Send(NULL, 0, MPI_BYTE, 0, 9, MPI_COMM_WORLD);
        unsigned long long rm1 = pv_read(&rmsgs);
        CHECK(rm1 == rm0, "%llu arrivals before the go", rm1 - rm0);
        /* All five are here (probe waits for each; it takes none). */
        int flag = 0;
        MPI_Status st;
        for (int tag = 1; tag <= 2; tag++) MPI_Probe(0, tag, MPI_COMM_WORLD, &st);
        for (int k = 0; k < 1000 && pv_read(&qlen) < 5; k++) MPI_Iprobe(0, 2, MPI_COMM_WORLD, &flag, &st);
        CHECK(pv_read(&qlen) == 5, "unexpected queue length %llu, not 5", pv_read(&qlen));
        CHECK(pv_read(&hwm) >= 5, "unexpected queue high-water mark %llu", pv_read(&hwm));
        CHECK(pv_read(&unexp) - u0 == 5, "unexpected messages %llu, not 5", pv_read(&unexp) - u0);
        CHECK(pv_read(&rmsgs) - rm0 == 5, "received messages %llu, not 5", pv_read(&rmsgs) - rm0);
        CHECK(pv_read(&rbytes) - rb0 == 3 * 100 + 2 * 10000, "received bytes %llu", pv_read(&rbytes) - rb0);
        for (int i = 0; i < n_eager; i++) MPI_Recv(buf, 100, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < n_rndv; i++) MPI_Recv(buf, 10000, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(pv_read(&qlen) == 0, "unexpected queue length %llu after the receives", pv_read(&qlen));
        CHECK(pv_read(&hwm) >= 5, "high-water mark %llu after the receives", pv_read(&hwm));
        double w0, w1;
        T(MPI_T_pvar_read(session, wait.h, &w0));
        MPI_Recv(buf, 8, MPI_BYTE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        T(MPI_T_pvar_read(session, wait.h, &w1));
        CHECK(w1 - w0 >= 0.015 && w1 - w0 < 10, "waited %g s for a message sent 30 ms late", w1 - w0);
        /* A written timer reads on from the value written. */
        double set = 100.0, got;
        T(MPI_T_pvar_write(session, wait.h, &set));
        T(MPI_T_pvar_read(session, wait.h, &got));
        CHECK(got >= 100.0 && got < 101.0, "timer written 100 reads %g", got);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    for (int i = 0; i < 11; i++) T(MPI_T_pvar_handle_free(session, &all[i]->h));
}

/* Each rank's allreduces are counted under one of the allreduce
 * algorithms: the counters' sum grows by the calls made. */
static void algorithms(void) {
    int n = 0;
    T(MPI_T_pvar_get_num(&n));
    pv list[64];
    int k = 0;
    for (int i = 0; i < n && k < 64; i++) {
        static char names[64][128];
        int nl = 128, cls;
        T(MPI_T_pvar_get_info(i, names[k], &nl, NULL, &cls, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
        if (!strncmp(names[k], "oxmpi_coll_allreduce_", 21)) {
            list[k].name = names[k];
            list[k].cls = cls;
            pv_open(&list[k]);
            k++;
        }
    }
    int x = rank, y = 0;
    for (int i = 0; i < 4; i++) MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(y == size * (size - 1) / 2, "allreduce %d", y);
    unsigned long long sum = 0;
    for (int i = 0; i < k; i++) sum += pv_read(&list[i]);
    CHECK(sum == 4, "allreduce algorithm counters sum to %llu after 4 calls", sum);
    for (int i = 0; i < k; i++) T(MPI_T_pvar_handle_free(session, &list[i].h));
}

static void categories(void) {
    int n = 0, ncv = 0, npv = 0;
    T(MPI_T_category_get_num(&n));
    T(MPI_T_cvar_get_num(&ncv));
    T(MPI_T_pvar_get_num(&npv));
    CHECK(n >= 5, "%d categories", n);
    int cv_seen = 0, pv_seen = 0, ev_seen = 0, nev = 0;
    T(MPI_T_event_get_num(&nev));
    for (int c = 0; c < n; c++) {
        char name[128];
        int nl = sizeof name, nc, np, nk, ne;
        T(MPI_T_category_get_info(c, name, &nl, NULL, NULL, &nc, &np, &nk));
        int j = -1;
        T(MPI_T_category_get_index(name, &j));
        CHECK(j == c, "category %s: index %d", name, j);
        int *idx = malloc(sizeof(int) * (nc + np + 1));
        T(MPI_T_category_get_cvars(c, nc, idx));
        for (int i = 0; i < nc; i++) CHECK(idx[i] >= 0 && idx[i] < ncv, "category %s: cvar %d", name, idx[i]);
        T(MPI_T_category_get_pvars(c, np, idx));
        for (int i = 0; i < np; i++) CHECK(idx[i] >= 0 && idx[i] < npv, "category %s: pvar %d", name, idx[i]);
        T(MPI_T_category_get_num_events(c, &ne));
        CHECK(nk == 0, "category %s: %d subcategories", name, nk);
        int ev[8];
        T(MPI_T_category_get_events(c, 8, ev));
        for (int i = 0; i < ne && i < 8; i++) {
            char en[64];
            int el = sizeof en;
            T(MPI_T_event_get_info(ev[i], en, &el, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
            CHECK((!strcmp(name, "oxmpi_traffic") && !strcmp(en, "oxmpi_unexpected_message")) ||
                      (!strcmp(name, "oxmpi_collectives") && !strcmp(en, "oxmpi_coll_algorithm")),
                  "category %s holds event %s", name, en);
            ev_seen++;
        }
        free(idx);
        cv_seen += nc;
        pv_seen += np;
    }
    CHECK(cv_seen == ncv && pv_seen == npv && ev_seen == nev, "categories hold %d of %d cvars, %d of %d pvars, %d of %d events",
          cv_seen, ncv, pv_seen, npv, ev_seen, nev);
    int stamp = -1;
    T(MPI_T_category_changed(&stamp));
    TERR(MPI_T_category_get_index("no_such_category", &stamp), MPI_T_ERR_INVALID_NAME);
}

/* What the event callbacks saw. */
static struct {
    int calls, src, tag, copied_src, copied_tag, dropped_calls, pvar, algo_calls, freed;
    unsigned long long bytes, copied_bytes;
    MPI_Count dropped, stamp;
    int level;
} seen;

static void on_unexpected(MPI_T_event_instance e, MPI_T_event_registration r, MPI_T_cb_safety level, void *user) {
    (void)r;
    CHECK(user == &seen, "callback user data %p", user);
    int tag = -1;
    T(MPI_T_event_read(e, 1, &tag));
    /* Only this test's messages (tags 41-43): a collective's own messages
       over UCX arrive unexpected too. */
    if (tag < 41 || tag > 43) return;
    seen.calls++;
    seen.level = level;
    T(MPI_T_event_read(e, 0, &seen.src));
    T(MPI_T_event_read(e, 1, &seen.tag));
    T(MPI_T_event_read(e, 2, &seen.bytes));
    unsigned char buf[16];
    T(MPI_T_event_copy(e, buf));
    memcpy(&seen.copied_src, buf, 4);
    memcpy(&seen.copied_tag, buf + 4, 4);
    memcpy(&seen.copied_bytes, buf + 8, 8);
    T(MPI_T_event_get_timestamp(e, &seen.stamp));
    int s = -1;
    T(MPI_T_event_get_source(e, &s));
    CHECK(s == 0, "event source %d", s);
    TERR(MPI_T_event_read(e, 3, buf), MPI_T_ERR_INVALID_INDEX);
}

static void on_algo(MPI_T_event_instance e, MPI_T_event_registration r, MPI_T_cb_safety level, void *user) {
    (void)r, (void)level, (void)user;
    seen.algo_calls++;
    T(MPI_T_event_read(e, 0, &seen.pvar));
}

static void on_none(MPI_T_event_instance e, MPI_T_event_registration r, MPI_T_cb_safety level, void *user) {
    (void)e, (void)r, (void)level, (void)user;
    CHECK(0, "a MPI_T_CB_REQUIRE_NONE callback was called inside MPI");
}

static void on_dropped(MPI_Count count, MPI_T_event_registration r, int source, MPI_T_cb_safety level, void *user) {
    (void)r, (void)source, (void)level, (void)user;
    seen.dropped_calls++;
    seen.dropped = count;
}

static void on_free(MPI_T_event_registration r, MPI_T_cb_safety level, void *user) {
    (void)r, (void)level;
    CHECK(user == &seen, "free callback user data %p", user);
    seen.freed++;
}

/* One message from rank 1 to rank 0 that arrives unexpected: rank 0 probes
   for it before any receive is posted. */
static void unexpected_one(int tag, int len) {
    char buf[64] = {0};
    if (rank == 1) MPI_Send(buf, len, MPI_CHAR, 0, tag, MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Status st;
        MPI_Probe(1, tag, MPI_COMM_WORLD, &st);
        MPI_Recv(buf, len, MPI_CHAR, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

static void events(void) {
    int n = -1, ns = 0;
    T(MPI_T_event_get_num(&n));
    T(MPI_T_source_get_num(&ns));
    CHECK(n == 2 && ns == 1, "%d events, %d sources", n, ns);
    MPI_Count t0, t1, tps;
    MPI_T_source_order ord;
    T(MPI_T_source_get_info(0, NULL, NULL, NULL, NULL, &ord, &tps, NULL, NULL));
    CHECK(ord == MPI_T_SOURCE_ORDERED && tps == 1000000000, "source order %d, ticks %ld", ord, (long)tps);
    T(MPI_T_source_get_timestamp(0, &t0));
    usleep(1000);
    T(MPI_T_source_get_timestamp(0, &t1));
    CHECK(t1 - t0 >= 1000000 && t1 - t0 < 1000000000, "timestamps %ld apart over 1 ms", (long)(t1 - t0));
    MPI_T_event_registration reg, reg2, reg3;
    TERR(MPI_T_event_handle_alloc(2, NULL, MPI_INFO_NULL, &reg), MPI_T_ERR_INVALID_INDEX);
    TERR(MPI_T_event_get_index("anything", &n), MPI_T_ERR_INVALID_NAME);
    int ui = -1, ai = -1;
    T(MPI_T_event_get_index("oxmpi_unexpected_message", &ui));
    T(MPI_T_event_get_index("oxmpi_coll_algorithm", &ai));
    char name[64];
    int nl = sizeof name, verb, ne = 4, bind;
    MPI_Datatype dts[4];
    MPI_Aint disps[4];
    T(MPI_T_event_get_info(ui, name, &nl, &verb, dts, disps, &ne, NULL, NULL, NULL, NULL, &bind));
    CHECK(!strcmp(name, "oxmpi_unexpected_message") && ne == 3 && dts[0] == MPI_INT && dts[1] == MPI_INT &&
              dts[2] == MPI_UINT64_T && disps[0] == 0 && disps[1] == 4 && disps[2] == 8 && bind == MPI_T_BIND_NO_OBJECT,
          "event %s: %d elements", name, ne);

    T(MPI_T_event_handle_alloc(ui, NULL, MPI_INFO_NULL, &reg));
    T(MPI_T_event_register_callback(reg, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_INFO_NULL, &seen, on_unexpected));
    TERR(MPI_T_event_register_callback(reg, 7, MPI_INFO_NULL, &seen, on_unexpected), MPI_T_ERR_INVALID);
    /* reg2: a callback that may not be called inside MPI, and a dropped handler */
    T(MPI_T_event_handle_alloc(ui, NULL, MPI_INFO_NULL, &reg2));
    T(MPI_T_event_register_callback(reg2, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL, NULL, on_none));
    T(MPI_T_event_set_dropped_handler(reg2, on_dropped));
    T(MPI_T_event_handle_alloc(ai, NULL, MPI_INFO_NULL, &reg3));
    T(MPI_T_event_register_callback(reg3, MPI_T_CB_REQUIRE_THREAD_SAFE, MPI_INFO_NULL, NULL, on_algo));
    MPI_Count before;
    T(MPI_T_source_get_timestamp(0, &before));
    MPI_Barrier(MPI_COMM_WORLD);
    if (size >= 2) {
        unexpected_one(41, 24);
        if (rank == 0) {
            CHECK(seen.calls == 1, "%d unexpected-message callbacks", seen.calls);
            CHECK(seen.src == 1 && seen.tag == 41 && seen.bytes == 24, "event: src %d tag %d bytes %llu", seen.src,
                  seen.tag, seen.bytes);
            CHECK(seen.copied_src == 1 && seen.copied_tag == 41 && seen.copied_bytes == 24, "event copy: %d %d %llu",
                  seen.copied_src, seen.copied_tag, seen.copied_bytes);
            CHECK(seen.level == MPI_T_CB_REQUIRE_MPI_RESTRICTED, "called at level %d", seen.level);
            CHECK(seen.stamp >= before, "event stamp %lld before %lld", (long long)seen.stamp, (long long)before);
            CHECK(seen.dropped_calls == 0, "dropped handler called early");
        }
        /* reg2 gets a callback it can take: the next event reaches it,
           after its dropped handler hears of the one it missed. */
        T(MPI_T_event_register_callback(reg2, MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE, MPI_INFO_NULL, &seen, on_unexpected));
        MPI_Barrier(MPI_COMM_WORLD);
        unexpected_one(42, 8);
        if (rank == 0) {
            CHECK(seen.calls == 3 && seen.tag == 42 && seen.bytes == 8, "%d callbacks, tag %d", seen.calls, seen.tag);
            CHECK(seen.dropped_calls == 1 && seen.dropped >= 1, "dropped handler: %d calls, count %lld",
                  seen.dropped_calls, (long long)seen.dropped);
        }
    }
    /* the algorithm a collective chose, as the index of its counter */
    int x = rank, y = 0, before_algo = seen.algo_calls;
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(seen.algo_calls > before_algo, "no algorithm event for MPI_Allreduce");
    char pn[128];
    int pl = sizeof pn;
    T(MPI_T_pvar_get_info(seen.pvar, pn, &pl, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    CHECK(!strncmp(pn, "oxmpi_coll_", 11), "algorithm event names pvar %d: %s", seen.pvar, pn);
    T(MPI_T_event_handle_free(reg, &seen, on_free));
    T(MPI_T_event_handle_free(reg2, &seen, on_free));
    T(MPI_T_event_handle_free(reg3, NULL, NULL));
    CHECK(seen.freed == 2, "%d free callbacks", seen.freed);
    TERR(MPI_T_event_handle_free(reg, NULL, NULL), MPI_T_ERR_INVALID_HANDLE);
    /* freed: no more callbacks */
    int calls = seen.calls, algos = seen.algo_calls;
    MPI_Barrier(MPI_COMM_WORLD);
    if (size >= 2) unexpected_one(43, 4);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(seen.calls == calls && seen.algo_calls == algos, "callbacks after free: %d %d", seen.calls - calls,
          seen.algo_calls - algos);
}

/* A callback that frees another registration of the same event: the
   freed one's callback is not called after its free, not even for the
   event being delivered (its tool may have released what it uses). */
static MPI_T_event_registration other;
static int other_freed, other_calls_after, other_calls;

static void on_freed_other(MPI_T_event_registration r, MPI_T_cb_safety level, void *user) {
    (void)r, (void)level, (void)user;
    other_freed = 1;
}

static int event_tag(MPI_T_event_instance e) {
    int tag = -1;
    T(MPI_T_event_read(e, 1, &tag));
    return tag;
}

static void on_first(MPI_T_event_instance e, MPI_T_event_registration r, MPI_T_cb_safety level, void *user) {
    (void)r, (void)level, (void)user;
    if (event_tag(e) != 44 || other_freed) return;
    T(MPI_T_event_handle_free(other, NULL, on_freed_other));
}

static void on_second(MPI_T_event_instance e, MPI_T_event_registration r, MPI_T_cb_safety level, void *user) {
    (void)r, (void)level, (void)user;
    if (event_tag(e) != 44) return;
    other_calls++;
    if (other_freed) other_calls_after++;
}

static void free_in_callback(void) {
    if (size < 2) return;
    int ui = -1;
    T(MPI_T_event_get_index("oxmpi_unexpected_message", &ui));
    MPI_T_event_registration first;
    T(MPI_T_event_handle_alloc(ui, NULL, MPI_INFO_NULL, &first));
    T(MPI_T_event_handle_alloc(ui, NULL, MPI_INFO_NULL, &other));
    T(MPI_T_event_register_callback(first, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_INFO_NULL, NULL, on_first));
    T(MPI_T_event_register_callback(other, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_INFO_NULL, NULL, on_second));
    MPI_Barrier(MPI_COMM_WORLD);
    unexpected_one(44, 4);
    if (rank == 0) {
        CHECK(other_freed, "the callback did not free the other registration");
        CHECK(other_calls_after == 0, "a freed registration's callback was called %d times after its free",
              other_calls_after);
    }
    T(MPI_T_event_handle_free(first, NULL, NULL));
    if (rank != 0) T(MPI_T_event_handle_free(other, NULL, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    int provided = -1;
    /* Before MPI_Init: not initialized, then initialized. */
    TERR(MPI_T_cvar_get_num(&provided), MPI_T_ERR_NOT_INITIALIZED);
    T(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK(provided == MPI_THREAD_SINGLE, "provided %d", provided);
    int n = 0;
    T(MPI_T_cvar_get_num(&n));
    CHECK(n >= 40, "before MPI_Init: %d cvars", n);
    /* Writing the spin before MPI_Init: not now. */
    MPI_T_cvar_handle h;
    int count;
    unsigned long long v = 3;
    T(MPI_T_cvar_handle_alloc(cvar_index("OXMPI_SPIN_US"), NULL, &h, &count));
    TERR(MPI_T_cvar_write(h, &v), MPI_T_ERR_CVAR_SET_NOT_NOW);
    T(MPI_T_cvar_handle_free(&h));

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    /* Nested initialization. */
    T(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));
    T(MPI_T_pvar_session_create(&session));
    cvars();
    pvar_table();
    if (size >= 2) traffic();
    algorithms();
    categories();
    events();
    free_in_callback();
    /* A session's handles go with it; a freed session is invalid. */
    MPI_T_pvar_session s2 = session;
    T(MPI_T_pvar_session_free(&session));
    CHECK(session == MPI_T_PVAR_SESSION_NULL, "session not set to NULL");
    TERR(MPI_T_pvar_start(s2, MPI_T_PVAR_ALL_HANDLES), MPI_T_ERR_INVALID_SESSION);
    T(MPI_T_finalize());
    T(MPI_T_finalize());
    TERR(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpit ok\n");
    MPI_Finalize();
    return 0;
}
