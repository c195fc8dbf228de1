/* What alternating GPU work between two processes on one GPU costs, with
 * no MPI: two processes (forked before either touches CUDA, each with its
 * own primary context) pass a token through shared memory; on receiving
 * it, a side does some GPU work, waits for it in a given way, and passes
 * the token back. Prints the one-way time (half a round trip, median of
 * 5 runs of 500) for each variant, to tell what a device-buffer
 * ping-pong's time is made of (docs/gpu.md, "On a GPU"):
 *   none              no GPU work: the token alone
 *   one side          only the first process works (no alternation)
 *   sync DtoD         cuMemcpyDtoD of 8 B (legacy stream, synchronous)
 *   DtoD ev           cuMemcpyAsync DtoD on a non-blocking stream, event polled
 *   DtoD ssync        the same, cuStreamSynchronize
 *   HtoD ev / DtoH ev pinned host memory, event polled
 *   DtoH+HtoD ev      both copies of a staged message on each side
 *   ipc pull ev       each side copies 8 B out of the peer's buffer
 *                     through its IPC mapping, event polled
 *   sync HtoD pinned  cuMemcpyHtoD of 8 B from pinned memory
 *   sync HtoD pageable
 *   sync DtoD+ctxsync cuMemcpyDtoD, then cuCtxSynchronize (landed)
 *   HtoD legacy ev    the async copy and event on the legacy stream
 *   HtoD ptds ev      on the per-thread default stream
 *   write value ev    cuStreamWriteValue64 on the non-blocking stream
 *   batch N ev        cuStreamBatchMemOp of N 64-bit writes (8N bytes)
 *   HtoD ev, peer DtoH ev  one side writes the device, the other reads it
 * Exits 0 without a driver. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long long dptr;
typedef struct { char b[64]; } handle_t;
static struct {
    int (*init)(unsigned);
    int (*dev_get)(int *, int);
    int (*retain)(void **, int);
    int (*set_current)(void *);
    int (*alloc)(dptr *, size_t);
    int (*alloc_host)(void **, size_t);
    int (*dtod)(dptr, dptr, size_t);
    int (*copy_async)(dptr, dptr, size_t, void *);
    int (*stream_create)(void **, unsigned);
    int (*stream_sync)(void *);
    int (*event_create)(void **, unsigned);
    int (*event_record)(void *, void *);
    int (*event_query)(void *);
    int (*ipc_get)(handle_t *, dptr);
    int (*ipc_open)(dptr *, handle_t, unsigned);
    int (*htod)(dptr, const void *, size_t);
    int (*ctx_sync)(void);
    int (*write_value)(void *, dptr, unsigned long long, unsigned);
    int (*batch)(void *, unsigned, void *, unsigned);
    int (*dtoh)(void *, dptr, size_t);
} cu;
/* CUstreamBatchMemOpParams: a 48-byte union; the write-value member. */
struct memop { unsigned op, pad; dptr address; unsigned long long value; unsigned flags, pad2; dptr alias; dptr pad3; };
static struct memop ops[256];
static int bad_rc;

struct shared {
    _Atomic int turn; /* whose turn: 0 or 1; -1 stop */
    _Atomic int ready;
    handle_t h[2];
    double result[32];
};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int setup(void) {
    const char *name = getenv("OXMPI_CUDA_LIB");
    void *h = dlopen(name && *name ? name : "libcuda.so.1", RTLD_NOW);
    if (!h) return 0;
#define S(f, s) if (!(*(void **)&cu.f = dlsym(h, s))) return 0;
    S(init, "cuInit"); S(dev_get, "cuDeviceGet"); S(retain, "cuDevicePrimaryCtxRetain");
    S(set_current, "cuCtxSetCurrent"); S(alloc, "cuMemAlloc_v2"); S(alloc_host, "cuMemAllocHost_v2");
    S(dtod, "cuMemcpyDtoD_v2"); S(copy_async, "cuMemcpyAsync"); S(stream_create, "cuStreamCreate");
    S(stream_sync, "cuStreamSynchronize"); S(event_create, "cuEventCreate"); S(event_record, "cuEventRecord");
    S(event_query, "cuEventQuery"); S(ipc_get, "cuIpcGetMemHandle"); S(ipc_open, "cuIpcOpenMemHandle_v2");
    S(htod, "cuMemcpyHtoD_v2"); S(ctx_sync, "cuCtxSynchronize");
    *(void **)&cu.write_value = dlsym(h, "cuStreamWriteValue64_v2");
    if (!cu.write_value) *(void **)&cu.write_value = dlsym(h, "cuStreamWriteValue64");
    *(void **)&cu.batch = dlsym(h, "cuStreamBatchMemOp_v2");
    if (!cu.batch) *(void **)&cu.batch = dlsym(h, "cuStreamBatchMemOp");
    S(dtoh, "cuMemcpyDtoH_v2");
    int dev; void *ctx;
    return !(cu.init(0) || cu.dev_get(&dev, 0) || cu.retain(&ctx, dev) || cu.set_current(ctx));
}

enum { NONE, ONE_SIDE, SYNC_DTOD, DTOD_EV, DTOD_SSYNC, HTOD_EV, DTOH_EV, STAGED_EV, IPC_EV,
       SYNC_HTOD_PINNED, SYNC_HTOD_PAGEABLE, SYNC_DTOD_CTXSYNC, HTOD_LEGACY_EV, HTOD_PTDS_EV,
       WRITE_VALUE_EV, HTOD_PEER_DTOH, BATCH1, BATCH8, BATCH64, BATCH128, NV };
static const char *names[NV] = {"none", "one side", "sync DtoD", "DtoD ev", "DtoD ssync",
                                "HtoD ev", "DtoH ev", "DtoH+HtoD ev", "ipc pull ev",
                                "sync HtoD pinned", "sync HtoD pageable", "sync DtoD+ctxsync",
                                "HtoD legacy ev", "HtoD ptds ev", "write value ev",
                                "HtoD ev, peer DtoH ev", "batch 1 ev", "batch 8 ev", "batch 64 ev",
                                "batch 128 ev"};
static const int batch_n[NV] = {[BATCH1] = 1, [BATCH8] = 8, [BATCH64] = 64, [BATCH128] = 128};
static unsigned long long stamp;
static char pageable[4096];

static dptr dev, peer, dev2;
static char *host;
static void *stream, *ev;

static void wait_event_on(void *st) {
    cu.event_record(ev, st);
    while (cu.event_query(ev) != 0) {
    }
}
static void wait_event(void) { wait_event_on(stream); }

static void work(int v, int me) {
    switch (v) {
    case NONE: break;
    case ONE_SIDE: if (me == 0) { cu.copy_async(dev2, dev, 8, stream); wait_event(); } break;
    case SYNC_DTOD: cu.dtod(dev2, dev, 8); break;
    case DTOD_EV: cu.copy_async(dev2, dev, 8, stream); wait_event(); break;
    case DTOD_SSYNC: cu.copy_async(dev2, dev, 8, stream); cu.stream_sync(stream); break;
    case HTOD_EV: cu.copy_async(dev, (dptr)(size_t)host, 8, stream); wait_event(); break;
    case DTOH_EV: cu.copy_async((dptr)(size_t)host, dev, 8, stream); wait_event(); break;
    case STAGED_EV:
        cu.copy_async(dev, (dptr)(size_t)host, 8, stream); wait_event();
        cu.copy_async((dptr)(size_t)host, dev, 8, stream); wait_event();
        break;
    case IPC_EV: cu.copy_async(dev2, peer, 8, stream); wait_event(); break;
    case SYNC_HTOD_PINNED: cu.htod(dev, host, 8); break;
    case SYNC_HTOD_PAGEABLE: cu.htod(dev, pageable, 8); break;
    case SYNC_DTOD_CTXSYNC: cu.dtod(dev2, dev, 8); cu.ctx_sync(); break;
    case HTOD_LEGACY_EV: cu.copy_async(dev, (dptr)(size_t)host, 8, NULL); wait_event_on(NULL); break;
    case HTOD_PTDS_EV: cu.copy_async(dev, (dptr)(size_t)host, 8, (void *)2); wait_event_on((void *)2); break;
    case WRITE_VALUE_EV: {
        int rc = cu.write_value ? cu.write_value(stream, dev, ++stamp, 0) : -1;
        if (rc) bad_rc = rc;
        wait_event();
        break;
    }
    case BATCH1: case BATCH8: case BATCH64: case BATCH128: {
        int n = batch_n[v];
        ++stamp;
        for (int i = 0; i < n; i++) {
            memset(&ops[i], 0, sizeof ops[i]);
            ops[i].op = 5; /* CU_STREAM_MEM_OP_WRITE_VALUE_64 */
            ops[i].address = dev + 8 * i;
            ops[i].value = stamp + i;
        }
        int rc = cu.batch ? cu.batch(stream, n, ops, 0) : -1;
        if (rc) bad_rc = rc;
        wait_event();
        break;
    }
    case HTOD_PEER_DTOH:
        if (me == 0) cu.copy_async(dev, (dptr)(size_t)host, 8, stream);
        else cu.copy_async((dptr)(size_t)host, dev, 8, stream);
        wait_event();
        break;
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void side(struct shared *s, int me) {
    if (!setup() || cu.alloc(&dev, 4096) || cu.alloc(&dev2, 4096) || cu.alloc_host((void **)&host, 4096)
        || cu.stream_create(&stream, 1) || cu.event_create(&ev, 2)) {
        fprintf(stderr, "side %d: no CUDA\n", me);
        atomic_fetch_add(&s->ready, 100);
        return;
    }
    cu.ipc_get(&s->h[me], dev);
    atomic_fetch_add(&s->ready, 1);
    while (atomic_load(&s->ready) < 2) {
    }
    if (atomic_load(&s->ready) >= 100) return;
    if (cu.ipc_open(&peer, s->h[1 - me], 1)) peer = dev;
    for (int v = 0; v < NV; v++) {
        double t[5];
        for (int run = 0; run < 5; run++) {
            double t0 = 0;
            for (int i = -50; i < 500; i++) {
                if (i == 0) t0 = now();
                if (me == 0) {
                    work(v, 0);
                    atomic_store(&s->turn, 1);
                    while (atomic_load(&s->turn) != 0) {
                    }
                } else {
                    while (atomic_load(&s->turn) != 1) {
                    }
                    work(v, 1);
                    atomic_store(&s->turn, 0);
                }
            }
            t[run] = (now() - t0) / 500 / 2 * 1e6;
        }
        qsort(t, 5, sizeof t[0], cmp);
        if (me == 0) s->result[v] = t[2];
        if (v == WRITE_VALUE_EV || batch_n[v]) {
            unsigned long long got[256];
            int n = batch_n[v] ? batch_n[v] : 1;
            cu.dtoh(got, dev, 8 * n);
            for (int i = 0; i < n; i++)
                if (got[i] != stamp + i) {
                    fprintf(stderr, "side %d: %s: word %d is %llu, not %llu (rc %d)\n", me, names[v], i, got[i], stamp + i, bad_rc);
                    break;
                }
            if (bad_rc) fprintf(stderr, "side %d: %s: rc %d\n", me, names[v], bad_rc);
            bad_rc = 0;
        }
    }
}

int main(void) {
    struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED) return 1;
    memset(s, 0, sizeof *s);
    pid_t pid = fork();
    if (pid == 0) {
        side(s, 1);
        _exit(0);
    }
    side(s, 0);
    waitpid(pid, NULL, 0);
    if (atomic_load(&s->ready) >= 100) {
        printf("gpu_pingpong_probe: no CUDA driver or device; nothing measured\n");
        return 0;
    }
    for (int v = 0; v < NV; v++) printf("two processes, 8 B, %-14s one-way %8.2f us\n", names[v], s->result[v]);
    return 0;
}
