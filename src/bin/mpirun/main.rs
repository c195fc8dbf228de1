//! `mpirun` / `mpiexec`: starts N ranks on this host and serves them PMI-1.
//!
//! Owns the job: spawns the ranks in one process group, answers their PMI
//! requests (key-value store, barrier), forwards output (optionally prefixed
//! with the rank), stdin to rank 0 and SIGINT/SIGTERM to every rank, and tears
//! the whole job down within 2 s when a rank dies before MPI_Finalize or calls
//! MPI_Abort. Exit status: the first non-zero exit code of a rank (128+signal
//! for a rank killed by a signal, the MPI_Abort code, 124 on --timeout).

mod args;
mod output;
mod pmi;
mod spawn;

use args::{parse_args, Bind};
use output::forward;
use oxmpi::bootstrap::wire;
use pmi::{drain_pmi, handle_pmi};
use spawn::{
    allowed_cpus, cleanup_shm, cpu_list, cpu_of, kill_group, same_domain, socketpair,
    unsafe_zeroed_set,
};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNALLED.store(sig, Ordering::Relaxed);
}

#[derive(PartialEq)]
pub(crate) enum RankState {
    Running,
    Finalized,
    Exited,
}

pub(crate) struct Rank {
    pub(crate) pid: i32,
    pub(crate) pmi: Option<OwnedFd>,
    pub(crate) rbuf: Vec<u8>,
    pub(crate) state: RankState,
    pub(crate) in_barrier: bool,
    pub(crate) out: Option<OwnedFd>,
    pub(crate) err: Option<OwnedFd>,
    pub(crate) obuf: Vec<u8>,
    pub(crate) ebuf: Vec<u8>,
    /// `--output-filename`: where its stdout and stderr go instead.
    pub(crate) files: Option<(std::fs::File, std::fs::File)>,
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
