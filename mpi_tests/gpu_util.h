/* Device buffers for the test programs: the CUDA driver opened with dlopen
 * (libcuda.so.1, or OXMPI_CUDA_LIB: the project's test double in CI, the
 * real driver on a GPU machine). gpu_open() is 0 without a driver: the
 * programs then print "skip" and pass. */
#ifndef OXMPI_GPU_UTIL_H
#define OXMPI_GPU_UTIL_H
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include "util.h"

typedef unsigned long long devptr;
static struct {
    int (*init)(unsigned);
    int (*device_get)(int *, int);
    int (*retain)(void **, int);
    int (*set_current)(void *);
    int (*alloc)(devptr *, size_t);
    int (*free)(devptr);
    int (*htod)(devptr, const void *, size_t);
    int (*dtoh)(void *, devptr, size_t);
    int (*memset8)(devptr, unsigned char, size_t);
    int (*alloc_managed)(devptr *, size_t, unsigned);
    int (*alloc_host)(void **, size_t);
    int (*free_host)(void *);
    long (*pageable_async)(void); /* the test double's counter; NULL on a real driver */
    long (*sync_copies)(void); /* the test double's copies that wait in the call */
    long (*copies)(void); /* the test double's copies, in the call or queued */
    long (*take_max_staged)(void); /* the test double's longest host<->device async copy since the last call */
    long (*memops)(void); /* the test double's stream memory operation calls */
    long (*ipc_copies)(void); /* the test double's copies from or to IPC-mapped memory */
    int (*dtod)(devptr, devptr, size_t); /* optional: benchmarks */
    int (*ctx_sync)(void); /* optional: benchmarks */
} cu;
static void *gpu_ctx; /* the primary context gpu_open made current */

static inline int gpu_open(void) {
    const char *name = getenv("OXMPI_CUDA_LIB");
    void *h = dlopen(name && *name ? name : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) return 0;
#define SYM(f, s) if (!(*(void **)&cu.f = dlsym(h, s))) return 0
    SYM(init, "cuInit"); SYM(device_get, "cuDeviceGet");
    SYM(retain, "cuDevicePrimaryCtxRetain"); SYM(set_current, "cuCtxSetCurrent");
    SYM(alloc, "cuMemAlloc_v2"); SYM(free, "cuMemFree_v2");
    SYM(htod, "cuMemcpyHtoD_v2"); SYM(dtoh, "cuMemcpyDtoH_v2");
    SYM(memset8, "cuMemsetD8_v2"); SYM(alloc_managed, "cuMemAllocManaged");
    SYM(alloc_host, "cuMemAllocHost_v2"); SYM(free_host, "cuMemFreeHost");
#undef SYM
    *(void **)&cu.pageable_async = dlsym(h, "cuda_double_pageable_async");
    *(void **)&cu.take_max_staged = dlsym(h, "cuda_double_take_max_staged");
    *(void **)&cu.sync_copies = dlsym(h, "cuda_double_sync_copies");
    *(void **)&cu.copies = dlsym(h, "cuda_double_copies");
    *(void **)&cu.memops = dlsym(h, "cuda_double_memops");
    *(void **)&cu.ipc_copies = dlsym(h, "cuda_double_ipc_copies");
    *(void **)&cu.dtod = dlsym(h, "cuMemcpyDtoD_v2");
    *(void **)&cu.ctx_sync = dlsym(h, "cuCtxSynchronize");
    int dev;
    if (cu.init(0) || cu.device_get(&dev, 0) || cu.retain(&gpu_ctx, dev) || cu.set_current(gpu_ctx)) return 0;
    return 1;
}

/* n bytes of device memory (at least 1), set to byte v. */
static inline void *dalloc(size_t n, unsigned char v) {
    devptr d = 0;
    CHECK(cu.alloc(&d, n ? n : 1) == 0, "cuMemAlloc of %zu bytes failed", n);
    CHECK(cu.memset8(d, v, n ? n : 1) == 0, "cuMemsetD8 failed");
    return (void *)(uintptr_t)d;
}
static inline void dfree(void *d) { CHECK(cu.free((devptr)(uintptr_t)d) == 0, "cuMemFree failed"); }
static inline void to_dev(void *d, const void *h, size_t n) {
    CHECK(cu.htod((devptr)(uintptr_t)d, h, n) == 0, "cuMemcpyHtoD failed");
}
static inline void from_dev(void *h, const void *d, size_t n) {
    CHECK(cu.dtoh(h, (devptr)(uintptr_t)d, n) == 0, "cuMemcpyDtoH failed");
}
/* A device copy of n host bytes. */
static inline void *dcopy(const void *h, size_t n) {
    void *d = dalloc(n, 0);
    to_dev(d, h, n);
    return d;
}
/* The n bytes of device buffer d, in a malloc'd host buffer. */
static inline void *hcopy(const void *d, size_t n) {
    void *h = malloc(n ? n : 1);
    from_dev(h, d, n);
    return h;
}
/* Skips the whole program (exit 0) where there is no driver. */
#define GPU_OR_SKIP(rank)                                                       \
    do {                                                                        \
        if (!gpu_open()) {                                                      \
            if ((rank) == 0) printf("skip: no CUDA driver\n");                  \
            MPI_Finalize();                                                     \
            return 0;                                                           \
        }                                                                       \
    } while (0)
#endif
