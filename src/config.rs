//! Every tunable of OxMPI, read from the environment in one table.
//!
//! `mpirun --tunables` prints the table (name, default, meaning), then the
//! collectives' algorithm variables from `coll::select`'s tables. Owns nothing
//! but the parsed values; read once at MPI_Init.

/// (environment variable, default, meaning)
pub const TUNABLES: &[(&str, &str, &str)] = &[
    ("OXMPI_EAGER_LIMIT", "32768", "largest message (bytes) sent eagerly through shared-memory cells; larger ones use rendezvous"),
    ("OXMPI_CMA", "1", "1: large messages are single-copy with process_vm_readv; 0: pipelined copy through shared cells"),
    ("OXMPI_CMA_SPLIT", "65536", "contiguous messages at least this long (bytes) are copied by receiver and sender together, in chunks each claims; 0: the receiver copies alone"),
    ("OXMPI_PACK_STREAM", "4194304", "non-contiguous point-to-point messages larger than this (bytes) are packed and unpacked a cell or a chunk at a time as they move, in bounded memory, instead of through a copy of the whole message"),
    ("OXMPI_LOOPBACK", "0", "1: a rank's messages to itself go through the in-process loopback link with the full protocol (eager, rendezvous, single copy) instead of being delivered in place; for testing the protocols without a second rank (a blocking send to itself above the eager limit then needs its receive posted first)"),
    ("OXMPI_RING_CELLS", "64", "cells per sender-receiver ring in the shared segment"),
    ("OXMPI_CELL_BYTES", "0", "payload bytes per cell (each cell also has a 64-byte header); 0: 8192 with up to 8 ranks on the node, 4096 above (ring memory grows with the square of the local ranks)"),
    ("OXMPI_SPIN_US", "50", "microseconds a waiting rank polls before yielding (OXMPI_OVERSUB_SPIN_US when ranks outnumber cores)"),
    ("OXMPI_OVERSUB_SPIN_US", "10", "most microseconds a waiting rank polls before yielding when ranks outnumber cores (the spin adapts between 0.5 and this)"),
    ("OXMPI_YIELD_US", "5000", "microseconds a waiting rank polls with sched_yield before sleeping"),
    ("OXMPI_SLEEP_MAX_US", "1000", "longest sleep between polls of a rank that has waited past its yield phase"),
    ("OXMPI_ALLGATHER_PUSH", "auto", "largest block (bytes) the single-copy allgather writes into the other ranks' buffers (process_vm_writev) instead of reading theirs; auto: any with a core per rank, 0 (none) when ranks outnumber cores"),
    ("OXMPI_COPY_NT", "1048576", "smallest local copy (bytes) made with non-temporal stores, which skip reading the destination into the cache (a copy this large leaves the cache anyway)"),
    ("OXMPI_ALLGATHER_FUSE", "auto", "largest block (bytes) the writing single-copy allgather sends whole; above it in 256 KiB pieces, each copied into the rank's own output and then, still in cache, into the others'; auto: the block at which n * (n + 1) blocks fill the last-level cache"),
    ("OXMPI_COPY_BACKWARD", "auto", "local copies whose destination lies 1-31 bytes past the source modulo 4096 run backwards: 1 always, 0 never, auto when a probe at the first such copy finds memcpy slow there"),
    ("OXMPI_CMA_BOUNCE", "auto", "CMA copies whose destination lies 1-31 bytes past the source modulo 4096 go through a bounce buffer at the remote page offset: 1 always, 0 never, auto when a probe at the first CMA copy finds the kernel's copy slow there"),
    ("OXMPI_SIMD", "auto", "vector width of the reduction kernels (collectives, accumulates, MPI_Reduce_local): auto (the widest the CPU has), avx512, avx2, or none (the baseline x86-64's SSE2)"),
    ("OXMPI_DEBUG", "", "set: print why a fallback was taken (CMA refused, a failed single copy) to stderr"),
    ("OXMPI_CHECK", "0", "1: every collective first checks across its ranks that they make the same collective with the same root, op and type signatures and counts (an allgather of a small description; on an intercommunicator across both groups; a persistent collective at its initialisation), and reports a mismatch as an error naming the ranks and arguments instead of hanging"),
    ("OXMPI_CHECK_BUFFERS", "0", "1: the send buffer of every nonblocking send (MPI_Isend, MPI_Issend, MPI_Irsend, MPI_Ibsend) is checksummed when the send starts and again when a Wait or Test call completes it; a buffer changed in between is an MPI_ERR_BUFFER error naming the send"),
    ("OXMPI_HANG_REPORT", "", "mpirun: seconds; the ranks are asked where they wait every half of it, and the hang report (each rank's wait, the wait-for graph, its cycles) is printed once every running rank has waited in MPI that long"),
    ("OXMPI_PROFILE", "", "1: rank 0 prints a profile of the MPI calls at MPI_Finalize (per function: calls, time, bytes sent, waiting, per-rank spread; the heaviest pairs of ranks); a file name: also writes it there as JSON (mpirun --profile[=FILE])"),
    ("OXMPI_TIMEOUT", "", "mpirun: seconds before the job is killed, as --timeout (exit 124)"),
    ("OXMPI_NODE_CPUS", "", "set by mpirun for each rank: the CPUs of the node, which decides whether waiting ranks spin first and which node-area collective forms run when ranks outnumber CPUs (unset: the CPUs online)"),
    ("OXMPI_JOB", "", "set by mpirun for each rank: the job's name"),
    ("OXMPI_TEST_UCX", "0", "tests: 1 makes every other rank count as on another host, so all traffic between ranks goes through the UCX link (with UCX_TLS=tcp UCX_NET_DEVICES=lo on one machine)"),
    ("OXMPI_UCX_EAGER_LIMIT", "131072", "largest message (bytes) sent eagerly to a rank on another host (as UCX active messages of up to 64 KiB); larger ones use rendezvous"),
    ("OXMPI_UCX_RNDV", "1", "1: messages above the eager limit to ranks on other hosts go by UCX's active-message rendezvous, straight from the send buffer into the receive buffer; 0: a CTS answered by 64 KiB fragments, each copied on both sides (for comparison)"),
    ("OXMPI_UCX_CUDA", "1", "1: where UCX reports CUDA memory (UCP_ATTR_FIELD_MEMORY_TYPES), contiguous device buffers above OXMPI_UCX_EAGER_LIMIT go to and from ranks on other hosts as they are, by UCX's rendezvous; 0: always staged through host memory (as with a UCX built without CUDA)"),
    ("OXMPI_TEST_UCX_CUDA", "0", "tests: 1 takes UCX as reporting CUDA memory whatever it says (only for the test double of the driver with CUDA_DOUBLE_VISIBLE=1, whose device memory the CPU can read)"),
    ("OXMPI_RMA_AM", "auto", "one-sided puts and gets to ranks on other hosts: 1 as active messages the target's process applies (a put returns at once, its flush waits for the answers), 0 as UCX's RMA (ucp_put_nbx/ucp_get_nbx on registered memory); auto: 1 where UCX has no RDMA transport (UCX_TLS names none, or, unset, the host has no InfiniBand/RoCE device), since UCX emulates its RMA over messages there"),
    ("OXMPI_NET_LATENCY_US", "7", "collectives across nodes: the inter-node link's latency per message (µs) in the cost models that choose their algorithms (the default is TCP between the test's pretend hosts)"),
    ("OXMPI_NET_BANDWIDTH", "2500", "collectives across nodes: the inter-node link's bandwidth (MB/s) in the same cost models"),
    ("OXMPI_UCX_LIB", "libucp.so.0", "the UCX library the inter-node link opens (a soname found by the dynamic loader, or a path)"),
    ("OXMPI_CUDA", "auto", "device buffers: auto opens the CUDA driver at the first buffer an MPI call is given, if there is one (nothing CUDA happens without a driver); 1 requires it (MPI_Init fails without a usable driver); 0 never opens it (every buffer is host memory)"),
    ("OXMPI_CUDA_LIB", "libcuda.so.1", "the CUDA driver library opened for device buffers (a soname found by the dynamic loader, or a path)"),
    ("OXMPI_CUDA_IPC", "1", "1: contiguous device buffers above the eager limit go to ranks of this node by CUDA IPC (the receiver maps the sender's allocation and copies out of it); 0: staged through host memory"),
    ("OXMPI_CUDA_IPC_SHARED_MIN", "262144", "device messages to a rank of this node whose GPU is this rank's own and runs without MPS (CU_DEVICE_ATTRIBUTE_MPS_ENABLED = 0) go by CUDA IPC only from this many bytes: below it they are staged through host memory, since each IPC copy then waits for a switch of the GPU between the two processes' contexts (about 150 µs on an H200, where staging 64 KiB takes 31 µs); likewise the single-copy collectives between device ranks on such a GPU, by the bytes of each IPC copy (docs/gpu.md); 0: always IPC"),
    ("OXMPI_CUDA_IPC_CACHE", "64", "CUDA IPC mappings a receiver keeps open, by (peer, buffer id); the least recently used one is closed when a new one is needed"),
    ("OXMPI_GPU_PIPELINE", "1048576", "contiguous device buffers longer than this (bytes) that are staged through host memory (to ranks on other hosts, or on this node without CUDA IPC) move through pinned host slots a chunk at a time, the driver's copies overlapping the transfer; 0: every staged device message"),
    ("OXMPI_GPU_MEMOP_MAX", "64", "received device messages of at most this many bytes (whole aligned 4- or 8-byte words, 16 at most) are written into device memory by the driver's stream memory operations instead of a copy: ranks sharing a GPU without MPS then avoid a switch of the GPU's context per message; 0: always copies"),
    ("OXMPI_GPU_PIPELINE_CHUNK", "524288", "bytes per chunk of the device pipeline (OXMPI_GPU_PIPELINE); four chunks per message are in flight at most"),
    ("OXMPI_NVRTC_LIB", "libnvrtc.so.13, then libnvrtc.so.12", "the NVRTC library that compiles the reduction kernels for device buffers at run time (a soname or a path; without it those reductions run on host copies)"),
    ("OXMPI_TEST_RANKS_PER_NODE", "0", "tests: pretend world ranks [0,k), [k,2k), ... are separate nodes, so the hierarchical collectives run on one host (0: off)"),
];

/// OXMPI_PACK_STREAM, read once (the datatype layer stages messages before
/// the state is entered).
pub fn pack_stream() -> usize {
    static V: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *V.get_or_init(|| get("OXMPI_PACK_STREAM") as usize)
}

/// OXMPI_GPU_MEMOP_MAX, read once.
pub fn gpu_memop_max() -> usize {
    static V: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *V.get_or_init(|| get("OXMPI_GPU_MEMOP_MAX") as usize)
}

/// OXMPI_CUDA_IPC_SHARED_MIN, read once.
pub fn cuda_ipc_shared_min() -> usize {
    static V: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *V.get_or_init(|| get("OXMPI_CUDA_IPC_SHARED_MIN") as usize)
}

/// (OXMPI_GPU_PIPELINE, OXMPI_GPU_PIPELINE_CHUNK), read once (receives
/// are staged before the state is entered); the chunk is at least 4 KiB.
pub fn gpu_pipeline() -> (usize, usize) {
    static V: std::sync::OnceLock<(usize, usize)> = std::sync::OnceLock::new();
    *V.get_or_init(|| {
        (
            get("OXMPI_GPU_PIPELINE") as usize,
            (get("OXMPI_GPU_PIPELINE_CHUNK") as usize).max(4096),
        )
    })
}

/// (OXMPI_NET_LATENCY_US, OXMPI_NET_BANDWIDTH): the inter-node link as the
/// collectives' cost models weigh it, in µs and bytes per µs.
pub fn net_cost() -> (f64, f64) {
    let f = |name: &str| {
        let d = TUNABLES.iter().find(|t| t.0 == name).map_or("0", |t| t.1);
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v > 0.0)
            .unwrap_or_else(|| d.parse().unwrap_or(1.0))
    };
    (f("OXMPI_NET_LATENCY_US"), f("OXMPI_NET_BANDWIDTH"))
}

/// A string tunable; None when unset or "auto".
pub fn get_str(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty() && v != "auto")
}

#[derive(Clone, Debug)]
pub struct Config {
    pub eager_limit: usize,
    pub cma: bool,
    pub cma_split: usize,
    /// Self traffic through the loopback link (`transport::loopback`).
    pub loopback: bool,
    /// Every other rank through the UCX link (OXMPI_TEST_UCX).
    pub test_ucx: bool,
    /// Eager limit to ranks on other hosts (OXMPI_UCX_EAGER_LIMIT).
    pub ucx_eager_limit: usize,
    /// Large messages over UCX by its rendezvous (OXMPI_UCX_RNDV).
    pub ucx_rndv: bool,
    /// Device buffers to UCX as they are where it reports CUDA memory
    /// (OXMPI_UCX_CUDA), or always, for tests (OXMPI_TEST_UCX_CUDA).
    pub ucx_cuda: bool,
    pub test_ucx_cuda: bool,
    pub ring_cells: usize,
    /// Payload bytes per ring cell; 0: chosen by the number of local ranks.
    pub cell_bytes: usize,
    pub spin_us: u64,
    pub oversub_spin_us: u64,
    pub yield_us: u64,
    pub sleep_max_us: u64,
}

fn get(name: &str) -> u64 {
    let default = TUNABLES
        .iter()
        .find(|t| t.0 == name)
        .map(|t| t.1)
        .unwrap_or("0");
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| default.parse().unwrap_or(0))
}

impl Config {
    pub fn from_env() -> Config {
        let cell = match get("OXMPI_CELL_BYTES") as usize {
            0 => 0,
            n => n.clamp(256, 1 << 20) & !63,
        };
        Config {
            eager_limit: get("OXMPI_EAGER_LIMIT") as usize,
            cma: get("OXMPI_CMA") != 0,
            cma_split: match get("OXMPI_CMA_SPLIT") as usize {
                0 => usize::MAX,
                n => n,
            },
            loopback: get("OXMPI_LOOPBACK") != 0,
            test_ucx: get("OXMPI_TEST_UCX") != 0,
            ucx_rndv: get("OXMPI_UCX_RNDV") != 0,
            ucx_cuda: get("OXMPI_UCX_CUDA") != 0,
            test_ucx_cuda: get("OXMPI_TEST_UCX_CUDA") != 0,
            ucx_eager_limit: get("OXMPI_UCX_EAGER_LIMIT") as usize,
            // A power of two, so a cell index is a mask, not a division.
            ring_cells: (get("OXMPI_RING_CELLS") as usize)
                .clamp(4, 1 << 16)
                .next_power_of_two(),
            cell_bytes: cell,
            spin_us: get("OXMPI_SPIN_US"),
            oversub_spin_us: get("OXMPI_OVERSUB_SPIN_US"),
            yield_us: get("OXMPI_YIELD_US"),
            sleep_max_us: get("OXMPI_SLEEP_MAX_US").max(1),
        }
    }
}

/// Prints the table, and after it `more` rows (the collectives'
/// algorithm variables, from `coll::select`).
pub fn print_table(more: &[(String, String, String)]) {
    println!("{:<22} {:>8}  meaning", "variable", "default");
    let rows = TUNABLES.iter().map(|&(n, d, m)| (n, d, m)).chain(
        more.iter()
            .map(|(n, d, m)| (n.as_str(), d.as_str(), m.as_str())),
    );
    for (n, d, m) in rows {
        let cur = std::env::var(n)
            .map(|v| format!(" (set: {v})"))
            .unwrap_or_default();
        println!("{n:<22} {d:>8}  {m}{cur}");
    }
}
