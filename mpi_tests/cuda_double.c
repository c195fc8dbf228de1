/* A test double of the CUDA driver (libcuda.so.1), written for OxMPI's
 * tests on machines without a GPU. It is not an emulator: no GPU code runs.
 * What it does mimic is what the library's CUDA support depends on:
 *
 *  - device memory: each allocation is a memfd mapped twice, once with
 *    PROT_NONE at the address handed out as the device pointer (so any CPU
 *    access faults, as on a GPU) and once read/write at a shadow address
 *    that the copy functions use;
 *  - pointer attributes: DEVICE (with device, context, buffer id and
 *    allocation range) for its allocations, HOST for pinned and registered
 *    host memory, DEVICE + IS_MANAGED for managed memory (CPU-accessible,
 *    as on a GPU), nothing for other memory; every allocation gets a new
 *    buffer id, also at an address an earlier one used;
 *  - contexts: copies need a current context on the calling thread
 *    (CUDA_ERROR_INVALID_CONTEXT otherwise), as with the real driver;
 *  - streams and events: asynchronous copies are queued on their stream and
 *    run only when the stream is synchronized or an event recorded after
 *    them is queried or synchronized, so code that reads a result before
 *    waiting for it sees stale data; as with the real driver, a copy with
 *    pageable host memory (neither pinned nor registered) is made in the
 *    call instead, which waits for it (counted: the function
 *    cuda_double_pageable_async() answers how many, for tests);
 *  - the legacy default stream: as on a GPU, a "synchronous" memset of
 *    device memory and a "synchronous" copy into device memory from
 *    pageable host memory or from device memory return before they land:
 *    they are queued on the legacy stream (the source bytes taken at the
 *    call) and land when that stream is next synchronized (a copy to the
 *    host, a copy made in the call, cuCtxSynchronize, an event on it,
 *    cuMemFree), never by work on a non-blocking stream, unless the
 *    allocation has CU_POINTER_ATTRIBUTE_SYNC_MEMOPS set
 *    (cuPointerSetAttribute), which makes them land in the call;
 *  - registration: cuMemHostRegister of memory the driver knows already
 *    answers CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, and
 *    cuMemHostUnregister of other memory CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
 *  - IPC: a handle names (pid, fd, size, buffer id); another process maps
 *    it through /proc/<pid>/fd/<fd>, once: opening it again while it is
 *    open, or opening a later allocation of the exporter at an address
 *    range that overlaps an open one's there (freed since), answers
 *    CUDA_ERROR_ALREADY_MAPPED, as the driver does;
 *  - stream memory operations (cuStreamBatchMemOp_v2): 32- and 64-bit
 *    value writes into device memory, queued on the stream like copies
 *    (counted: cuda_double_memops());
 *  - cuGetExportTable answers CUDA_ERROR_NOT_SUPPORTED (NVRTC calls it);
 *  - modules: cuModuleLoadData answers CUDA_ERROR_NOT_SUPPORTED, so
 *    reductions fall back to host copies; with CUDA_DOUBLE_KERNELS=1 the
 *    library's reduction kernels on integers, float and double run on the
 *    CPU by name (see "modules and kernels" below).
 *
 * Counters for tests: CUDA_DOUBLE_STATS=1 prints, at exit, the calls of
 * each kind to stderr (and "ipc used" where a handle was opened).
 * CUDA_DOUBLE_NO_IPC=1 makes every cuIpcOpenMemHandle fail.
 * CUDA_DOUBLE_VISIBLE=1 maps device memory read/write at its address too. CUDA_DOUBLE_DEVICES sets the device count (default
 * 1; 0 makes cuInit fail with CUDA_ERROR_NO_DEVICE).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef int CUdevice;
typedef struct ctx_s *CUcontext;
typedef struct stream_s *CUstream;
typedef struct event_s *CUevent;
typedef struct { char reserved[64]; } CUipcMemHandle;
static CUresult drain(CUstream s);

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_MAP_FAILED = 205,
    CUDA_ERROR_ALREADY_MAPPED = 208,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    CUDA_ERROR_NOT_SUPPORTED = 801,
};
enum { MT_HOST = 1, MT_DEVICE = 2, MT_ARRAY = 3, MT_UNIFIED = 4 };
enum {
    ATTR_CONTEXT = 1,
    ATTR_MEMORY_TYPE = 2,
    ATTR_DEVICE_POINTER = 3,
    ATTR_HOST_POINTER = 4,
    ATTR_SYNC_MEMOPS = 6,
    ATTR_BUFFER_ID = 7,
    ATTR_IS_MANAGED = 8,
    ATTR_DEVICE_ORDINAL = 9,
    ATTR_RANGE_START_ADDR = 11,
    ATTR_RANGE_SIZE = 12,
    ATTR_MAPPED = 13,
};

struct ctx_s { int device; };
static struct ctx_s primary[8];
static __thread CUcontext current;

enum { K_DEVICE, K_MANAGED, K_PINNED, K_REGISTERED, K_IPC };
struct alloc {
    uintptr_t addr;   /* what the user sees */
    uintptr_t shadow; /* read/write view (== addr for host kinds) */
    size_t size;
    int kind, fd;
    int sync; /* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS */
    int from_pid; unsigned long long from_id; /* K_IPC: the exporter's allocation, */
    uintptr_t from_addr; size_t from_size;   /* and where it was there */
    unsigned long long id;
    struct alloc *next;
};
static struct alloc *allocs;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long next_id = 1;
static int inited, ndev = -1;
static long n_attr, n_copy, n_async, n_pageable, n_ipc_open, n_ipc_get, n_kernels, n_ipc_copy;

#define MAGIC 0x4f58434455444f55ull /* handle marker */
struct ipc { unsigned long long magic; int pid, fd; size_t size; unsigned long long id; uintptr_t addr; };

static void stats(void) {
    fprintf(stderr, "cuda_double: pid %d attrs %ld copies %ld async %ld (pageable %ld) ipc_get %ld ipc_open %ld\n",
            (int)getpid(), n_attr, n_copy, n_async, n_pageable, n_ipc_get, n_ipc_open);
    if (n_ipc_open > 0) fprintf(stderr, "cuda_double: ipc used\n");
    if (n_kernels > 0) fprintf(stderr, "cuda_double: kernels launched %ld\n", n_kernels);
}

static struct alloc *find(uintptr_t p) {
    for (struct alloc *a = allocs; a; a = a->next)
        if (p >= a->addr && p < a->addr + (a->size ? a->size : 1)) return a;
    return NULL;
}

static void add(uintptr_t addr, uintptr_t shadow, size_t size, int kind, int fd) {
    struct alloc *a = calloc(1, sizeof *a);
    a->addr = addr; a->shadow = shadow; a->size = size; a->kind = kind; a->fd = fd;
    a->id = next_id++;
    a->next = allocs;
    allocs = a;
}

static struct alloc *unlink_at(uintptr_t p) {
    for (struct alloc **pp = &allocs; *pp; pp = &(*pp)->next)
        if ((*pp)->addr == p) { struct alloc *a = *pp; *pp = a->next; return a; }
    return NULL;
}

CUresult cuInit(unsigned flags) {
    (void)flags;
    if (ndev < 0) {
        const char *e = getenv("CUDA_DOUBLE_DEVICES");
        ndev = e ? atoi(e) : 1;
        if (ndev > 8) ndev = 8;
        if (getenv("CUDA_DOUBLE_STATS")) atexit(stats);
    }
    if (ndev == 0) return CUDA_ERROR_NO_DEVICE;
    inited = 1;
    return CUDA_SUCCESS;
}
CUresult cuDriverGetVersion(int *v) { if (!v) return CUDA_ERROR_INVALID_VALUE; *v = 12040; return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *n) { if (!inited) return CUDA_ERROR_NOT_INITIALIZED; *n = ndev; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
    if (ordinal < 0 || ordinal >= ndev) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *v, int attrib, CUdevice d) {
    if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
    /* 75, 76: compute capability major, minor; 133: MPS enabled, 1 unless
     * CUDA_DOUBLE_MPS=0 (every allocation of the double is on device 0, so
     * all of a node's ranks share one GPU, which the IPC tests want to run
     * as under MPS) */
    if (attrib == 133) {
        const char *e = getenv("CUDA_DOUBLE_MPS");
        *v = e ? atoi(e) != 0 : 1;
        return CUDA_SUCCESS;
    }
    /* 33: PCI bus id (the ordinal + 1, so devices differ), 34: PCI device,
     * 50: PCI domain (0) */
    *v = attrib == 75 ? 9 : attrib == 76 ? 0 : attrib == 33 ? d + 1 : attrib == 34 ? 0 : attrib == 50 ? 0 : 1;
    return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    snprintf(name, len, "OxMPI test double %d", d);
    return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
    if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
    if (d < 0 || d >= ndev) return CUDA_ERROR_INVALID_DEVICE;
    primary[d].device = d;
    *c = &primary[d];
    return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { (void)d; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext c) { current = c; return CUDA_SUCCESS; }
CUresult cuCtxGetCurrent(CUcontext *c) { *c = current; return CUDA_SUCCESS; }
CUresult cuCtxPushCurrent_v2(CUcontext c) { current = c; return CUDA_SUCCESS; }
CUresult cuCtxPopCurrent_v2(CUcontext *c) { if (c) *c = current; current = NULL; return CUDA_SUCCESS; }
CUresult cuCtxGetDevice(CUdevice *d) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    *d = current->device;
    return CUDA_SUCCESS;
}
CUresult cuCtxSynchronize(void) { return current ? drain(NULL) : CUDA_ERROR_INVALID_CONTEXT; }
CUresult cuGetExportTable(const void **t, const void *id) { (void)t; (void)id; return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuGetErrorString(CUresult e, const char **s) {
    static char buf[64];
    snprintf(buf, sizeof buf, "test double error %d", e);
    *s = buf;
    return CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult e, const char **s) { return cuGetErrorString(e, s); }

static CUresult map_device(int fd, size_t size, uintptr_t *addr, uintptr_t *shadow) {
    size_t len = size ? size : 1;
    /* CUDA_DOUBLE_VISIBLE=1: the CPU may read and write device memory, for
     * tests that hand device pointers to a library that takes them as they
     * are (UCX told it has CUDA memory support) but copies with the CPU. */
    int prot = getenv("CUDA_DOUBLE_VISIBLE") ? PROT_READ | PROT_WRITE : PROT_NONE;
    void *d = mmap(NULL, len, prot, MAP_SHARED, fd, 0);
    if (d == MAP_FAILED) return CUDA_ERROR_MAP_FAILED;
    void *s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (s == MAP_FAILED) { munmap(d, len); return CUDA_ERROR_MAP_FAILED; }
    *addr = (uintptr_t)d;
    *shadow = (uintptr_t)s;
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    int fd = (int)syscall(SYS_memfd_create, "cuda_double", 0);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    if (ftruncate(fd, size ? size : 1) != 0) { close(fd); return CUDA_ERROR_OUT_OF_MEMORY; }
    uintptr_t a, s;
    CUresult r = map_device(fd, size, &a, &s);
    if (r) { close(fd); return r; }
    pthread_mutex_lock(&lock);
    add(a, s, size, K_DEVICE, fd);
    pthread_mutex_unlock(&lock);
    *dptr = a;
    return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
    drain(NULL); /* as the driver's: it waits for the work before it */
    pthread_mutex_lock(&lock);
    struct alloc *a = unlink_at(p);
    pthread_mutex_unlock(&lock);
    if (!a || (a->kind != K_DEVICE && a->kind != K_MANAGED)) return CUDA_ERROR_INVALID_VALUE;
    size_t len = a->size ? a->size : 1;
    munmap((void *)a->addr, len);
    if (a->shadow != a->addr) munmap((void *)a->shadow, len);
    if (a->fd >= 0) close(a->fd);
    free(a);
    return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned flags) {
    (void)flags;
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    void *m = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    add((uintptr_t)m, (uintptr_t)m, size, K_MANAGED, -1);
    pthread_mutex_unlock(&lock);
    *dptr = (uintptr_t)m;
    return CUDA_SUCCESS;
}

CUresult cuMemAllocHost_v2(void **p, size_t size) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    void *m = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    add((uintptr_t)m, (uintptr_t)m, size, K_PINNED, -1);
    pthread_mutex_unlock(&lock);
    *p = m;
    return CUDA_SUCCESS;
}
CUresult cuMemHostAlloc(void **p, size_t size, unsigned flags) { (void)flags; return cuMemAllocHost_v2(p, size); }

CUresult cuMemFreeHost(void *p) {
    pthread_mutex_lock(&lock);
    struct alloc *a = unlink_at((uintptr_t)p);
    pthread_mutex_unlock(&lock);
    if (!a || a->kind != K_PINNED) return CUDA_ERROR_INVALID_VALUE;
    munmap(p, a->size ? a->size : 1);
    free(a);
    return CUDA_SUCCESS;
}

CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned flags) {
    (void)flags;
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    if (!size) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    for (struct alloc *a = allocs; a; a = a->next)
        if ((uintptr_t)p < a->addr + a->size && a->addr < (uintptr_t)p + size) {
            /* Overlapping memory the driver knows already, as the driver says. */
            pthread_mutex_unlock(&lock);
            return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
        }
    add((uintptr_t)p, (uintptr_t)p, size, K_REGISTERED, -1);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
CUresult cuMemHostUnregister(void *p) {
    pthread_mutex_lock(&lock);
    struct alloc *a = find((uintptr_t)p);
    if (a && a->addr == (uintptr_t)p && a->kind == K_REGISTERED) unlink_at((uintptr_t)p);
    else a = NULL;
    pthread_mutex_unlock(&lock);
    if (!a) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    free(a);
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
    pthread_mutex_lock(&lock);
    struct alloc *a = find(p);
    if (a && a->kind != K_PINNED && a->kind != K_REGISTERED) {
        if (base) *base = a->addr;
        if (size) *size = a->size;
    }
    pthread_mutex_unlock(&lock);
    return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static void one_attr(struct alloc *a, int attr, void *data) {
    int dev = 0; /* every allocation is on device 0 */
    switch (attr) {
    case ATTR_CONTEXT: *(CUcontext *)data = a ? &primary[dev] : NULL; break;
    case ATTR_MEMORY_TYPE:
        *(unsigned *)data = !a ? 0 : (a->kind == K_PINNED || a->kind == K_REGISTERED) ? MT_HOST : MT_DEVICE;
        break;
    case ATTR_DEVICE_POINTER: *(CUdeviceptr *)data = a ? a->addr : 0; break;
    case ATTR_HOST_POINTER:
        *(void **)data = a && a->kind != K_DEVICE && a->kind != K_IPC ? (void *)a->addr : NULL;
        break;
    case ATTR_BUFFER_ID: *(unsigned long long *)data = a ? a->id : 0; break;
    case ATTR_IS_MANAGED: *(unsigned *)data = a && a->kind == K_MANAGED; break;
    case ATTR_DEVICE_ORDINAL: *(int *)data = a ? dev : -2; break;
    case ATTR_RANGE_START_ADDR: *(CUdeviceptr *)data = a ? a->addr : 0; break;
    case ATTR_RANGE_SIZE: *(size_t *)data = a ? a->size : 0; break;
    case ATTR_MAPPED: *(unsigned *)data = a != NULL; break;
    case ATTR_SYNC_MEMOPS: *(unsigned *)data = a && a->sync; break;
    default: *(unsigned *)data = 0;
    }
}

CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p) {
    if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    n_attr++;
    struct alloc *a = find(p);
    if (a) one_attr(a, attr, data);
    pthread_mutex_unlock(&lock);
    return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* As the real driver: no error for memory it does not know, only null values. */
CUresult cuPointerGetAttributes(unsigned n, int *attrs, void **data, CUdeviceptr p) {
    if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    n_attr++;
    struct alloc *a = find(p);
    for (unsigned i = 0; i < n; i++) one_attr(a, attrs[i], data[i]);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuPointerSetAttribute(const void *value, int attr, CUdeviceptr p) {
    if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
    if (attr != ATTR_SYNC_MEMOPS || !value) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct alloc *a = find(p);
    if (a && (a->kind == K_DEVICE || a->kind == K_IPC)) a->sync = *(const unsigned *)value != 0;
    pthread_mutex_unlock(&lock);
    return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The CPU view of [p, p+n): the shadow of device memory, the address itself
 * for host memory; NULL when a device range is overrun. */
static void *view(uintptr_t p, size_t n) {
    pthread_mutex_lock(&lock);
    struct alloc *a = find(p);
    void *v = (void *)p;
    if (a) {
        if (p + n > a->addr + a->size) v = NULL;
        else v = (void *)(a->shadow + (p - a->addr));
    }
    pthread_mutex_unlock(&lock);
    return v;
}

static CUresult rows(uintptr_t dst, uintptr_t src, size_t n) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    if (n == 0) return CUDA_SUCCESS;
    void *d = view(dst, n), *s = view(src, n);
    if (!d || !s) return CUDA_ERROR_INVALID_VALUE;
    memmove(d, s, n);
    return CUDA_SUCCESS;
}
/* ---- streams and events: queued copies, run on synchronization ---- */
struct op { uintptr_t d, s; size_t n; void *own; struct op *next; };
struct stream_s { struct op *head, *tail; pthread_mutex_t m; };
struct event_s { CUstream s; unsigned long long upto; };
static struct stream_s legacy = { NULL, NULL, PTHREAD_MUTEX_INITIALIZER };

/* The null stream, CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2) are
 * all the legacy stream here (one thread per process uses the double). */
static CUstream str(CUstream s) { return (uintptr_t)s <= 2 ? &legacy : s; }
static CUresult drain(CUstream s) {
    s = str(s);
    pthread_mutex_lock(&s->m);
    CUresult r = CUDA_SUCCESS;
    while (s->head) {
        struct op *o = s->head;
        s->head = o->next;
        if (!r) r = rows(o->d, o->s, o->n);
        free(o->own);
        free(o);
    }
    s->tail = NULL;
    pthread_mutex_unlock(&s->m);
    return r;
}
static void enqueue(CUstream st, struct op *o) {
    st = str(st);
    pthread_mutex_lock(&st->m);
    if (st->tail) st->tail->next = o; else st->head = o;
    st->tail = o;
    pthread_mutex_unlock(&st->m);
}

/* Whether a "synchronous" write into d returns before it lands: device
 * memory (plain or IPC-mapped) without SYNC_MEMOPS. */
static int lands_late(uintptr_t d) {
    pthread_mutex_lock(&lock);
    struct alloc *a = find(d);
    int r = a && (a->kind == K_DEVICE || a->kind == K_IPC) && !a->sync;
    pthread_mutex_unlock(&lock);
    return r;
}
/* Counts a copy from or to IPC-mapped memory (cuda_double_ipc_copies). */
static void note_ipc(uintptr_t d, uintptr_t s) {
    pthread_mutex_lock(&lock);
    struct alloc *a = find(d), *b = find(s);
    int ipc = (a && a->kind == K_IPC) || (b && b->kind == K_IPC);
    pthread_mutex_unlock(&lock);
    if (ipc) __atomic_add_fetch(&n_ipc_copy, 1, __ATOMIC_RELAXED);
}
static int is_pinned_host(uintptr_t p) {
    pthread_mutex_lock(&lock);
    struct alloc *a = find(p);
    int r = a && (a->kind == K_PINNED || a->kind == K_REGISTERED);
    pthread_mutex_unlock(&lock);
    return r;
}

/* n bytes of `bytes` (taken now) written to d after the legacy stream's
 * earlier work. */
static CUresult write_late(uintptr_t d, const void *bytes, size_t n) {
    struct op *o = calloc(1, sizeof *o);
    o->own = malloc(n ? n : 1);
    memcpy(o->own, bytes, n);
    o->d = d; o->s = (uintptr_t)o->own; o->n = n;
    enqueue(NULL, o);
    return CUDA_SUCCESS;
}

/* One copy call (counted), after the legacy stream's earlier work: one
 * into device memory from pageable host or device memory lands late
 * (above). */
static CUresult copy(uintptr_t dst, uintptr_t src, size_t n) {
    __atomic_add_fetch(&n_copy, 1, __ATOMIC_RELAXED);
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    note_ipc(dst, src);
    CUresult r = drain(NULL);
    if (r) return r;
    if (n && lands_late(dst) && !is_pinned_host(src)) {
        void *s = view(src, n);
        if (!s || !view(dst, n)) return CUDA_ERROR_INVALID_VALUE;
        return write_late(dst, s, n);
    }
    return rows(dst, src, n);
}

CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy(d, s, n); }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { return copy(d, (uintptr_t)s, n); }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { return copy((uintptr_t)d, s, n); }
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy(d, s, n); }
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    void *p = view(d, n);
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    if (n && lands_late(d)) {
        void *b = malloc(n);
        memset(b, v, n);
        CUresult r = write_late(d, b, n);
        free(b);
        return r;
    }
    CUresult r = drain(NULL);
    if (r) return r;
    memset(p, v, n);
    return CUDA_SUCCESS;
}

typedef struct {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

static uintptr_t side(int type, const void *host, CUdeviceptr dev) {
    return type == MT_HOST ? (uintptr_t)host : type == MT_DEVICE ? (uintptr_t)dev
         : type == MT_UNIFIED ? (uintptr_t)dev : 0;
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *c) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    if (c->srcPitch < c->WidthInBytes && c->Height > 1) return CUDA_ERROR_INVALID_VALUE;
    if (c->dstPitch < c->WidthInBytes && c->Height > 1) return CUDA_ERROR_INVALID_VALUE;
    uintptr_t s = side(c->srcMemoryType, c->srcHost, c->srcDevice);
    uintptr_t d = side(c->dstMemoryType, c->dstHost, c->dstDevice);
    if (!s || !d) return CUDA_ERROR_INVALID_VALUE;
    s += c->srcXInBytes + c->srcY * c->srcPitch;
    d += c->dstXInBytes + c->dstY * c->dstPitch;
    __atomic_add_fetch(&n_copy, 1, __ATOMIC_RELAXED);
    CUresult e0 = drain(NULL);
    if (e0) return e0;
    for (size_t r = 0; r < c->Height; r++) {
        CUresult e = rows(d + r * c->dstPitch, s + r * c->srcPitch, c->WidthInBytes);
        if (e) return e;
    }
    return CUDA_SUCCESS;
}


CUresult cuStreamCreate(CUstream *s, unsigned flags) {
    (void)flags;
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    *s = calloc(1, sizeof **s);
    pthread_mutex_init(&(*s)->m, NULL);
    return CUDA_SUCCESS;
}
CUresult cuStreamDestroy_v2(CUstream s) { CUresult r = drain(s); if (s) free(s); return r; }
CUresult cuStreamSynchronize(CUstream s) { return drain(s); }
CUresult cuStreamQuery(CUstream s) { return drain(s); }

/* Whether p is host memory the driver does not know (pageable). */
static int pageable(uintptr_t p) {
    pthread_mutex_lock(&lock);
    int r = find(p) == NULL;
    pthread_mutex_unlock(&lock);
    return r;
}

/* Asynchronous copies made with pageable host memory, for tests: the
 * library's staging areas are pinned, so its own copies never count here. */
long cuda_double_pageable_async(void) { return __atomic_load_n(&n_pageable, __ATOMIC_RELAXED); }

/* The longest asynchronous copy between host and device memory since the
 * last call (a strided one counts its rows together), for tests (a staged
 * message moved through the pipeline is copied a chunk at a time); the record starts over. */
static long max_staged;
long cuda_double_take_max_staged(void) { return __atomic_exchange_n(&max_staged, 0, __ATOMIC_RELAXED); }

/* Whether p is device memory (plain or IPC-mapped). */
static int on_device(uintptr_t p) {
    pthread_mutex_lock(&lock);
    struct alloc *a = find(p);
    int r = a && (a->kind == K_DEVICE || a->kind == K_IPC);
    pthread_mutex_unlock(&lock);
    return r;
}

/* A copy of n bytes between d and s: kept in max_staged where it goes
 * between host and device memory. */
static void note_staged(uintptr_t d, uintptr_t s, size_t n) {
    if (n && on_device(d) != on_device(s)) {
        long m = __atomic_load_n(&max_staged, __ATOMIC_RELAXED);
        while ((long)n > m && !__atomic_compare_exchange_n(&max_staged, &m, (long)n, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    }
}

CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    if (n && (!view(d, n) || !view(s, n))) return CUDA_ERROR_INVALID_VALUE;
    note_staged(d, s, n);
    note_ipc(d, s);
    if (n && (pageable(d) || pageable(s))) {
        /* As the real driver does: with pageable memory the copy is made
         * now, after the work queued before it (the call waits for it). */
        __atomic_add_fetch(&n_pageable, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&n_async, 1, __ATOMIC_RELAXED);
        CUresult r = drain(st);
        return r ? r : rows(d, s, n);
    }
    struct op *o = calloc(1, sizeof *o);
    o->d = d; o->s = s; o->n = n;
    st = str(st);
    pthread_mutex_lock(&st->m);
    if (st->tail) st->tail->next = o; else st->head = o;
    st->tail = o;
    pthread_mutex_unlock(&st->m);
    __atomic_add_fetch(&n_async, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}
/* A strided copy on stream st: its rows are queued as copies (or, with
 * pageable memory on the host side, made now, as the real driver does). */
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, CUstream st) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    if (c->srcPitch < c->WidthInBytes && c->Height > 1) return CUDA_ERROR_INVALID_VALUE;
    if (c->dstPitch < c->WidthInBytes && c->Height > 1) return CUDA_ERROR_INVALID_VALUE;
    uintptr_t s = side(c->srcMemoryType, c->srcHost, c->srcDevice);
    uintptr_t d = side(c->dstMemoryType, c->dstHost, c->dstDevice);
    if (!s || !d) return CUDA_ERROR_INVALID_VALUE;
    s += c->srcXInBytes + c->srcY * c->srcPitch;
    d += c->dstXInBytes + c->dstY * c->dstPitch;
    size_t w = c->WidthInBytes, h = c->Height;
    if (!w || !h) return CUDA_SUCCESS;
    for (size_t r = 0; r < h; r++)
        if (!view(d + r * c->dstPitch, w) || !view(s + r * c->srcPitch, w)) return CUDA_ERROR_INVALID_VALUE;
    __atomic_add_fetch(&n_async, 1, __ATOMIC_RELAXED);
    note_staged(d, s, w * h);
    note_ipc(d, s);
    if (pageable(d) || pageable(s)) {
        __atomic_add_fetch(&n_pageable, 1, __ATOMIC_RELAXED);
        CUresult e = drain(st);
        for (size_t r = 0; !e && r < h; r++) e = rows(d + r * c->dstPitch, s + r * c->srcPitch, w);
        return e;
    }
    st = str(st);
    pthread_mutex_lock(&st->m);
    for (size_t r = 0; r < h; r++) {
        struct op *o = calloc(1, sizeof *o);
        o->d = d + r * c->dstPitch; o->s = s + r * c->srcPitch; o->n = w;
        if (st->tail) st->tail->next = o; else st->head = o;
        st->tail = o;
    }
    pthread_mutex_unlock(&st->m);
    return CUDA_SUCCESS;
}

/* Stream memory operations: 32- and 64-bit writes of values into device
 * memory (plain or IPC-mapped), queued in order on the stream like its
 * copies, the value taken at the call; each address aligned to its width.
 * Other operations, flags, no writes or more than 255 in one call (the
 * H200's driver refused 256) are refused. Calls counted for tests. */
typedef struct {
    unsigned op, pad; CUdeviceptr address; unsigned long long value;
    unsigned flags, pad2; CUdeviceptr alias; unsigned long long rest;
} memop_t;
static long n_memop;
CUresult cuStreamBatchMemOp_v2(CUstream st, unsigned count, memop_t *p, unsigned flags) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    if (!count || count > 255 || flags || !p) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count; i++) {
        size_t w = p[i].op == 2 ? 4 : p[i].op == 5 ? 8 : 0;
        if (!w) return CUDA_ERROR_NOT_SUPPORTED;
        if (p[i].address % w || !view(p[i].address, w)) return CUDA_ERROR_INVALID_VALUE;
        pthread_mutex_lock(&lock);
        struct alloc *a = find(p[i].address);
        int dev = a && (a->kind == K_DEVICE || a->kind == K_IPC);
        pthread_mutex_unlock(&lock);
        if (!dev) return CUDA_ERROR_INVALID_VALUE;
    }
    for (unsigned i = 0; i < count; i++) {
        size_t w = p[i].op == 2 ? 4 : 8;
        struct op *o = calloc(1, sizeof *o);
        o->own = malloc(8);
        memcpy(o->own, &p[i].value, w); /* little-endian: the low half for 32 bits */
        o->d = p[i].address; o->s = (uintptr_t)o->own; o->n = w;
        enqueue(st, o);
    }
    __atomic_add_fetch(&n_memop, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}
long cuda_double_memops(void) { return __atomic_load_n(&n_memop, __ATOMIC_RELAXED); }

/* Copies that wait in the call (cuMemcpy, cuMemcpy2D, their typed forms),
 * for tests: a nonblocking call on device buffers makes none. */
long cuda_double_sync_copies(void) { return __atomic_load_n(&n_copy, __ATOMIC_RELAXED); }
/* Copies from or to memory mapped by cuIpcOpenMemHandle. */
long cuda_double_ipc_copies(void) { return __atomic_load_n(&n_ipc_copy, __ATOMIC_RELAXED); }
/* Every copy the driver was asked for, in the call or queued. */
long cuda_double_copies(void) {
    return __atomic_load_n(&n_copy, __ATOMIC_RELAXED) + __atomic_load_n(&n_async, __ATOMIC_RELAXED);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream st) { return cuMemcpyAsync(d, (uintptr_t)s, n, st); }
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, CUstream st) { return cuMemcpyAsync((uintptr_t)d, s, n, st); }
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return cuMemcpyAsync(d, s, n, st); }

CUresult cuEventCreate(CUevent *e, unsigned flags) {
    (void)flags;
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    *e = calloc(1, sizeof **e);
    return CUDA_SUCCESS;
}
CUresult cuEventDestroy_v2(CUevent e) { free(e); return CUDA_SUCCESS; }
CUresult cuEventRecord(CUevent e, CUstream s) { e->s = str(s); return CUDA_SUCCESS; }
/* A query completes the work before the event: the double has no GPU
 * running it meanwhile, so "not ready" would never turn into "ready". */
CUresult cuEventQuery(CUevent e) { return e->s ? drain(e->s) : CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent e) { return cuEventQuery(e); }

/* ---- IPC ---- */
CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p) {
    pthread_mutex_lock(&lock);
    struct alloc *a = find(p);
    if (!a || a->addr != p || a->kind != K_DEVICE) { pthread_mutex_unlock(&lock); return CUDA_ERROR_INVALID_VALUE; }
    struct ipc i = { MAGIC, (int)getpid(), a->fd, a->size, a->id, a->addr };
    n_ipc_get++;
    pthread_mutex_unlock(&lock);
    memset(h, 0, sizeof *h);
    memcpy(h->reserved, &i, sizeof i);
    return CUDA_SUCCESS;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned flags) {
    (void)flags;
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    if (getenv("CUDA_DOUBLE_NO_IPC")) return CUDA_ERROR_NOT_SUPPORTED;
    struct ipc i;
    memcpy(&i, h.reserved, sizeof i);
    if (i.magic != MAGIC) return CUDA_ERROR_INVALID_VALUE;
    if (i.pid == getpid()) return CUDA_ERROR_INVALID_CONTEXT; /* as the driver: not in the exporting process */
    /* As the driver: one open mapping per exported allocation and process,
     * and none of an allocation while one of an earlier allocation of the
     * exporter at an overlapping address (freed there since) is open. */
    pthread_mutex_lock(&lock);
    for (struct alloc *o = allocs; o; o = o->next)
        if (o->kind == K_IPC && o->from_pid == i.pid &&
            (o->from_id == i.id || (o->from_addr < i.addr + (i.size ? i.size : 1) && i.addr < o->from_addr + (o->from_size ? o->from_size : 1)))) {
            pthread_mutex_unlock(&lock);
            return CUDA_ERROR_ALREADY_MAPPED;
        }
    pthread_mutex_unlock(&lock);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", i.pid, i.fd);
    int fd = open(path, O_RDWR);
    if (fd < 0) return CUDA_ERROR_INVALID_HANDLE;
    uintptr_t a, s;
    CUresult r = map_device(fd, i.size, &a, &s);
    if (r) { close(fd); return r; }
    pthread_mutex_lock(&lock);
    add(a, s, i.size, K_IPC, fd);
    allocs->from_pid = i.pid;
    allocs->from_id = i.id;
    allocs->from_addr = i.addr;
    allocs->from_size = i.size;
    n_ipc_open++;
    pthread_mutex_unlock(&lock);
    *p = a;
    return CUDA_SUCCESS;
}
CUresult cuIpcOpenMemHandle(CUdeviceptr *p, CUipcMemHandle h, unsigned flags) { return cuIpcOpenMemHandle_v2(p, h, flags); }

CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
    pthread_mutex_lock(&lock);
    struct alloc *a = unlink_at(p);
    pthread_mutex_unlock(&lock);
    if (!a || a->kind != K_IPC) return CUDA_ERROR_INVALID_VALUE;
    munmap((void *)a->addr, a->size ? a->size : 1);
    munmap((void *)a->shadow, a->size ? a->size : 1);
    close(a->fd);
    free(a);
    return CUDA_SUCCESS;
}

/* ---- modules and kernels ----
 * By default cuModuleLoadData answers CUDA_ERROR_NOT_SUPPORTED, so the
 * library's reductions on device buffers fall back to host copies. With
 * CUDA_DOUBLE_KERNELS=1 a module loads whatever its image, and
 * cuModuleGetFunction knows the library's reduction kernels by name
 * (oxmpi_<op>_<type>) on the integer types, float, double, C bool, LOGICAL
 * and bytes: launching one runs its loop on the CPU, after what is queued
 * on its stream, computing what the library's CUDA C says (wrapping
 * integer arithmetic, no contraction). Other names (16-bit floats,
 * complex) answer CUDA_ERROR_NOT_FOUND, so those fall back. A kernel's
 * pointers must be device memory (CUDA_ERROR_ILLEGAL_ADDRESS otherwise, as
 * a host pointer on a GPU), and its grid must be within the limits. */
enum { CUDA_ERROR_NOT_FOUND = 500, CUDA_ERROR_ILLEGAL_ADDRESS = 700 };
static int module_token;

typedef void (*kern_fn)(const void *, void *, unsigned long long);
#define KERNEL(name, T, U, expr) \
    static void k_##name(const void *av, void *bv, unsigned long long n) { \
        const T *a = av; T *b = bv; \
        for (unsigned long long i = 0; i < n; i++) { expr; } \
    }
#define INT_KERNELS(tag, T, U) \
    KERNEL(max_##tag, T, U, b[i] = a[i] > b[i] ? a[i] : b[i]) \
    KERNEL(min_##tag, T, U, b[i] = a[i] < b[i] ? a[i] : b[i]) \
    KERNEL(sum_##tag, T, U, b[i] = (T)((U)a[i] + (U)b[i])) \
    KERNEL(prod_##tag, T, U, b[i] = (T)((U)a[i] * (U)b[i])) \
    KERNEL(land_##tag, T, U, b[i] = (T)((a[i] != 0) && (b[i] != 0))) \
    KERNEL(lor_##tag, T, U, b[i] = (T)((a[i] != 0) || (b[i] != 0))) \
    KERNEL(lxor_##tag, T, U, b[i] = (T)((a[i] != 0) != (b[i] != 0))) \
    KERNEL(band_##tag, T, U, b[i] &= a[i]) \
    KERNEL(bor_##tag, T, U, b[i] |= a[i]) \
    KERNEL(bxor_##tag, T, U, b[i] ^= a[i]) \
    KERNEL(replace_##tag, T, U, b[i] = a[i])
#define FLOAT_KERNELS(tag, T) \
    KERNEL(max_##tag, T, T, b[i] = a[i] > b[i] ? a[i] : b[i]) \
    KERNEL(min_##tag, T, T, b[i] = a[i] < b[i] ? a[i] : b[i]) \
    KERNEL(sum_##tag, T, T, b[i] = a[i] + b[i]) \
    KERNEL(prod_##tag, T, T, b[i] = a[i] * b[i]) \
    KERNEL(replace_##tag, T, T, b[i] = a[i])
INT_KERNELS(i8, signed char, unsigned char)
INT_KERNELS(u8, unsigned char, unsigned char)
INT_KERNELS(i16, short, unsigned short)
INT_KERNELS(u16, unsigned short, unsigned short)
INT_KERNELS(i32, int, unsigned int)
INT_KERNELS(u32, unsigned int, unsigned int)
INT_KERNELS(i64, long long, unsigned long long)
INT_KERNELS(u64, unsigned long long, unsigned long long)
FLOAT_KERNELS(f32, float)
FLOAT_KERNELS(f64, double)
KERNEL(land_bool, unsigned char, unsigned char, b[i] = (unsigned char)((a[i] != 0) && (b[i] != 0)))
KERNEL(lor_bool, unsigned char, unsigned char, b[i] = (unsigned char)((a[i] != 0) || (b[i] != 0)))
KERNEL(lxor_bool, unsigned char, unsigned char, b[i] = (unsigned char)((a[i] != 0) != (b[i] != 0)))
KERNEL(replace_bool, unsigned char, unsigned char, b[i] = a[i])
KERNEL(land_logical, int, unsigned int, b[i] = (int)((a[i] != 0) && (b[i] != 0)))
KERNEL(lor_logical, int, unsigned int, b[i] = (int)((a[i] != 0) || (b[i] != 0)))
KERNEL(lxor_logical, int, unsigned int, b[i] = (int)((a[i] != 0) != (b[i] != 0)))
KERNEL(replace_logical, int, unsigned int, b[i] = a[i])
KERNEL(band_byte, unsigned char, unsigned char, b[i] &= a[i])
KERNEL(bor_byte, unsigned char, unsigned char, b[i] |= a[i])
KERNEL(bxor_byte, unsigned char, unsigned char, b[i] ^= a[i])
KERNEL(replace_byte, unsigned char, unsigned char, b[i] = a[i])

#define E(tag, w) {"oxmpi_max_" #tag, k_max_##tag, w}, {"oxmpi_min_" #tag, k_min_##tag, w}, \
    {"oxmpi_sum_" #tag, k_sum_##tag, w}, {"oxmpi_prod_" #tag, k_prod_##tag, w}, {"oxmpi_replace_" #tag, k_replace_##tag, w}
#define EI(tag, w) E(tag, w), {"oxmpi_land_" #tag, k_land_##tag, w}, {"oxmpi_lor_" #tag, k_lor_##tag, w}, \
    {"oxmpi_lxor_" #tag, k_lxor_##tag, w}, {"oxmpi_band_" #tag, k_band_##tag, w}, {"oxmpi_bor_" #tag, k_bor_##tag, w}, \
    {"oxmpi_bxor_" #tag, k_bxor_##tag, w}
static const struct kernel { const char *name; kern_fn f; size_t width; } kernels[] = {
    EI(i8, 1), EI(u8, 1), EI(i16, 2), EI(u16, 2), EI(i32, 4), EI(u32, 4), EI(i64, 8), EI(u64, 8),
    E(f32, 4), E(f64, 8),
    {"oxmpi_land_bool", k_land_bool, 1}, {"oxmpi_lor_bool", k_lor_bool, 1}, {"oxmpi_lxor_bool", k_lxor_bool, 1},
    {"oxmpi_replace_bool", k_replace_bool, 1},
    {"oxmpi_land_logical", k_land_logical, 4}, {"oxmpi_lor_logical", k_lor_logical, 4},
    {"oxmpi_lxor_logical", k_lxor_logical, 4}, {"oxmpi_replace_logical", k_replace_logical, 4},
    {"oxmpi_band_byte", k_band_byte, 1}, {"oxmpi_bor_byte", k_bor_byte, 1}, {"oxmpi_bxor_byte", k_bxor_byte, 1},
    {"oxmpi_replace_byte", k_replace_byte, 1},
};

CUresult cuModuleLoadData(void **m, const void *image) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    if (!getenv("CUDA_DOUBLE_KERNELS")) return CUDA_ERROR_NOT_SUPPORTED;
    if (!m || !image) return CUDA_ERROR_INVALID_VALUE;
    *m = &module_token;
    return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
    if (m != &module_token || !f || !name) return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        if (!strcmp(kernels[i].name, name)) { *f = (void *)&kernels[i]; return CUDA_SUCCESS; }
    return CUDA_ERROR_NOT_FOUND;
}
/* The CPU view of a kernel's operand: device, managed or opened IPC memory
 * only (NULL otherwise, or when the range is overrun). */
static void *kernel_view(uintptr_t p, size_t n) {
    pthread_mutex_lock(&lock);
    struct alloc *a = find(p);
    void *v = NULL;
    if (a && (a->kind == K_DEVICE || a->kind == K_MANAGED || a->kind == K_IPC) && p + n <= a->addr + a->size)
        v = (void *)(a->shadow + (p - a->addr));
    pthread_mutex_unlock(&lock);
    return v;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, CUstream s, void **params, void **extra) {
    (void)shmem; (void)extra;
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    const struct kernel *k = f;
    if (!k || k < kernels || k >= kernels + sizeof kernels / sizeof kernels[0]) return CUDA_ERROR_INVALID_HANDLE;
    if (!gx || !gy || !gz || !bx || !by || !bz || gy > 65535 || gz > 65535 || (unsigned long long)bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (!params) return CUDA_ERROR_INVALID_VALUE;
    unsigned long long a = *(unsigned long long *)params[0], b = *(unsigned long long *)params[1];
    unsigned long long n = *(unsigned long long *)params[2];
    /* What was queued on the stream before the kernel runs first. */
    CUresult r = drain(s);
    if (r) return r;
    if (n == 0) return CUDA_SUCCESS;
    void *av = kernel_view(a, n * k->width), *bv = kernel_view(b, n * k->width);
    if (!av || !bv) return CUDA_ERROR_ILLEGAL_ADDRESS;
    k->f(av, bv, n);
    __atomic_add_fetch(&n_kernels, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}
