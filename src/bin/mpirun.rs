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

/// One program block of the command line (`:` separates them, MPMD): its
/// rank count, environment and working directory.
struct App {
    n: usize,
    env: Vec<(String, String)>,
    wdir: Option<String>,
    prog: Vec<String>,
}

/// How each rank is pinned (`--bind-to`).
#[derive(Clone, Copy, PartialEq)]
enum Bind {
    None,
    /// One CPU per rank (`core`, `hwthread`, `cpu`).
    Cpu,
    /// The CPUs of the package (socket) of the rank's CPU.
    Socket,
    /// The CPUs of the NUMA node of the rank's CPU.
    Numa,
}

struct Opts {
    apps: Vec<App>,
    /// `-genv`: for every block.
    env: Vec<(String, String)>,
    timeout: Option<f64>,
    tag: bool,
    /// Unset: one CPU per rank (`cpu_of`).
    bind: Option<Bind>,
    report_bindings: bool,
    /// `--output-filename DIR`: each rank's stdout and stderr go to
    /// DIR/1/rank.R/{stdout,stderr} (Open MPI's layout).
    output_dir: Option<String>,
}

impl Opts {
    fn size(&self) -> usize {
        self.apps.iter().map(|a| a.n).sum()
    }
}

const HELP: &str = "\
Usage: mpirun [options] program [args...] [: [block options] program [args...]]...
       (also mpiexec)

Starts the ranks of an MPI job on this host and serves them PMI-1.

Ranks and programs (per block; blocks separated by ':' run as one job, MPMD,
ranks numbered across the blocks in order, MPI_APPNUM = the block's index):
  -n N, -np N, -c N         number of ranks of the block (default 1)
  -x VAR[=VALUE]            set VAR for the block's ranks (without a value:
                            this environment's value)
  -env VAR VALUE            the same, MPICH's spelling
  -wdir DIR, --wdir DIR     working directory of the block's ranks
                            (also -wd, --wd)

For the whole job:
  -genv VAR VALUE           set VAR for every rank
  --timeout SECONDS         kill the job after SECONDS (exit 124);
                            also OXMPI_TIMEOUT
  --tag-output, -l          prefix each output line with [rank]
  --output-filename DIR     write each rank's output to
                            DIR/1/rank.R/stdout and stderr instead
  --bind-to core|hwthread|socket|numa|none
                            pin each rank to one CPU (core, hwthread: the
                            default), to the CPUs of its socket or NUMA node,
                            or not at all
  --report-bindings         print each rank's CPUs to stderr at start
  --oversubscribe           accepted (more ranks than CPUs always works)
  --allow-run-as-root       accepted (no effect)
  --mca KEY VALUE           accepted and ignored, with a warning (Open MPI's
                            parameters mean nothing here)
  --tunables                print OxMPI's tunables (OXMPI_* variables) and exit
  -V, --version             print the version and exit
  -h, --help                print this help and exit

Environment:
  OXMPI_TIMEOUT=SECONDS     as --timeout
  OXMPI_*                   library tunables, passed to every rank as any
                            variable is (see --tunables)

Exit status: 0 when every rank exits 0; otherwise the first failing rank's
code (128+N for signal N, the MPI_Abort error code), 124 on --timeout,
2 for a command line error.
";

/// A command-line error: says what was wrong, points at --help, exit 2.
fn bad(what: &str) -> ! {
    eprintln!("mpirun: {what}\nmpirun: 'mpirun --help' lists the options");
    std::process::exit(2);
}

fn parse_args() -> Opts {
    parse(std::env::args().skip(1).collect())
}

fn parse(args: Vec<String>) -> Opts {
    let mut o = Opts {
        apps: Vec::new(),
        env: Vec::new(),
        timeout: None,
        tag: false,
        bind: None,
        report_bindings: false,
        output_dir: None,
    };
    let mut cur = App {
        n: 1,
        env: Vec::new(),
        wdir: None,
        prog: Vec::new(),
    };
    let mut i = 0;
    let need = |i: usize, what: &str| -> String {
        args.get(i + 1)
            .cloned()
            .unwrap_or_else(|| bad(&format!("{} needs {what}", args[i])))
    };
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            ":" => {
                if cur.prog.is_empty() {
                    bad("a ':' with no program before it");
                }
                o.apps.push(std::mem::replace(
                    &mut cur,
                    App {
                        n: 1,
                        env: Vec::new(),
                        wdir: None,
                        prog: Vec::new(),
                    },
                ));
                i += 1;
            }
            _ if !cur.prog.is_empty() => {
                // The program's own arguments, up to the next block.
                cur.prog.push(args[i].clone());
                i += 1;
            }
            "-n" | "-np" | "--n" | "--np" | "-c" => {
                let v = need(i, "a number of ranks");
                cur.n = match v.parse::<usize>() {
                    Ok(0) => bad(&format!("{a} 0: a job needs at least one rank")),
                    Ok(k) => k,
                    Err(_) => bad(&format!("{a} {v}: not a number of ranks")),
                };
                i += 2;
            }
            "-x" => {
                let v = need(i, "VAR or VAR=VALUE");
                match v.split_once('=') {
                    Some((k, val)) => cur.env.push((k.into(), val.into())),
                    None => cur
                        .env
                        .push((v.clone(), std::env::var(&v).unwrap_or_default())),
                }
                i += 2;
            }
            "-genv" | "-env" => {
                let k = need(i, "VAR VALUE");
                let v = args
                    .get(i + 2)
                    .cloned()
                    .unwrap_or_else(|| bad(&format!("{a} {k} needs a value")));
                if a == "-genv" {
                    o.env.push((k, v));
                } else {
                    cur.env.push((k, v));
                }
                i += 3;
            }
            "-wdir" | "--wdir" | "-wd" | "--wd" => {
                cur.wdir = Some(need(i, "a directory"));
                i += 2;
            }
            "--timeout" | "-timeout" => {
                let v = need(i, "a number of seconds");
                o.timeout = Some(
                    v.parse()
                        .ok()
                        .filter(|t: &f64| *t > 0.0)
                        .unwrap_or_else(|| {
                            bad(&format!("{a} {v}: not a positive number of seconds"))
                        }),
                );
                i += 2;
            }
            "--tag-output" | "-l" | "-prepend-rank" => {
                o.tag = true;
                i += 1;
            }
            "--output-filename" | "-output-filename" => {
                o.output_dir = Some(need(i, "a directory"));
                i += 2;
            }
            "--oversubscribe" | "-oversubscribe" | "--allow-run-as-root" => i += 1,
            "--report-bindings" | "-report-bindings" => {
                o.report_bindings = true;
                i += 1;
            }
            "--bind-to" | "-bind-to" => {
                let v = need(i, "core, hwthread, socket, numa or none");
                o.bind = Some(match v.as_str() {
                    "none" => Bind::None,
                    "core" | "hwthread" | "cpu" => Bind::Cpu,
                    "socket" | "package" => Bind::Socket,
                    "numa" => Bind::Numa,
                    _ => bad(&format!(
                        "--bind-to {v}: use core, hwthread, socket, numa or none"
                    )),
                });
                i += 2;
            }
            "--mca" | "-mca" => {
                let k = need(i, "KEY VALUE");
                if args.get(i + 2).is_none() {
                    bad(&format!("{a} {k} needs a value"));
                }
                eprintln!("mpirun: warning: {a} {k} {} ignored (Open MPI parameters mean nothing to OxMPI; its tunables: mpirun --tunables)", args[i + 2]);
                i += 3;
            }
            "--tunables" => {
                oxmpi::config::print_table(&oxmpi::coll::select::tunable_lines());
                std::process::exit(0);
            }
            "-V" | "--version" => {
                println!("OxMPI mpirun {}", env!("CARGO_PKG_VERSION"));
                std::process::exit(0);
            }
            "-h" | "--help" | "-help" => {
                print!("{HELP}");
                std::process::exit(0);
            }
            _ if a.starts_with('-') => bad(&format!("unknown option {a}")),
            _ => {
                cur.prog.push(args[i].clone());
                i += 1;
            }
        }
    }
    if cur.prog.is_empty() {
        bad(if o.apps.is_empty() {
            "no program to run"
        } else {
            "a ':' with no program after it"
        });
    }
    o.apps.push(cur);
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
    /// `--output-filename`: where its stdout and stderr go instead.
    files: Option<(std::fs::File, std::fs::File)>,
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

#[allow(clippy::too_many_arguments)]
fn forward(
    buf: &mut Vec<u8>,
    data: &[u8],
    rank: usize,
    tag: bool,
    to_err: bool,
    flush_all: bool,
    file: Option<&mut std::fs::File>,
) {
    buf.extend_from_slice(data);
    let mut w: Box<dyn Write + '_> = match file {
        Some(f) => Box::new(f),
        None if to_err => Box::new(std::io::stderr().lock()),
        None => Box::new(std::io::stdout().lock()),
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
    let n = o.size();
    // The block of each rank (its MPI_APPNUM).
    let app_of: Vec<usize> = o
        .apps
        .iter()
        .enumerate()
        .flat_map(|(k, a)| std::iter::repeat_n(k, a.n))
        .collect();
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
    let bind = o.bind.unwrap_or(Bind::Cpu);
    let cpus = (bind != Bind::None)
        .then_some(allowed)
        .filter(|c| !c.is_empty());
    for r in 0..n {
        let app = &o.apps[app_of[r]];
        let (parent, child) = socketpair();
        let child_fd: RawFd = child.as_raw_fd();
        let mut cmd = Command::new(&app.prog[0]);
        cmd.args(&app.prog[1..])
            .env("PMI_FD", child_fd.to_string())
            .env("PMI_RANK", r.to_string())
            .env("PMI_SIZE", n.to_string())
            .env("MPI_LOCALNRANKS", n.to_string())
            .env("MPI_LOCALRANKID", r.to_string())
            .env("OXMPI_JOB", &kvs)
            .env("OXMPI_NODE_CPUS", ncpus.to_string());
        for (k, v) in o.env.iter().chain(&app.env) {
            cmd.env(k, v);
        }
        if let Some(d) = &app.wdir {
            cmd.current_dir(d);
        }
        if r != 0 {
            cmd.stdin(Stdio::null());
        }
        let files = o.output_dir.as_ref().map(|d| {
            let dir = std::path::Path::new(d).join("1").join(format!("rank.{r}"));
            let open = |f: &str| {
                std::fs::create_dir_all(&dir)
                    .and_then(|_| std::fs::File::create(dir.join(f)))
                    .unwrap_or_else(|e| {
                        eprintln!(
                            "mpirun: --output-filename: cannot create {}: {e}",
                            dir.join(f).display()
                        );
                        kill_group(pgid, libc::SIGKILL);
                        std::process::exit(1);
                    })
            };
            (open("stdout"), open("stderr"))
        });
        if o.tag || files.is_some() {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        let group = pgid;
        let set: Vec<usize> = cpus
            .as_ref()
            .map(|c| {
                let cpu = c[cpu_of(r, n, c.len())];
                match bind {
                    Bind::Socket => same_domain(c, cpu, oxmpi::sys::package_of),
                    Bind::Numa => same_domain(c, cpu, oxmpi::sys::numa_of),
                    _ => vec![cpu],
                }
            })
            .unwrap_or_default();
        let mut mask: libc::cpu_set_t = unsafe_zeroed_set();
        for &c in &set {
            // SAFETY: c is a CPU number from sched_getaffinity, below CPU_SETSIZE.
            unsafe { libc::CPU_SET(c, &mut mask) };
        }
        let pin = !set.is_empty();
        // SAFETY: between fork and exec we only call async-signal-safe functions
        // (fcntl, setpgid, sched_setaffinity) on values computed before the fork.
        unsafe {
            cmd.pre_exec(move || {
                libc::fcntl(child_fd, libc::F_SETFD, 0);
                libc::setpgid(0, group);
                if pin {
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mask);
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
                if o.report_bindings {
                    if set.is_empty() {
                        eprintln!("mpirun: rank {r} (pid {pid}): not bound");
                    } else {
                        eprintln!(
                            "mpirun: rank {r} (pid {pid}) bound to CPUs {}",
                            cpu_list(&set)
                        );
                    }
                }
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
                    files,
                });
                std::mem::forget(ch); // reaped with waitpid below
            }
            Err(e) => {
                eprintln!(
                    "mpirun: cannot start {}{}: {e}",
                    app.prog[0],
                    app.wdir
                        .as_ref()
                        .map(|d| format!(" in {d}"))
                        .unwrap_or_default()
                );
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
                        let f = r.files.as_mut().map(|f| &mut f.0);
                        forward(&mut r.obuf, &[], i, o.tag, false, true, f);
                        r.out = None
                    }
                    _ => {
                        let f = r.files.as_mut().map(|f| &mut f.1);
                        forward(&mut r.ebuf, &[], i, o.tag, true, true, f);
                        r.err = None
                    }
                }
                continue;
            }
            let data = &buf[..got as usize];
            match k {
                1 => {
                    let f = r.files.as_mut().map(|f| &mut f.0);
                    forward(&mut r.obuf, data, i, o.tag, false, false, f)
                }
                2 => {
                    let f = r.files.as_mut().map(|f| &mut f.1);
                    forward(&mut r.ebuf, data, i, o.tag, true, false, f)
                }
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
                            app_of[i],
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
            // What it sent last (an abort's message) is read before its
            // exit is judged, so the summary quotes it.
            drain_pmi(
                &mut ranks,
                i,
                app_of[i],
                &mut kv,
                &kvs,
                n,
                &mut failure,
                &mut exit_code,
                &mut killing_since,
                pgid,
            );
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
        let (fo, fe) = match r.files.as_mut() {
            Some((a, b)) => (Some(a), Some(b)),
            None => (None, None),
        };
        forward(&mut r.obuf, &[], i, o.tag, false, true, fo);
        forward(&mut r.ebuf, &[], i, o.tag, true, true, fe);
    }
    cleanup_shm(&kvs);
    if let Some(f) = failure {
        eprintln!("{f}");
    }
    std::process::exit(exit_code.unwrap_or(0));
}

/// Reads and handles every PMI line an exited rank left in its socket.
#[allow(clippy::too_many_arguments)]
fn drain_pmi(
    ranks: &mut [Rank],
    i: usize,
    appnum: usize,
    kv: &mut HashMap<String, String>,
    kvs: &str,
    n: usize,
    failure: &mut Option<String>,
    exit_code: &mut Option<i32>,
    killing_since: &mut Option<Instant>,
    pgid: i32,
) {
    let Some(fd) = ranks[i].pmi.as_ref().map(|f| f.as_raw_fd()) else {
        return;
    };
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: reading into our buffer from an open socket, without blocking.
        let got = unsafe {
            libc::recv(
                fd,
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if got <= 0 {
            break;
        }
        ranks[i].rbuf.extend_from_slice(&buf[..got as usize]);
    }
    while let Some(pos) = ranks[i].rbuf.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = ranks[i].rbuf.drain(..=pos).collect();
        if let Ok(m) = wire::parse(&line) {
            handle_pmi(
                ranks,
                i,
                appnum,
                &m,
                kv,
                kvs,
                n,
                failure,
                exit_code,
                killing_since,
                pgid,
            );
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn handle_pmi(
    ranks: &mut [Rank],
    i: usize,
    appnum: usize,
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
        "get_appnum" => reply(
            ranks,
            i,
            Msg::new("appnum").with("rc", 0).with("appnum", appnum),
        ),
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
                        .map(|s| format!(" ({})", wire::text_decode(s)))
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

/// An empty CPU set.
fn unsafe_zeroed_set() -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data; all zeroes is the empty set.
    unsafe { std::mem::zeroed() }
}

/// The CPUs of `allowed` in the same domain as `cpu` (by `domain_of`).
fn same_domain(allowed: &[usize], cpu: usize, domain_of: fn(usize) -> i64) -> Vec<usize> {
    let d = domain_of(cpu);
    allowed
        .iter()
        .copied()
        .filter(|&c| domain_of(c) == d)
        .collect()
}

/// "0-3,6" for a sorted CPU list.
fn cpu_list(v: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            v[i].to_string()
        } else {
            format!("{}-{}", v[i], v[j])
        });
        i = j + 1;
    }
    out.join(",")
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
