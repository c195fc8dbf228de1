/* Point-to-point with device buffers (CUDA-aware MPI): every send and
 * receive mode, probe, persistent requests, Bsend, derived datatypes on
 * device memory (gaps left alone), device and host buffers on the two
 * sides of one message, MPI_Pack/Unpack, MPI_Reduce_local, reuse of an
 * address after free, managed and pinned host memory, and the query
 * functions. Ranks form a ring (1 rank: to itself). */
#include "gpu_util.h"

static int rank, size, next, prev;

/* Sends n bytes of pattern(rank, tag) from a buffer of kind sk to next and
 * receives from prev into a buffer of kind rk ('d' device, 'h' host),
 * with Isend/Irecv; checks what arrived. */
static void ring(long n, int tag, char sk, char rk) {
    unsigned char *h = malloc(n), *got;
    fill(h, n, rank, tag);
    void *s = sk == 'd' ? dcopy(h, n) : h;
    void *r = rk == 'd' ? dalloc(n, 0xee) : calloc(1, n);
    MPI_Request q[2];
    MPI_Irecv(r, (int)n, MPI_BYTE, prev, tag, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(s, (int)n, MPI_BYTE, next, tag, MPI_COMM_WORLD, &q[1]);
    MPI_Status st[2];
    CHECK(MPI_Waitall(2, q, st) == MPI_SUCCESS, "waitall");
    int cnt;
    MPI_Get_count(&st[0], MPI_BYTE, &cnt);
    CHECK(cnt == n && st[0].MPI_SOURCE == prev && st[0].MPI_TAG == tag, "status: count %d source %d", cnt, st[0].MPI_SOURCE);
    got = rk == 'd' ? hcopy(r, n) : r;
    long bad = verify(got, n, prev, tag);
    CHECK(bad < 0, "%c->%c %ld bytes: byte %ld wrong", sk, rk, n, bad);
    if (rk == 'd') { free(got); dfree(r); } else free(r);
    if (sk == 'd') dfree(s);
    free(h);
}

/* Device messages above the eager limit go to a rank of this node by CUDA
 * IPC, except below OXMPI_CUDA_IPC_SHARED_MIN (default 256 KiB) when the
 * two processes share one GPU that runs without MPS (the double: all
 * ranks on device 0, MPS off with CUDA_DOUBLE_MPS=0): those are staged.
 * Checked on the receiver against the double's count of copies out of
 * IPC mappings, device and host receive buffers alike. */
static void shared_gpu(void) {
    if (!cu.ipc_copies || size == 1 || getenv("CUDA_DOUBLE_NO_IPC") || getenv("OXMPI_TEST_UCX"))
        return;
    const char *ipc = getenv("OXMPI_CUDA_IPC"), *mps = getenv("CUDA_DOUBLE_MPS");
    if (ipc && atoi(ipc) == 0) return;
    const char *m = getenv("OXMPI_CUDA_IPC_SHARED_MIN");
    long min = m ? atol(m) : 262144;
    int shared = mps && atoi(mps) == 0;
    long sizes[] = {65536, 262143, 262144, 1 << 20};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 2; k++) {
            long n = sizes[i];
            char rk = k ? 'h' : 'd';
            MPI_Barrier(MPI_COMM_WORLD);
            long before = cu.ipc_copies();
            ring(n, 120 + i, 'd', rk);
            long used = cu.ipc_copies() - before;
            int want = !(shared && n < min);
            CHECK(want ? used > 0 : used == 0,
                  "a device message of %ld bytes to a %s buffer (MPS %s, shared minimum %ld): %ld copies out of IPC mappings, expected %s",
                  n, k ? "host" : "device", shared ? "off" : "on", min, used, want ? "some" : "none");
        }
}

/* Short device messages are written into the receiver's device buffer
 * by value writes (OXMPI_GPU_MEMOP_MAX, default 64 bytes: whole aligned 4-
 * or 8-byte words), not copies; others, and all with OXMPI_GPU_MEMOP_MAX=0,
 * by a copy. Each arrives whole at its offset, the bytes around it left
 * alone. Receives from prev: n bytes at byte offset off of a device buffer;
 * whether they took value writes is checked against the double's count. */
static void short_device(void) {
    if (!cu.memops || size == 1) return;
    const char *m = getenv("OXMPI_GPU_MEMOP_MAX");
    long max = m ? atol(m) : 64;
    int cases[][2] = {{8, 0}, {64, 0}, {12, 4}, {8, 4}, {72, 0}, {7, 0}, {8, 1}, {136, 0}};
    for (int c = 0; c < 8; c++) {
        int n = cases[c][0], off = cases[c][1], tag = 90 + c;
        unsigned char h[256];
        fill(h, n, rank, tag);
        void *s = dcopy(h, n);
        unsigned char *r = dalloc(n + 16, 0xee);
        MPI_Barrier(MPI_COMM_WORLD);
        long before = cu.memops();
        MPI_Sendrecv(s, n, MPI_BYTE, next, tag, r + off, n, MPI_BYTE, prev, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        long used = cu.memops() - before;
        unsigned char *got = hcopy(r, n + 16);
        long bad = verify(got + off, n, prev, tag);
        CHECK(bad < 0, "short device message of %d bytes at offset %d: byte %ld wrong", n, off, bad);
        for (int i = 0; i < n + 16; i++)
            CHECK(i >= off && i < off + n ? 1 : got[i] == 0xee, "short device message of %d bytes at offset %d: byte %d around it changed to 0x%02x", n, off, i, got[i]);
        int words = n <= max && n <= 64 && ((off % 8 == 0 && n % 8 == 0) || (off % 4 == 0 && n % 4 == 0));
        CHECK(words ? used >= 1 : used == 0, "short device message of %d bytes at offset %d (OXMPI_GPU_MEMOP_MAX %ld): %ld calls of value writes", n, off, max, used);
        free(got);
        dfree(r);
        dfree(s);
    }
}

static void modes(size_t n) {
    unsigned char *h = malloc(n);
    fill(h, n, rank, 5);
    void *s = dcopy(h, n), *r = dalloc(n, 0);
    /* Ssend, Rsend (receive posted before a barrier), Bsend, blocking. */
    for (int mode = 0; mode < 4; mode++) {
        MPI_Request q;
        to_dev(r, (unsigned char[1]){0}, 1);
        MPI_Irecv(r, (int)n, MPI_BYTE, prev, 5, MPI_COMM_WORLD, &q);
        MPI_Barrier(MPI_COMM_WORLD);
        if (mode == 0) MPI_Ssend(s, (int)n, MPI_BYTE, next, 5, MPI_COMM_WORLD);
        if (mode == 1) MPI_Rsend(s, (int)n, MPI_BYTE, next, 5, MPI_COMM_WORLD);
        if (mode == 2) {
            int bs = (int)n + MPI_BSEND_OVERHEAD;
            void *b = malloc(bs);
            MPI_Buffer_attach(b, bs);
            MPI_Bsend(s, (int)n, MPI_BYTE, next, 5, MPI_COMM_WORLD);
            /* The device buffer may change once Bsend returns. */
            to_dev(s, (unsigned char[1]){0x5a}, 1);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            MPI_Buffer_detach(&b, &bs);
            free(b);
            to_dev(s, h, 1);
        } else if (mode == 3) {
            MPI_Send(s, (int)n, MPI_BYTE, next, 5, MPI_COMM_WORLD);
        }
        if (mode != 2) MPI_Wait(&q, MPI_STATUS_IGNORE);
        unsigned char *g = hcopy(r, n);
        long bad = verify(g, n, prev, 5);
        CHECK(bad < 0, "mode %d, %zu bytes: byte %ld wrong", mode, n, bad);
        free(g);
    }
    /* Sendrecv, device to device. */
    MPI_Status st;
    MPI_Sendrecv(s, (int)n, MPI_BYTE, next, 6, r, (int)n, MPI_BYTE, prev, 6, MPI_COMM_WORLD, &st);
    unsigned char *g = hcopy(r, n);
    CHECK(verify(g, (long)n, prev, 5) < 0, "sendrecv %zu bytes", n);
    free(g);
    /* Sendrecv_replace on a device buffer. */
    fill(h, n, rank, 7);
    to_dev(r, h, n);
    MPI_Sendrecv_replace(r, (int)n, MPI_BYTE, next, 7, prev, 7, MPI_COMM_WORLD, &st);
    g = hcopy(r, n);
    CHECK(verify(g, n, prev, 7) < 0, "sendrecv_replace %zu bytes", n);
    free(g);
    dfree(s);
    dfree(r);
    free(h);
}

static void probe_and_persistent(size_t n) {
    unsigned char *h = malloc(n);
    void *s = dalloc(n, 0), *r = dalloc(n, 0);
    /* Probe, then receive into device memory; Mprobe / Mrecv likewise. */
    fill(h, n, rank, 8);
    to_dev(s, h, n);
    MPI_Request q;
    MPI_Isend(s, (int)n, MPI_BYTE, next, 8, MPI_COMM_WORLD, &q);
    MPI_Status st;
    MPI_Probe(prev, 8, MPI_COMM_WORLD, &st);
    int cnt;
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == n, "probe count %d", cnt);
    MPI_Recv(r, cnt, MPI_BYTE, prev, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    unsigned char *g = hcopy(r, n);
    CHECK(verify(g, n, prev, 8) < 0, "probe+recv %zu", n);
    free(g);
    MPI_Isend(s, (int)n, MPI_BYTE, next, 9, MPI_COMM_WORLD, &q);
    MPI_Message m;
    MPI_Mprobe(prev, 9, MPI_COMM_WORLD, &m, &st);
    MPI_Mrecv(r, (int)n, MPI_BYTE, &m, MPI_STATUS_IGNORE);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    g = hcopy(r, n);
    CHECK(verify(g, n, prev, 8) < 0, "mprobe+mrecv %zu", n);
    free(g);
    /* Persistent requests: the device buffer's contents at each start. */
    MPI_Request p[2];
    MPI_Recv_init(r, (int)n, MPI_BYTE, prev, 10, MPI_COMM_WORLD, &p[0]);
    MPI_Send_init(s, (int)n, MPI_BYTE, next, 10, MPI_COMM_WORLD, &p[1]);
    for (int round = 0; round < 3; round++) {
        fill(h, n, rank, 10 + round);
        to_dev(s, h, n);
        MPI_Startall(2, p);
        MPI_Waitall(2, p, MPI_STATUSES_IGNORE);
        g = hcopy(r, n);
        CHECK(verify(g, n, prev, 10 + round) < 0, "persistent round %d, %zu bytes", round, n);
        free(g);
    }
    MPI_Request_free(&p[0]);
    MPI_Request_free(&p[1]);
    dfree(s);
    dfree(r);
    free(h);
}

/* A vector of ints on device memory at both ends: only the blocks move,
 * the gaps of the receive buffer keep their bytes. */
static void vector(int count, int blk, int stride) {
    MPI_Datatype v;
    MPI_Type_vector(count, blk, stride, MPI_INT, &v);
    MPI_Type_commit(&v);
    long nint = (long)count * stride;
    int *h = malloc(nint * sizeof(int)), *e = malloc(nint * sizeof(int));
    for (long i = 0; i < nint; i++) h[i] = rank * 1000003 + (int)i;
    int *s = dcopy(h, nint * sizeof(int));
    int *r = dalloc(nint * sizeof(int), 0x11);
    MPI_Sendrecv(s, 1, v, next, 11, r, 1, v, prev, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int *g = hcopy(r, nint * sizeof(int));
    memset(e, 0x11, nint * sizeof(int));
    for (int c = 0; c < count; c++)
        for (int b = 0; b < blk; b++) {
            long i = (long)c * stride + b;
            e[i] = prev * 1000003 + (int)i;
        }
    CHECK(memcmp(g, e, nint * sizeof(int)) == 0, "vector %d x %d / %d: device layout wrong", count, blk, stride);
    /* Device vector to a host contiguous buffer and back the other way. */
    int *hc = calloc(count * blk, sizeof(int));
    MPI_Sendrecv(s, 1, v, next, 12, hc, count * blk, MPI_INT, prev, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int c = 0; c < count; c++)
        for (int b = 0; b < blk; b++)
            CHECK(hc[c * blk + b] == prev * 1000003 + c * stride + b, "vector to host contiguous");
    free(g);
    free(hc);
    free(h);
    free(e);
    dfree(s);
    dfree(r);
    MPI_Type_free(&v);
}

/* A device vector sent and received with Isend/Irecv to another rank:
 * the strided copies that pack and unpack it go on the library's stream
 * (whole, or a chunk at a time through the device pipeline), so none of
 * the calls makes a copy that waits for the device (the test double
 * counts those), and the blocks arrive. */
static void vector_nonblocking(int count, int blk, int stride) {
    if (!cu.sync_copies || size == 1) return;
    MPI_Datatype v;
    MPI_Type_vector(count, blk, stride, MPI_INT, &v);
    MPI_Type_commit(&v);
    long nint = (long)count * stride;
    int *h = malloc(nint * sizeof(int));
    for (long i = 0; i < nint; i++) h[i] = rank * 7919 + (int)i;
    int *s = dcopy(h, nint * sizeof(int));
    int *r = dalloc(nint * sizeof(int), 0x22);
    MPI_Request q[2];
    long before = cu.sync_copies();
    if (cu.take_max_staged) cu.take_max_staged();
    MPI_Irecv(r, 1, v, prev, 13, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(s, 1, v, next, 13, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    long after = cu.sync_copies();
    CHECK(after == before, "vector %d x %d / %d with Isend/Irecv: %ld copies waited for the device in the calls", count, blk, stride, after - before);
    /* Above the eager limit, to a rank of this node with CUDA IPC: packed on
     * the device, unpacked from the mapped copy on the device; nothing
     * crosses between host and device. */
    const char *ipc = getenv("OXMPI_CUDA_IPC"), *ucx = getenv("OXMPI_TEST_UCX"), *noipc = getenv("CUDA_DOUBLE_NO_IPC");
    int by_ipc = !(ipc && !strcmp(ipc, "0")) && !(ucx && !strcmp(ucx, "1")) && !(noipc && *noipc) && !getenv("OXMPI_TEST_RANKS_PER_NODE");
    long packed = (long)count * blk * (long)sizeof(int);
    if (cu.take_max_staged && by_ipc && packed > 32768) {
        MPI_Barrier(MPI_COMM_WORLD);
        long m = cu.take_max_staged();
        CHECK(m == 0, "vector %d x %d / %d by CUDA IPC: a host<->device copy of %ld bytes", count, blk, stride, m);
    }
    int *g = hcopy(r, nint * sizeof(int));
    for (long i = 0; i < nint; i++) {
        int want = (i % stride) < blk ? prev * 7919 + (int)i : 0x22222222;
        CHECK(g[i] == want, "vector %d x %d / %d with Isend/Irecv: int %ld is %d, not %d", count, blk, stride, i, g[i], want);
    }
    free(g);
    free(h);
    dfree(s);
    dfree(r);
    MPI_Type_free(&v);
}

/* With GPU_TEST_UCX_DEVICE=1 (the job runs every other rank through UCX,
 * taken as reporting CUDA memory, over the test double's CPU-visible
 * device memory): contiguous device buffers above UCX's eager limit go to
 * UCX as they are, so the driver makes no copy on either side, whichever
 * side is device memory; smaller ones and a device vector are staged. */
static void ucx_device_whole(void) {
    if (!getenv("GPU_TEST_UCX_DEVICE") || !cu.copies || size == 1) return;
    long sizes[] = {300000, 5 << 20};
    const char *kinds[] = {"dd", "dh", "hd"};
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 3; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            long before = cu.copies();
            ring(sizes[i], 40 + k, kinds[k][0], kinds[k][1]);
            long made = cu.copies() - before;
            /* ring() itself copies the pattern in (device send) and out
             * (device receive) with the driver: one copy each. */
            long own = (kinds[k][0] == 'd') + (kinds[k][1] == 'd');
            CHECK(made == own, "%s %ld bytes over UCX: the library made %ld driver copies, not 0", kinds[k], sizes[i], made - own);
        }
    }
    /* Ssend completes only when the receiver has the data. */
    long n = 1 << 20;
    unsigned char *h = malloc(n);
    fill(h, n, rank, 49);
    void *s = dcopy(h, n), *r = dalloc(n, 0);
    MPI_Request q;
    MPI_Irecv(r, (int)n, MPI_BYTE, prev, 49, MPI_COMM_WORLD, &q);
    long before = cu.copies();
    MPI_Ssend(s, (int)n, MPI_BYTE, next, 49, MPI_COMM_WORLD);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    CHECK(cu.copies() == before, "Ssend of 1 MiB over UCX: %ld driver copies", cu.copies() - before);
    unsigned char *g = hcopy(r, n);
    CHECK(verify(g, n, prev, 49) < 0, "Ssend of 1 MiB over UCX: wrong data");
    /* Small ones are staged (a copy at each side). */
    before = cu.copies();
    ring(1000, 50, 'd', 'd');
    CHECK(cu.copies() - before > 2, "1000 device bytes over UCX were not staged");
    free(g);
    free(h);
    dfree(s);
    dfree(r);
}

static void pack_and_reduce_local(void) {
    /* MPI_Pack from a device vector into a host buffer and into a device
     * buffer; MPI_Unpack back into device memory. */
    MPI_Datatype v;
    MPI_Type_vector(64, 2, 5, MPI_INT, &v);
    MPI_Type_commit(&v);
    int h[320], pk[128], g[320];
    for (int i = 0; i < 320; i++) h[i] = i * 7 + rank;
    int *d = dcopy(h, sizeof h);
    int pos = 0;
    MPI_Pack(d, 1, v, pk, sizeof pk, &pos, MPI_COMM_WORLD);
    CHECK(pos == (int)sizeof pk, "pack position %d", pos);
    for (int i = 0; i < 128; i++) CHECK(pk[i] == h[(i / 2) * 5 + i % 2], "pack from device: element %d", i);
    void *dp = dalloc(sizeof pk, 0);
    pos = 0;
    MPI_Pack(d, 1, v, dp, sizeof pk, &pos, MPI_COMM_WORLD);
    int *back = hcopy(dp, sizeof pk);
    CHECK(memcmp(back, pk, sizeof pk) == 0, "pack into device memory");
    free(back);
    int *d2 = dalloc(sizeof h, 0);
    pos = 0;
    MPI_Unpack(dp, sizeof pk, &pos, d2, 1, v, MPI_COMM_WORLD);
    from_dev(g, d2, sizeof g);
    for (int i = 0; i < 320; i++)
        CHECK(g[i] == (i % 5 < 2 ? h[i] : 0), "unpack into device: element %d", i);
    /* Reduce_local: device with device, host with device, a derived type. */
    double a[100], b[100], r[100];
    for (int i = 0; i < 100; i++) { a[i] = i; b[i] = 2 * i + rank; }
    double *da = dcopy(a, sizeof a), *db = dcopy(b, sizeof b);
    MPI_Reduce_local(da, db, 100, MPI_DOUBLE, MPI_SUM);
    from_dev(r, db, sizeof r);
    for (int i = 0; i < 100; i++) CHECK(r[i] == 3 * i + rank, "reduce_local sum %d: %g", i, r[i]);
    MPI_Reduce_local(a, db, 100, MPI_DOUBLE, MPI_MAX);
    from_dev(r, db, sizeof r);
    for (int i = 0; i < 100; i++) CHECK(r[i] == 3 * i + rank, "reduce_local max host->device %d", i);
    int *di = dcopy(h, sizeof h), *dj = dcopy(h, sizeof h);
    MPI_Reduce_local(di, dj, 1, v, MPI_PROD);
    from_dev(g, dj, sizeof g);
    for (int i = 0; i < 320; i++)
        CHECK(g[i] == (i % 5 < 2 ? h[i] * h[i] : h[i]), "reduce_local on a device vector: %d", i);
    /* A count that overruns the device allocation: an MPI error (the
     * failed CUDA copy's class), not a crash. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char big[4096];
    pos = 0;
    int rc = MPI_Pack(dp, (int)sizeof pk + 1000, MPI_BYTE, big, sizeof big, &pos, MPI_COMM_WORLD);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_OTHER, "overrun device pack: rc %d class %d", rc, cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    dfree(da); dfree(db); dfree(di); dfree(dj); dfree(d); dfree(d2); dfree(dp);
    MPI_Type_free(&v);
}

/* An address freed and allocated again carries the new allocation's data. */
static void reuse_after_free(long n) {
    unsigned char *h = malloc(n);
    for (int round = 0; round < 4; round++) {
        fill(h, n, rank, 20 + round);
        void *s = dcopy(h, n), *r = dalloc(n, 0);
        MPI_Sendrecv(s, (int)n, MPI_BYTE, next, 20, r, (int)n, MPI_BYTE, prev, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        unsigned char *g = hcopy(r, n);
        CHECK(verify(g, n, prev, 20 + round) < 0, "reuse round %d", round);
        free(g);
        dfree(s);
        dfree(r);
    }
    free(h);
}

static void other_memory(long n) {
    /* Managed memory (CPU-accessible) and pinned host memory. */
    devptr m;
    CHECK(cu.alloc_managed(&m, n, 1) == 0, "cuMemAllocManaged");
    void *pin;
    CHECK(cu.alloc_host(&pin, n) == 0, "cuMemAllocHost");
    fill((unsigned char *)(uintptr_t)m, n, rank, 30);
    MPI_Sendrecv((void *)(uintptr_t)m, (int)n, MPI_BYTE, next, 30, pin, (int)n, MPI_BYTE, prev, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(verify(pin, n, prev, 30) < 0, "managed to pinned");
    cu.free(m);
    cu.free_host(pin);
}

/* The library stages device data through pinned host memory: its
 * asynchronous copies never use pageable memory, with which the driver's
 * copy waits for the device inside the call (the test double counts such
 * copies). A receive from a host sender into a device buffer lands in a
 * staging area; a send from a device buffer to a host receiver is staged
 * by the sender where CUDA IPC is off (with IPC the receiver copies from
 * the sender's buffer into its own, pageable, host buffer). */
static void pinned_staging(void) {
    if (!cu.pageable_async) return;
    const char *ipc = getenv("OXMPI_CUDA_IPC");
    int ipc_off = ipc && !strcmp(ipc, "0");
    long sizes[] = {8, 40000, 300000, 3 << 20};
    for (int i = 0; i < 4; i++) {
        long before = cu.pageable_async();
        ring(sizes[i], 60 + i, 'h', 'd');
        long after = cu.pageable_async();
        CHECK(after == before, "host to device, %ld bytes: %ld asynchronous copies with pageable memory", sizes[i], after - before);
        if (ipc_off || size == 1) {
            before = cu.pageable_async();
            ring(sizes[i], 70 + i, 'd', 'h');
            after = cu.pageable_async();
            CHECK(after == before, "device to host, %ld bytes: %ld asynchronous copies with pageable memory", sizes[i], after - before);
        }
    }
}

/* A large contiguous device message staged through host memory (to a rank
 * over UCX, or on this node without CUDA IPC) moves through the library's
 * pipeline: no copy between host and device is longer than one chunk
 * (OXMPI_GPU_PIPELINE_CHUNK), none uses pageable memory (80 MiB is above
 * the longest staging area the library pins whole), and the data arrive
 * whole. A host sender's message to a device receiver on this node is
 * copied to the device a chunk at a time too; by CUDA IPC nothing is
 * staged. */
static void pipelined(void) {
    /* Not staged at all where UCX takes device memory (ucx_device_whole). */
    if (!cu.take_max_staged || size == 1 || getenv("GPU_TEST_UCX_DEVICE")) return;
    const char *ipc = getenv("OXMPI_CUDA_IPC"), *ucx = getenv("OXMPI_TEST_UCX");
    const char *noipc = getenv("CUDA_DOUBLE_NO_IPC"), *c = getenv("OXMPI_GPU_PIPELINE_CHUNK");
    int over_ucx = ucx && !strcmp(ucx, "1");
    int staged = over_ucx || (ipc && !strcmp(ipc, "0")) || (noipc && *noipc);
    long chunk = c ? atol(c) : 524288;
    long sizes[] = {(12L << 20) + 5, 80L << 20};
    for (int i = 0; i < 2; i++) {
        long n = sizes[i], m, before = cu.pageable_async();
        cu.take_max_staged();
        ring(n, 80 + i, 'd', 'd');
        m = cu.take_max_staged();
        if (staged)
            CHECK(m > 0 && m <= chunk, "device to device, %ld bytes staged: a copy of %ld bytes (chunk %ld)", n, m, chunk);
        else
            CHECK(m == 0, "device to device, %ld bytes by CUDA IPC: a staged copy of %ld bytes", n, m);
        if (!over_ucx) {
            ring(n, 82 + i, 'h', 'd');
            m = cu.take_max_staged();
            CHECK(m > 0 && m <= chunk, "host to device, %ld bytes: a copy of %ld bytes (chunk %ld)", n, m, chunk);
        }
        if (staged) {
            ring(n, 84 + i, 'd', 'h');
            m = cu.take_max_staged();
            CHECK(m > 0 && m <= chunk, "device to host, %ld bytes: a copy of %ld bytes (chunk %ld)", n, m, chunk);
        }
        long after = cu.pageable_async();
        CHECK(after == before, "%ld bytes through the pipeline: %ld asynchronous copies with pageable memory", n, after - before);
    }
}

static void partitioned_and_isendrecv(void) {
    /* Partitioned: device partitions to the next rank (4 of 1000 ints),
     * received as 2 device partitions from the previous one. */
    int n = 4000, *h = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) h[i] = rank * 100000 + i;
    void *sd = dcopy(h, n * sizeof(int)), *rd = dalloc(n * sizeof(int), 0xff);
    MPI_Request rs[2];
    MPI_Psend_init(sd, 4, 1000, MPI_INT, next, 40, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[0]);
    MPI_Precv_init(rd, 2, 2000, MPI_INT, prev, 40, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[1]);
    MPI_Startall(2, rs);
    for (int p = 3; p >= 0; p--) MPI_Pready(p, rs[0]);
    MPI_Waitall(2, rs, MPI_STATUSES_IGNORE);
    int *g = hcopy(rd, n * sizeof(int));
    for (int i = 0; i < n; i++) CHECK(g[i] == prev * 100000 + i, "partitioned device: [%d]=%d", i, g[i]);
    free(g);
    MPI_Request_free(&rs[0]);
    MPI_Request_free(&rs[1]);
    /* MPI_Isendrecv and MPI_Isendrecv_replace on device buffers. */
    MPI_Request q;
    MPI_Isendrecv(sd, n, MPI_INT, next, 41, rd, n, MPI_INT, prev, 41, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    g = hcopy(rd, n * sizeof(int));
    for (int i = 0; i < n; i++) CHECK(g[i] == prev * 100000 + i, "isendrecv device: [%d]=%d", i, g[i]);
    free(g);
    MPI_Isendrecv_replace(sd, n, MPI_INT, next, 42, prev, 42, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    g = hcopy(sd, n * sizeof(int));
    for (int i = 0; i < n; i++) CHECK(g[i] == prev * 100000 + i, "isendrecv_replace device: [%d]=%d", i, g[i]);
    free(g);
    dfree(sd);
    dfree(rd);
    free(h);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    test_rank = rank;
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;
    GPU_OR_SKIP(rank);
    CHECK(MPIX_Query_cuda_support() == 1, "MPIX_Query_cuda_support");
    int flag = -1;
    MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &flag);
    CHECK(flag == 1, "MPIX_GPU_query_support(CUDA) = %d", flag);
    MPIX_GPU_query_support(MPIX_GPU_SUPPORT_HIP, &flag);
    CHECK(flag == 0, "MPIX_GPU_query_support(HIP) = %d", flag);
    MPI_Info info;
    MPI_Comm_get_info(MPI_COMM_WORLD, &info);
    char val[256];
    int found = 0;
    MPI_Info_get(info, "mpi_memory_alloc_kinds", sizeof val - 1, val, &found);
    CHECK(found && strstr(val, "cuda:device"), "mpi_memory_alloc_kinds = %s", found ? val : "(none)");
    MPI_Info_free(&info);

    long sizes[] = {0, 8, 1000, 40000, 300000, 5 << 20};
    for (int i = 0; i < 6; i++) {
        ring(sizes[i], 1 + i, 'd', 'd');
        ring(sizes[i], 1 + i, 'h', 'd');
        ring(sizes[i], 1 + i, 'd', 'h');
    }
    short_device();
    shared_gpu();
    long msizes[] = {8, 40000, 300000};
    for (int i = 0; i < 3; i++) {
        modes(msizes[i]);
        probe_and_persistent(msizes[i]);
    }
    vector(10, 3, 7);
    vector(20000, 4, 9);
    /* Above OXMPI_PACK_STREAM (4 MiB): packed and unpacked cell by cell. */
    vector(300000, 4, 9);
    vector_nonblocking(10, 3, 7);
    vector_nonblocking(20000, 4, 9);
    vector_nonblocking(300000, 4, 9);
    ucx_device_whole();
    pack_and_reduce_local();
    reuse_after_free(100000);
    other_memory(70000);
    pinned_staging();
    pipelined();
    partitioned_and_isendrecv();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("gpu_p2p ok\n");
    MPI_Finalize();
    return 0;
}
