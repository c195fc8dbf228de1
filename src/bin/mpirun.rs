//! `mpirun` / `mpiexec`: starts N ranks on this host and serves them PMI-1.
//!
//! Owns the job: spawns the ranks in one process group, answers their PMI
//! requests (key-value store, barrier), forwards output (optionally prefixed
//! with the rank), stdin to rank 0 and SIGINT/SIGTERM to every rank, and tears
//! the whole job down within 2 s when a rank dies before MPI_Finalize or calls
//! MPI_Abort. Exit status: the first non-zero exit code of a rank (128+signal
//! for a rank killed by a signal, the MPI_Abort code, 124 on --timeout).

use oxmpi::bootstrap::wire::{self, Msg};
use std::collections::HashMap;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNALLED.store(sig, Ordering::Relaxed);
}

struct Opts {
    n: usize,
    env: Vec<(String, String)>,
    timeout: Option<f64>,
    tag: bool,
    /// Pin each rank to one CPU (`--bind-to core`, the default; see
    /// `cpu_of`) or not (`--bind-to none`).
    bind: Option<bool>,
    prog: Vec<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: mpirun -n N [-x VAR[=VAL]]... [-genv VAR VAL]... [--timeout SECONDS] [--tag-output|-l] [--bind-to core|none] program [args...]\n       mpirun --tunables    print OxMPI's tunables"
    );
    std::process::exit(2);
}

fn parse_args() -> Opts {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut o = Opts {
        n: 1,
        env: Vec::new(),
        timeout: None,
        tag: false,
        bind: None,
        prog: Vec::new(),
    };
    let mut i = 0;
    let need = |i: usize| -> String { args.get(i + 1).cloned().unwrap_or_else(|| usage()) };
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-n" | "-np" | "--n" | "--np" | "-c" => {
                o.n = need(i).parse().unwrap_or_else(|_| usage());
                i += 2;
            }
            "-x" => {
                let v = need(i);
                match v.split_once('=') {
                    Some((k, val)) => o.env.push((k.into(), val.into())),
                    None => o
                        .env
                        .push((v.clone(), std::env::var(&v).unwrap_or_default())),
                }
                i += 2;
            }
            "-genv" | "-env" => {
                let k = need(i);
                let v = args.get(i + 2).cloned().unwrap_or_else(|| usage());
                o.env.push((k, v));
                i += 3;
            }
            "--timeout" | "-timeout" => {
                o.timeout = Some(need(i).parse().unwrap_or_else(|_| usage()));
                i += 2;
            }
            "--tag-output" | "-l" | "-prepend-rank" => {
                o.tag = true;
                i += 1;
            }
            "--oversubscribe" => i += 1,
            "--bind-to" | "-bind-to" => {
                o.bind = match need(i).as_str() {
                    "none" => Some(false),
                    "core" | "hwthread" | "cpu" => Some(true),
                    _ => usage(),
                };
                i += 2;
            }
            "--tunables" => {
                oxmpi::config::print_table();
                std::process::exit(0);
            }
            "-V" | "--version" => {
                println!("OxMPI mpirun {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            "-h" | "--help" => usage(),
            _ if a.starts_with('-') && o.prog.is_empty() => {
                eprintln!("mpirun: unknown option {a}");
                usage();
            }
            _ => {
                o.prog = args[i..].to_vec();
                break;
            }
        }
    }
    if o.prog.is_empty() || o.n == 0 {
        usage();
    }
    if let Ok(t) = std::env::var("OXMPI_TIMEOUT") {
        if o.timeout.is_none() {
            o.timeout = t.parse().ok();
        }
    }
    o
}

#[derive(PartialEq)]
enum RankState {
    Running,
    Finalized,
    Exited,
}

struct Rank {
    pid: i32,
    pmi: Option<OwnedFd>,
    rbuf: Vec<u8>,
    state: RankState,
    in_barrier: bool,
    out: Option<OwnedFd>,
    err: Option<OwnedFd>,
    obuf: Vec<u8>,
    ebuf: Vec<u8>,
}

fn socketpair() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid 2-element array.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        eprintln!("mpirun: socketpair: {}", std::io::Error::last_os_error());
        std::process::exit(1);
    }
    // SAFETY: both fds were just created and are owned by us.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

fn write_line(fd: &OwnedFd, m: &Msg) {
    let s = m.encode();
    // SAFETY: writing a buffer we own to an open socket.
    unsafe { libc::write(fd.as_raw_fd(), s.as_ptr() as *const libc::c_void, s.len()) };
}

fn kill_group(pgid: i32, sig: i32) {
    if pgid > 0 {
        // SAFETY: signalling our own job's process group.
        unsafe { libc::kill(-pgid, sig) };
    }
}

fn cleanup_shm(kvs: &str) {
    let prefix = format!("oxmpi-{kvs}-");
    if let Ok(d) = std::fs::read_dir("/dev/shm") {
        for e in d.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

fn forward(buf: &mut Vec<u8>, data: &[u8], rank: usize, tag: bool, to_err: bool, flush_all: bool) {
    buf.extend_from_slice(data);
    let mut w: Box<dyn Write> = if to_err {
        Box::new(std::io::stderr().lock())
    } else {
        Box::new(std::io::stdout().lock())
    };
    while let Some(i) = buf.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = buf.drain(..=i).collect();
        if tag {
            let _ = write!(w, "[{rank}] ");
        }
        let _ = w.write_all(&line);
    }
    if flush_all && !buf.is_empty() {
        if tag {
            let _ = write!(w, "[{rank}] ");
        }
        let _ = w.write_all(buf);
        let _ = w.write_all(b"\n");
        buf.clear();
    }
    let _ = w.flush();
}

fn main() {
    let o = parse_args();
    let n = o.n;
    // SAFETY: installing async-signal-safe handlers that only store an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGHUP, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let mut seed = [0u8; 4];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut seed);
    }
    let kvs = format!("oxmpi_{}_{}", std::process::id(), u32::from_le_bytes(seed));
    let start = Instant::now();
    let mut ranks: Vec<Rank> = Vec::with_capacity(n);
    let mut pgid = 0i32;
    let mut exit_code: Option<i32> = None;
    let mut failure: Option<String> = None;

    // CPUs to pin ranks to (`cpu_of`), unless `--bind-to none`.
    let allowed = allowed_cpus();
    // Ranks pinned to one CPU each still need to know the node's CPU count.
    let ncpus = allowed.len().max(1);
    let cpus = (o.bind != Some(false))
        .then_some(allowed)
        .filter(|c| !c.is_empty());
    for r in 0..n {
        let (parent, child) = socketpair();
        let child_fd: RawFd = child.as_raw_fd();
        let mut cmd = Command::new(&o.prog[0]);
        cmd.args(&o.prog[1..])
            .env("PMI_FD", child_fd.to_string())
            .env("PMI_RANK", r.to_string())
            .env("PMI_SIZE", n.to_string())
            .env("MPI_LOCALNRANKS", n.to_string())
            .env("MPI_LOCALRANKID", r.to_string())
            .env("OXMPI_JOB", &kvs)
            .env("OXMPI_NODE_CPUS", ncpus.to_string());
        for (k, v) in &o.env {
            cmd.env(k, v);
        }
        if r != 0 {
            cmd.stdin(Stdio::null());
        }
        if o.tag {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        let group = pgid;
        let cpu = cpus.as_ref().map(|c| c[cpu_of(r, n, c.len())]);
        // SAFETY: between fork and exec we only call async-signal-safe functions
        // (fcntl, setpgid, sched_setaffinity) on values computed before the fork.
        unsafe {
            cmd.pre_exec(move || {
                libc::fcntl(child_fd, libc::F_SETFD, 0);
                libc::setpgid(0, group);
                if let Some(c) = cpu {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(c, &mut set);
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                }
                Ok(())
            });
        }
        match cmd.spawn() {
            Ok(mut ch) => {
                let pid = ch.id() as i32;
                if pgid == 0 {
                    pgid = pid;
                }
                // SAFETY: also set from the parent to close the race with exec.
                unsafe { libc::setpgid(pid, pgid) };
                let out = ch.stdout.take().map(OwnedFd::from);
                let err = ch.stderr.take().map(OwnedFd::from);
                drop(child);
                ranks.push(Rank {
                    pid,
                    pmi: Some(parent),
                    rbuf: Vec::new(),
                    state: RankState::Running,
                    in_barrier: false,
                    out,
                    err,
                    obuf: Vec::new(),
                    ebuf: Vec::new(),
                });
                std::mem::forget(ch); // reaped with waitpid below
            }
            Err(e) => {
                eprintln!("mpirun: cannot start {}: {e}", o.prog[0]);
                kill_group(pgid, libc::SIGKILL);
                std::process::exit(if e.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                });
            }
        }
    }

    let mut kv: HashMap<String, String> = HashMap::new();
    let mut killing_since: Option<Instant> = None;
    let mut running = n;
    let mut buf = vec![0u8; 65536];
    while running > 0 {
        // Signals from the user: forward, then tear down.
        let sig = SIGNALLED.swap(0, Ordering::Relaxed);
        if sig != 0 {
            kill_group(pgid, sig);
            if killing_since.is_none() {
                failure.get_or_insert_with(|| {
                    format!("mpirun: received signal {sig}; forwarded it to the job")
                });
                exit_code.get_or_insert(128 + sig);
                killing_since = Some(Instant::now());
            }
        }
        if let (Some(t), None) = (o.timeout, killing_since) {
            if start.elapsed().as_secs_f64() > t {
                failure = Some(format!("mpirun: job timed out after {t} s; killing it"));
                exit_code = Some(124);
                kill_group(pgid, libc::SIGTERM);
                killing_since = Some(Instant::now());
            }
        }
        if let Some(since) = killing_since {
            if since.elapsed() > Duration::from_millis(1000) {
                kill_group(pgid, libc::SIGKILL);
            }
        }
        // Poll PMI sockets and output pipes.
        let mut pfds: Vec<libc::pollfd> = Vec::new();
        let mut who: Vec<(usize, u8)> = Vec::new();
        for (i, r) in ranks.iter().enumerate() {
            for (k, fd) in [(0u8, &r.pmi), (1, &r.out), (2, &r.err)] {
                if let Some(fd) = fd {
                    pfds.push(libc::pollfd {
                        fd: fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    });
                    who.push((i, k));
                }
            }
        }
        // SAFETY: pfds is a valid array of pollfd.
        unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, 20) };
        for (p, &(i, k)) in pfds.iter().zip(who.iter()) {
            if p.revents == 0 {
                continue;
            }
            let r = &mut ranks[i];
            let fd = match k {
                0 => r.pmi.as_ref(),
                1 => r.out.as_ref(),
                _ => r.err.as_ref(),
            }
            .unwrap()
            .as_raw_fd();
            // SAFETY: reading into our buffer from an open fd.
            let got = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
            if got <= 0 {
                match k {
                    0 => r.pmi = None,
                    1 => {
                        forward(&mut r.obuf, &[], i, o.tag, false, true);
                        r.out = None
                    }
                    _ => {
                        forward(&mut r.ebuf, &[], i, o.tag, true, true);
                        r.err = None
                    }
                }
                continue;
            }
            let data = &buf[..got as usize];
            match k {
                1 => forward(&mut r.obuf, data, i, o.tag, false, false),
                2 => forward(&mut r.ebuf, data, i, o.tag, true, false),
                _ => {
                    r.rbuf.extend_from_slice(data);
                    if r.rbuf.len() > 64 * wire::MAX_LINE {
                        r.rbuf.clear(); // a flood without newlines: drop it
                    }
                    while let Some(pos) = ranks[i].rbuf.iter().position(|&b| b == b'\n') {
                        let line: Vec<u8> = ranks[i].rbuf.drain(..=pos).collect();
                        let Ok(m) = wire::parse(&line) else { continue };
                        handle_pmi(
                            &mut ranks,
                            i,
                            &m,
                            &mut kv,
                            &kvs,
                            n,
                            &mut failure,
                            &mut exit_code,
                            &mut killing_since,
                            pgid,
                        );
                    }
                }
            }
        }
        // Reap exited ranks.
        loop {
            let mut status = 0;
            // SAFETY: waitpid on our own children.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
            let Some(i) = ranks.iter().position(|r| r.pid == pid) else {
                continue;
            };
            let finalized = ranks[i].state == RankState::Finalized;
            ranks[i].state = RankState::Exited;
            running -= 1;
            let (code, why) = if libc::WIFSIGNALED(status) {
                let s = libc::WTERMSIG(status);
                (128 + s, format!("was killed by signal {s}"))
            } else {
                let c = libc::WEXITSTATUS(status);
                (c, format!("exited with code {c}"))
            };
            if code != 0 && killing_since.is_none() {
                failure = Some(format!(
                    "mpirun: rank {i} (pid {pid}) {why}{}; killing the job",
                    if finalized {
                        " after MPI_Finalize"
                    } else {
                        " before MPI_Finalize"
                    }
                ));
                exit_code = Some(code);
                kill_group(pgid, libc::SIGTERM);
                killing_since = Some(Instant::now());
            } else if code != 0 {
                exit_code.get_or_insert(code);
            }
        }
    }
    for (i, r) in ranks.iter_mut().enumerate() {
        forward(&mut r.obuf, &[], i, o.tag, false, true);
        forward(&mut r.ebuf, &[], i, o.tag, true, true);
    }
    cleanup_shm(&kvs);
    if let Some(f) = failure {
        eprintln!("{f}");
    }
    std::process::exit(exit_code.unwrap_or(0));
}

#[allow(clippy::too_many_arguments)]
fn handle_pmi(
    ranks: &mut [Rank],
    i: usize,
    m: &Msg,
    kv: &mut HashMap<String, String>,
    kvs: &str,
    n: usize,
    failure: &mut Option<String>,
    exit_code: &mut Option<i32>,
    killing_since: &mut Option<Instant>,
    pgid: i32,
) {
    let reply = |ranks: &[Rank], i: usize, r: Msg| {
        if let Some(fd) = ranks[i].pmi.as_ref() {
            write_line(fd, &r);
        }
    };
    match m.cmd() {
        "init" => reply(
            ranks,
            i,
            Msg::new("response_to_init")
                .with("pmi_version", 1)
                .with("pmi_subversion", 1)
                .with("rc", 0),
        ),
        "get_maxes" => reply(
            ranks,
            i,
            Msg::new("maxes")
                .with("rc", 0)
                .with("kvsname_max", 256)
                .with("keylen_max", 64)
                .with("vallen_max", 1024),
        ),
        "get_appnum" => reply(ranks, i, Msg::new("appnum").with("rc", 0).with("appnum", 0)),
        "get_universe_size" => reply(
            ranks,
            i,
            Msg::new("universe_size").with("rc", 0).with("size", n),
        ),
        "get_my_kvsname" => reply(
            ranks,
            i,
            Msg::new("my_kvsname").with("rc", 0).with("kvsname", kvs),
        ),
        "put" => {
            if let (Some(k), Some(v)) = (m.get("key"), m.get("value")) {
                kv.insert(k.to_string(), v.to_string());
                reply(
                    ranks,
                    i,
                    Msg::new("put_result").with("rc", 0).with("msg", "success"),
                );
            } else {
                reply(
                    ranks,
                    i,
                    Msg::new("put_result")
                        .with("rc", -1)
                        .with("msg", "missing_key_or_value"),
                );
            }
        }
        "get" => {
            let k = m.get("key").unwrap_or("");
            let v = if k == "PMI_process_mapping" {
                Some(format!("(vector,(0,1,{n}))"))
            } else {
                kv.get(k).cloned()
            };
            match v {
                Some(v) => reply(
                    ranks,
                    i,
                    Msg::new("get_result")
                        .with("rc", 0)
                        .with("msg", "success")
                        .with("value", v),
                ),
                None => reply(
                    ranks,
                    i,
                    Msg::new("get_result")
                        .with("rc", -1)
                        .with("msg", format!("key_{k}_not_found"))
                        .with("value", "unknown"),
                ),
            }
        }
        "barrier_in" => {
            ranks[i].in_barrier = true;
            let live = ranks.iter().filter(|r| r.state != RankState::Exited);
            if live.clone().all(|r| r.in_barrier) {
                for j in 0..ranks.len() {
                    if ranks[j].in_barrier {
                        ranks[j].in_barrier = false;
                        reply(ranks, j, Msg::new("barrier_out").with("rc", 0));
                    }
                }
            }
        }
        "finalize" => {
            ranks[i].state = RankState::Finalized;
            reply(ranks, i, Msg::new("finalize_ack").with("rc", 0));
        }
        "abort" => {
            let code: i32 = m.get("exitcode").and_then(|c| c.parse().ok()).unwrap_or(1);
            if killing_since.is_none() {
                *failure = Some(format!(
                    "mpirun: rank {i} called MPI_Abort with error code {code}{}; killing the job",
                    m.get("message")
                        .map(|s| format!(" ({})", s.replace('_', " ")))
                        .unwrap_or_default()
                ));
                *exit_code = Some(if code == 0 { 1 } else { code });
                kill_group(pgid, libc::SIGTERM);
                *killing_since = Some(Instant::now());
            }
        }
        "publish_name" => reply(
            ranks,
            i,
            Msg::new("publish_result")
                .with("rc", 1)
                .with("info", "fail")
                .with("msg", "not_supported"),
        ),
        "unpublish_name" => reply(
            ranks,
            i,
            Msg::new("unpublish_result")
                .with("rc", 1)
                .with("info", "fail")
                .with("msg", "not_supported"),
        ),
        "lookup_name" => reply(
            ranks,
            i,
            Msg::new("lookup_result")
                .with("rc", 1)
                .with("info", "fail")
                .with("msg", "not_supported"),
        ),
        _ => {}
    }
}

/// Which of `ncpus` CPUs rank r of n is pinned to: its own when the ranks
/// do not outnumber the CPUs; otherwise consecutive ranks share one, in
/// blocks (4 ranks on 2 CPUs: 0 and 1 on the first, 2 and 3 on the
/// second). Pinning oversubscribed ranks matters: waiting ranks yield
/// rather than sleep, so the scheduler sees every rank busy and cache-hot
/// and does not move one to even out 3 ranks on one CPU and 1 on the
/// other, which it sometimes starts with. Unpinned, a 4-rank barrier on 2
/// CPUs took 3.4 or 6-9 µs depending on that start; pinned, 3.1-3.7
/// (docs/performance.md, fifth round).
fn cpu_of(r: usize, n: usize, ncpus: usize) -> usize {
    if n <= ncpus {
        r
    } else {
        r * ncpus / n
    }
}

/// The CPUs this process may run on, ascending.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}
