/* The CUDA driver's own costs, for reading the device-buffer benchmarks:
 * each line is the mean time of one primitive the library uses (copies of
 * 8 B and 4 KiB in every direction, synchronous and on a stream with an
 * event polled to completion, pageable and pinned host memory, blocking
 * and non-blocking streams, event creation, pointer queries, IPC handle
 * export). One process, no MPI. Needs a CUDA driver (exits 0 without). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef unsigned long long dptr;
typedef int (*fn)();
static struct {
    int (*init)(unsigned);
    int (*dev_get)(int *, int);
    int (*retain)(void **, int);
    int (*set_current)(void *);
    int (*alloc)(dptr *, size_t);
    int (*alloc_host)(void **, size_t);
    int (*memcpy)(dptr, dptr, size_t);
    int (*memcpy_async)(dptr, dptr, size_t, void *);
    int (*stream_create)(void **, unsigned);
    int (*stream_sync)(void *);
    int (*event_create)(void **, unsigned);
    int (*event_record)(void *, void *);
    int (*event_query)(void *);
    int (*event_destroy)(void *);
    int (*attrs)(unsigned, int *, void **, dptr);
    int (*ipc_get)(void *, dptr);
    int (*set_attr)(const void *, int, dptr);
    int (*host_register)(void *, size_t, unsigned);
} cu;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define N 2000
#define TIME(label, body)                                                      \
    do {                                                                       \
        for (int i_ = 0; i_ < 50; i_++) { body; }                              \
        double t0_ = now();                                                    \
        for (int i_ = 0; i_ < N; i_++) { body; }                               \
        printf("%-58s %9.2f us\n", label, (now() - t0_) / N * 1e6);            \
    } while (0)

static void *ev_keep;
static void wait_event(void *s) {
    cu.event_record(ev_keep, s);
    while (cu.event_query(ev_keep) == 600) {}
}

int main(void) {
    const char *name = getenv("OXMPI_CUDA_LIB");
    void *h = dlopen(name && *name ? name : "libcuda.so.1", RTLD_NOW);
    if (!h) { printf("gpu_probe: no CUDA driver, skipped\n"); return 0; }
#define S(f, s) if (!(*(void **)&cu.f = dlsym(h, s))) { printf("no %s\n", s); return 1; }
    S(init, "cuInit"); S(dev_get, "cuDeviceGet"); S(retain, "cuDevicePrimaryCtxRetain");
    S(set_current, "cuCtxSetCurrent"); S(alloc, "cuMemAlloc_v2"); S(alloc_host, "cuMemAllocHost_v2");
    S(memcpy, "cuMemcpy"); S(memcpy_async, "cuMemcpyAsync"); S(stream_create, "cuStreamCreate");
    S(stream_sync, "cuStreamSynchronize"); S(event_create, "cuEventCreate"); S(event_record, "cuEventRecord");
    S(event_query, "cuEventQuery"); S(event_destroy, "cuEventDestroy_v2");
    S(attrs, "cuPointerGetAttributes"); S(ipc_get, "cuIpcGetMemHandle");
    S(set_attr, "cuPointerSetAttribute"); S(host_register, "cuMemHostRegister_v2");
    int dev; void *ctx;
    if (cu.init(0) || cu.dev_get(&dev, 0) || cu.retain(&ctx, dev) || cu.set_current(ctx)) {
        printf("gpu_probe: no usable device, skipped\n");
        return 0;
    }
    size_t n = 1 << 20;
    dptr d1, d2;
    void *pinned;
    cu.alloc(&d1, n); cu.alloc(&d2, n); cu.alloc_host(&pinned, n);
    char *page = malloc(n), *reg = aligned_alloc(4096, n);
    memset(page, 1, n); memset(reg, 1, n);
    int hr = cu.host_register(reg, n, 1);
    void *nb, *bl;
    cu.stream_create(&nb, 1); cu.stream_create(&bl, 0);
    cu.event_create(&ev_keep, 2);
    dptr P = (dptr)(size_t)page, Q = (dptr)(size_t)pinned, R = (dptr)(size_t)reg;
    printf("host register of malloc'd memory: %d\n", hr);
    size_t sz[] = {8, 4096, 65536};
    for (int k = 0; k < 3; k++) {
        size_t b = sz[k];
        char l[96];
#define L(fmt) (snprintf(l, sizeof l, fmt " %zu B", b), l)
        TIME(L("cuMemcpy HtoD pageable"), cu.memcpy(d1, P, b));
        TIME(L("cuMemcpy DtoH pageable"), cu.memcpy(P, d1, b));
        TIME(L("cuMemcpy HtoD pinned"), cu.memcpy(d1, Q, b));
        TIME(L("cuMemcpy DtoD"), cu.memcpy(d2, d1, b));
        TIME(L("async HtoD pageable, non-blocking stream, event"), (cu.memcpy_async(d1, P, b, nb), wait_event(nb)));
        TIME(L("async HtoD pinned, non-blocking stream, event"), (cu.memcpy_async(d1, Q, b, nb), wait_event(nb)));
        TIME(L("async HtoD registered, non-blocking stream, event"), (cu.memcpy_async(d1, R, b, nb), wait_event(nb)));
        TIME(L("async DtoH pageable, non-blocking stream, event"), (cu.memcpy_async(P, d1, b, nb), wait_event(nb)));
        TIME(L("async DtoH pinned, non-blocking stream, event"), (cu.memcpy_async(Q, d1, b, nb), wait_event(nb)));
        TIME(L("async DtoD, non-blocking stream, event"), (cu.memcpy_async(d2, d1, b, nb), wait_event(nb)));
        TIME(L("async DtoD, non-blocking stream, stream sync"), (cu.memcpy_async(d2, d1, b, nb), cu.stream_sync(nb)));
        TIME(L("async DtoD, blocking stream, event"), (cu.memcpy_async(d2, d1, b, bl), wait_event(bl)));
        TIME(L("async HtoD pinned, blocking stream, event"), (cu.memcpy_async(d1, Q, b, bl), wait_event(bl)));
    }
    void *e;
    TIME("cuEventCreate + cuEventDestroy", (cu.event_create(&e, 2), cu.event_destroy(e)));
    TIME("cuEventRecord + cuEventQuery on an idle stream", wait_event(nb));
    unsigned mt = 0;
    int a[1] = {2};
    void *v[1] = {&mt};
    TIME("cuPointerGetAttributes (memory type) of device memory", cu.attrs(1, a, v, d1));
    TIME("cuPointerGetAttributes (memory type) of host memory", cu.attrs(1, a, v, P));
    char handle[64];
    TIME("cuIpcGetMemHandle", cu.ipc_get(handle, d1));
    unsigned one = 1;
    TIME("cuPointerSetAttribute SYNC_MEMOPS", cu.set_attr(&one, 6, d1));
    return 0;
}
