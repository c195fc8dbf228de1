/* How the CUDA driver shares small allocations over IPC, for the design of
 * the IPC mapping cache (src/gpu/ipc.rs): an exporting process allocates
 * two buffers A and B of one size back to back; an importing process opens
 * A's handle, then B's, and reports what the driver answers (some drivers
 * carve small allocations out of one larger one, and a process may map
 * that only once), whether B is then reachable inside A's mapping at B's
 * distance from A, and what the importer's allocation range of A's mapping
 * is. One exporter (parent) and one importer (child). Exits 0 without a
 * driver. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef unsigned long long dptr;
static struct {
    int (*init)(unsigned);
    int (*dev_get)(int *, int);
    int (*retain)(void **, int);
    int (*set_current)(void *);
    int (*alloc)(dptr *, size_t);
    int (*free)(dptr);
    int (*memset8)(dptr, unsigned char, size_t);
    int (*dtoh)(void *, dptr, size_t);
    int (*sync)(void);
    int (*attrs)(unsigned, int *, void **, dptr);
    int (*ipc_get)(void *, dptr);
    int (*ipc_open)(dptr *, const char *, unsigned); /* handle by value: 64 bytes */
    int (*ipc_close)(dptr);
} cu;
typedef struct { char b[64]; } handle_t;
static int (*ipc_open_v)(dptr *, handle_t, unsigned);

static int setup(void) {
    const char *name = getenv("OXMPI_CUDA_LIB");
    void *h = dlopen(name && *name ? name : "libcuda.so.1", RTLD_NOW);
    if (!h) return 0;
#define S(f, s) if (!(*(void **)&cu.f = dlsym(h, s))) return 0;
    S(init, "cuInit"); S(dev_get, "cuDeviceGet"); S(retain, "cuDevicePrimaryCtxRetain");
    S(set_current, "cuCtxSetCurrent"); S(alloc, "cuMemAlloc_v2"); S(free, "cuMemFree_v2");
    S(memset8, "cuMemsetD8_v2"); S(dtoh, "cuMemcpyDtoH_v2"); S(sync, "cuCtxSynchronize");
    S(attrs, "cuPointerGetAttributes"); S(ipc_get, "cuIpcGetMemHandle"); S(ipc_close, "cuIpcCloseMemHandle");
    if (!(*(void **)&ipc_open_v = dlsym(h, "cuIpcOpenMemHandle_v2"))) return 0;
    int dev; void *ctx;
    return !(cu.init(0) || cu.dev_get(&dev, 0) || cu.retain(&ctx, dev) || cu.set_current(ctx));
}

static void range(dptr p, dptr *start, size_t *size, unsigned long long *id) {
    int a[3] = {11, 12, 7};
    void *v[3] = {start, size, id};
    *start = 0; *size = 0; *id = 0;
    cu.attrs(3, a, v, p);
}

struct msg { handle_t ha, hb; dptr a, b; size_t n; };

int main(void) {
    int down[2], up[2];
    if (pipe(down) || pipe(up)) return 1;
    pid_t pid = fork();
    if (pid == 0) {
        if (!setup()) return 0;
        struct msg m;
        while (read(down[0], &m, sizeof m) == sizeof m) {
            dptr pa = 0, pb = 0, s; size_t sz; unsigned long long id;
            int ra = ipc_open_v(&pa, m.ha, 1);
            range(pa, &s, &sz, &id);
            printf("  importer: open A -> %d; A's mapping range [start %+lld from A, %zu bytes]\n", ra, (long long)(s - pa), sz);
            int rb = ipc_open_v(&pb, m.hb, 1);
            unsigned char byte = 0;
            if (rb == 0) {
                cu.dtoh(&byte, pb, 1);
                printf("  importer: open B -> 0, B reads 0x%02x; B - A here %+lld (exporter %+lld)\n", byte, (long long)(pb - pa), (long long)(m.b - m.a));
                cu.ipc_close(pb);
            } else {
                dptr cand = pa + (m.b - m.a);
                range(cand, &s, &sz, &id);
                int rr = s ? cu.dtoh(&byte, cand, 1) : -1;
                printf("  importer: open B -> %d; at A + (B - A): range start %s, read -> %d, byte 0x%02x\n", rb, s ? "known" : "unknown", rr, byte);
                if (ra == 0) { cu.ipc_close(pa); pa = 0; }
                int r2 = ipc_open_v(&pb, m.hb, 1);
                if (r2 == 0) { cu.dtoh(&byte, pb, 1); cu.ipc_close(pb); }
                printf("  importer: after closing A, open B -> %d (byte 0x%02x)\n", r2, byte);
            }
            if (pa && ra == 0) cu.ipc_close(pa);
            fflush(stdout);
            char ok = 1;
            if (write(up[1], &ok, 1) != 1) return 1;
        }
        return 0;
    }
    if (!setup()) { printf("gpu_ipc_probe: no CUDA driver, skipped\n"); close(down[1]); wait(NULL); return 0; }
    size_t sizes[] = {1024, 65536, 1 << 20, 2 << 20, 4 << 20};
    for (int k = 0; k < 5; k++) {
        struct msg m = {0};
        m.n = sizes[k];
        cu.alloc(&m.a, m.n); cu.alloc(&m.b, m.n);
        cu.memset8(m.a, 0xa1, m.n); cu.memset8(m.b, 0xb2, m.n); cu.sync();
        dptr sa, sb; size_t za, zb; unsigned long long ia, ib;
        range(m.a, &sa, &za, &ia); range(m.b, &sb, &zb, &ib);
        int ga = cu.ipc_get(&m.ha, m.a), gb = cu.ipc_get(&m.hb, m.b);
        int same = !memcmp(&m.ha, &m.hb, 64), differ = 0;
        for (int i = 0; i < 64; i++) differ += m.ha.b[i] != m.hb.b[i];
        printf("%zu bytes: B - A %+lld; ranges %zu, %zu; ids %llu, %llu; handles %d %d, %s (%d bytes differ)\n",
               m.n, (long long)(m.b - m.a), za, zb, ia, ib, ga, gb, same ? "equal" : "different", differ);
        fflush(stdout);
        if (write(down[1], &m, sizeof m) != sizeof m) return 1;
        char ok;
        if (read(up[0], &ok, 1) != 1) return 1;
        cu.free(m.a); cu.free(m.b);
    }
    close(down[1]);
    wait(NULL);
    return 0;
}
