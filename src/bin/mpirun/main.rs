//! `mpirun` / `mpiexec`: starts the ranks of a job, on this host or on
//! several, and serves them PMI-1.
//!
//! Owns the job: spawns this host's ranks in one process group and the
//! other hosts' through a proxy there (`proxy.rs`, started by ssh or the
//! launcher agent); answers every rank's PMI requests (key-value store,
//! barrier): this host's through inherited sockets, the others' over TCP on
//! the interface they reach us through, from ranks that show the job's
//! secret; forwards output (optionally prefixed with the rank), stdin to
//! rank 0 and SIGINT/SIGTERM to every rank, and tears the whole job down,
//! on every host, within 2 s when a rank dies before MPI_Finalize or calls
//! MPI_Abort, or a host is lost. Exit status: the first non-zero exit code
//! of a rank (128+signal for a rank killed by a signal, the MPI_Abort code,
//! 124 on --timeout).

mod args;
mod hang;
mod output;
mod place;
mod pmi;
mod proto;
mod proxy;
mod remote;
mod spawn;

use args::Bind;
use output::forward;
use oxmpi::bootstrap::wire::{self, Msg};
use pmi::{drain_pmi, handle_lines, Job};
use remote::Remote;
use spawn::{allowed_cpus, cleanup_shm, cpu_list, socketpair, In, Launch};
use std::collections::HashMap;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
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
    /// The other host's proxy it runs under (None: this host).
    pub(crate) remote: Option<usize>,
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

impl Rank {
    /// Forwards what the rank wrote on stdout or stderr (`is_err`) to
    /// mpirun's own or to its `--output-filename` files; `end`: the stream
    /// ended (a last partial line goes out).
    fn emit(&mut self, i: usize, data: &[u8], is_err: bool, end: bool, tag: bool) {
        let (buf, file) = if is_err {
            (&mut self.ebuf, self.files.as_mut().map(|f| &mut f.1))
        } else {
            (&mut self.obuf, self.files.as_mut().map(|f| &mut f.0))
        };
        forward(buf, data, i, tag, is_err, end, file);
    }
}

/// Asks every rank where it waits (SIGURG; the library answers over PMI).
fn ask_hang(job: &mut Job, why: hang::Why) {
    job.hang.iter_mut().for_each(|h| *h = None);
    job.hang_asked = Some((Instant::now(), why));
    job.signal(libc::SIGURG);
}

/// A TCP connection from a rank on another host before it showed the
/// job's secret.
struct Pending {
    fd: OwnedFd,
    peer: String,
    buf: Vec<u8>,
    since: Instant,
}

/// What a poll slot stands for.
#[derive(Clone, Copy)]
enum Slot {
    Pmi(usize),
    Out(usize),
    Err(usize),
    Proxy(usize),
    Listen(usize),
    Pending(usize),
    Stdin,
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("--oxmpi-proxy") {
        proxy::run();
    }
    let mut o = args::parse(argv);
    // Where each rank runs.
    let specs = o.host_specs();
    let (hosts, host_of): (Vec<String>, Vec<usize>) = if specs.is_empty() {
        if o.ppn.is_some() {
            args::bad("-ppn / --map-by ppr needs hosts (--host or --hostfile)");
        }
        (vec![oxmpi::sys::hostname()], vec![0; o.size()])
    } else {
        let given = o.apps.len() > 1 || o.apps.iter().any(|a| a.n_given);
        let p = place::place(
            &specs,
            given.then(|| o.size()),
            o.ppn,
            o.map_by,
            o.oversubscribe,
        )
        .unwrap_or_else(|e| args::bad(&e));
        if !given {
            o.apps[0].n = p.host_of.len();
        }
        (p.hosts, p.host_of)
    };
    let n = o.size();
    let local_host: Vec<bool> = hosts.iter().map(|h| remote::is_local(h)).collect();
    // Hosts that are this one count as one (say `localhost` and its name).
    let first_local = local_host.iter().position(|&l| l);
    let node_of: Vec<usize> = host_of
        .iter()
        .map(|&h| {
            if local_host[h] {
                first_local.unwrap()
            } else {
                h
            }
        })
        .collect();
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
        libc::signal(libc::SIGQUIT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let mut seed = [0u8; 4];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut seed);
    }
    let kvs = format!("oxmpi_{}_{}", std::process::id(), u32::from_le_bytes(seed));
    let start = Instant::now();
    let mut job = Job {
        kvs: kvs.clone(),
        n,
        mapping: place::process_mapping(&node_of),
        kv: HashMap::new(),
        failure: None,
        exit_code: None,
        killing_since: None,
        pgid: 0,
        proxies: Vec::new(),
        hang_asked: None,
        hang: vec![None; n],
    };
    let mut ranks: Vec<Rank> = Vec::with_capacity(n);
    // The other hosts, each with its ranks.
    let mut remotes: Vec<Remote> = Vec::new();
    let mut remote_of: HashMap<usize, usize> = HashMap::new();
    for (r, &h) in host_of.iter().enumerate() {
        if local_host[h] {
            continue;
        }
        let k = *remote_of.entry(h).or_insert_with(|| {
            remotes.push(Remote {
                host: hosts[h].clone(),
                agent: 0,
                from: None,
                lines: proto::Lines::default(),
                ranks: Vec::new(),
            });
            remotes.len() - 1
        });
        remotes[k].ranks.push(r);
    }

    // PMI over TCP for the other hosts' ranks: a listener on each address
    // they reach this host through.
    let secret = remote::secret();
    let mut listeners: Vec<TcpListener> = Vec::new();
    let mut port_of: Vec<String> = Vec::new();
    for rm in &remotes {
        let ip = remote::route_to(&rm.host).unwrap_or_else(|| {
            args::bad(&format!(
                "host {}: cannot find its address, or a route to it from {}",
                rm.host,
                oxmpi::sys::hostname()
            ))
        });
        let l = match listeners
            .iter()
            .find(|l| l.local_addr().map(|a| a.ip()).ok() == Some(ip))
        {
            Some(l) => l,
            None => {
                let l = TcpListener::bind((ip, 0)).unwrap_or_else(|e| {
                    eprintln!("mpirun: cannot listen for PMI on {ip}: {e}");
                    std::process::exit(1);
                });
                l.set_nonblocking(true).ok();
                listeners.push(l);
                listeners.last().unwrap()
            }
        };
        port_of.push(l.local_addr().unwrap().to_string());
    }

    // CPUs to pin ranks to (`cpu_of`), unless `--bind-to none`.
    let allowed = allowed_cpus();
    // Ranks pinned to one CPU each still need to know the node's CPU count.
    let ncpus = allowed.len().max(1);
    let bind = o.bind.unwrap_or(Bind::Cpu);
    let nlocal = node_of.iter().filter(|&&h| Some(h) == first_local).count();
    let mut local_id = 0;
    for r in 0..n {
        let app = &o.apps[app_of[r]];
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
                        job.signal(libc::SIGKILL);
                        std::process::exit(1);
                    })
            };
            (open("stdout"), open("stderr"))
        });
        let mut rank = Rank {
            pid: 0,
            remote: None,
            pmi: None,
            rbuf: Vec::new(),
            state: RankState::Running,
            in_barrier: false,
            out: None,
            err: None,
            obuf: Vec::new(),
            ebuf: Vec::new(),
            files,
        };
        if !local_host[host_of[r]] {
            rank.remote = Some(remote_of[&host_of[r]]);
            ranks.push(rank);
            continue;
        }
        let (parent, child) = socketpair();
        let child_fd: RawFd = child.as_raw_fd();
        let mut env: Vec<(String, String)> = vec![
            ("PMI_FD".into(), child_fd.to_string()),
            ("PMI_RANK".into(), r.to_string()),
            ("PMI_SIZE".into(), n.to_string()),
            ("MPI_LOCALNRANKS".into(), nlocal.to_string()),
            ("MPI_LOCALRANKID".into(), local_id.to_string()),
            ("OXMPI_JOB".into(), kvs.clone()),
            ("OXMPI_NODE_CPUS".into(), ncpus.to_string()),
        ];
        env.extend(o.env.iter().chain(&app.env).cloned());
        let set = spawn::binding(bind, &allowed, local_id, nlocal);
        local_id += 1;
        let l = Launch {
            prog: &app.prog,
            wdir: app.wdir.as_deref(),
            env,
            keep_fd: Some(child_fd),
            stdin: if r == 0 { In::Inherit } else { In::Null },
            pipe_output: o.tag || rank.files.is_some(),
            pgid: job.pgid,
            cpus: &set,
        };
        match spawn::start(&l) {
            Ok(s) => {
                if job.pgid == 0 {
                    job.pgid = s.pid;
                }
                drop(child);
                if o.report_bindings {
                    if set.is_empty() {
                        eprintln!("mpirun: rank {r} (pid {}): not bound", s.pid);
                    } else {
                        eprintln!(
                            "mpirun: rank {r} (pid {}) bound to CPUs {}",
                            s.pid,
                            cpu_list(&set)
                        );
                    }
                }
                rank.pid = s.pid;
                rank.pmi = Some(parent);
                rank.out = s.out;
                rank.err = s.err;
                ranks.push(rank);
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
                job.signal(libc::SIGKILL);
                std::process::exit(if e.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                });
            }
        }
    }

    // The other hosts' parts: a proxy each, told the job on its stdin.
    let proxy_path = match &o.prefix {
        Some(p) => format!("{p}/bin/mpirun"),
        None => std::env::current_exe()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "mpirun".into()),
    };
    let cwd = std::env::current_dir()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let env_all: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| !remote::host_specific(k))
        .chain(o.env.iter().cloned())
        .collect();
    for (k, rm) in remotes.iter_mut().enumerate() {
        let argv = remote::agent_argv(o.launcher.as_deref(), &rm.host, &proxy_path);
        let (pid, to, from) = match remote::start_agent(&argv) {
            Ok(x) => x,
            Err(e) => {
                eprintln!(
                    "mpirun: cannot start the launcher for host {} ({}): {e}",
                    rm.host, argv[0]
                );
                job.signal(libc::SIGKILL);
                std::process::exit(1);
            }
        };
        rm.agent = pid;
        rm.from = Some(from);
        let size = n.to_string();
        let report = if o.report_bindings { "1" } else { "0" };
        proto::send(
            &to,
            &remote::kv(
                "job",
                &[
                    ("kvs", &kvs),
                    ("size", &size),
                    ("host", &rm.host),
                    ("cwd", &cwd),
                    ("port", &port_of[k]),
                    ("secret", &secret),
                    ("bind", bind.name()),
                    ("report", report),
                ],
            ),
        );
        for (ek, ev) in &env_all {
            proto::send(&to, &remote::kv("env", &[("k", ek), ("v", ev)]));
        }
        for (a, app) in o.apps.iter().enumerate() {
            let idx = a.to_string();
            let mut m = Msg::new("app").with("idx", a);
            if let Some(d) = &app.wdir {
                m = m.with("wdir", proto::enc(d.as_bytes()));
            }
            proto::send(&to, &m);
            for arg in &app.prog {
                proto::send(&to, &remote::kv("arg", &[("idx", &idx), ("v", arg)]));
            }
            for (ek, ev) in &app.env {
                proto::send(
                    &to,
                    &remote::kv("aenv", &[("idx", &idx), ("k", ek), ("v", ev)]),
                );
            }
        }
        for &r in &rm.ranks {
            proto::send(
                &to,
                &Msg::new("rank").with("rank", r).with("app", app_of[r]),
            );
        }
        proto::send(&to, &Msg::new("go"));
        job.proxies.push(Some(to));
    }

    // Stdin goes to rank 0 through its proxy when rank 0 is elsewhere.
    let stdin_to: Option<usize> = ranks.first().and_then(|r| r.remote);
    // SAFETY: fd 0 is this process's stdin, read only here from now on.
    let mut stdin: Option<OwnedFd> = stdin_to.map(|_| unsafe {
        use std::os::fd::FromRawFd;
        OwnedFd::from_raw_fd(libc::dup(0))
    });
    let mut pending: Vec<Pending> = Vec::new();
    let mut running = n;
    let mut buf = vec![0u8; 65536];
    let mut sent_kill = false;
    // OXMPI_HANG_REPORT=SECONDS: a report when every rank has waited in
    // MPI that long (`hang::Why::Probe`).
    let hang_every: Option<f64> = std::env::var("OXMPI_HANG_REPORT")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|&s: &f64| s > 0.0);
    let mut last_probe = Instant::now();
    let mut hang_shown = false;
    while running > 0 {
        // Signals from the user: forward, then tear down.
        let sig = SIGNALLED.swap(0, Ordering::Relaxed);
        if sig == libc::SIGQUIT {
            // SIGQUIT: the hang report, and the job goes on.
            if job.killing_since.is_none() {
                match job.hang_asked {
                    Some((_, hang::Why::Timeout)) => {}
                    Some((_, ref mut w)) => *w = hang::Why::Quit,
                    None => ask_hang(&mut job, hang::Why::Quit),
                }
            }
        } else if sig != 0 {
            job.signal(sig);
            job.fail(
                format!("mpirun: received signal {sig}; forwarded it to the job"),
                128 + sig,
            );
        }
        if let (Some(t), None) = (o.timeout, job.killing_since) {
            if start.elapsed().as_secs_f64() > t {
                match job.hang_asked {
                    // First the ranks say where they wait.
                    None => ask_hang(&mut job, hang::Why::Timeout),
                    Some((_, hang::Why::Timeout)) => {}
                    Some(_) => job.hang_asked = Some((Instant::now(), hang::Why::Timeout)),
                }
            }
        }
        // OXMPI_HANG_REPORT=SECONDS: a look every half of SECONDS.
        if let (Some(s), None, None) = (hang_every, job.hang_asked, job.killing_since) {
            if last_probe.elapsed().as_secs_f64() > (s / 2.0).max(0.5) {
                ask_hang(&mut job, hang::Why::Probe);
            }
        }
        if let Some((since, why)) = job.hang_asked {
            let waiting = ranks
                .iter()
                .enumerate()
                .any(|(r, rk)| rk.state == RankState::Running && job.hang[r].is_none());
            if !waiting || since.elapsed() > Duration::from_millis(2000) {
                let reports: Vec<Option<hang::Report>> = job
                    .hang
                    .iter()
                    .map(|t| t.as_deref().map(hang::parse))
                    .collect();
                let exited: Vec<bool> = ranks
                    .iter()
                    .map(|rk| rk.state != RankState::Running)
                    .collect();
                if why == hang::Why::Probe {
                    // Shown once per hang: when every running rank has
                    // waited in MPI for SECONDS (none computing, none
                    // moving on).
                    let s = hang_every.unwrap_or(0.0);
                    let stuck = reports
                        .iter()
                        .zip(&exited)
                        .all(|(r, &gone)| gone || r.as_ref().is_some_and(|r| r.waited >= s))
                        && exited.iter().any(|&g| !g);
                    if stuck && !hang_shown {
                        eprintln!("mpirun: no rank has progressed for {s} s (OXMPI_HANG_REPORT)");
                        eprint!("{}", hang::render(&reports, &exited));
                    }
                    hang_shown = stuck;
                    last_probe = Instant::now();
                } else {
                    eprint!("{}", hang::render(&reports, &exited));
                }
                job.hang_asked = None;
                job.hang.iter_mut().for_each(|h| *h = None);
                if why == hang::Why::Timeout {
                    let t = o.timeout.unwrap_or(0.0);
                    job.fail(
                        format!("mpirun: job timed out after {t} s; killing it"),
                        124,
                    );
                }
            }
        }
        if let Some(since) = job.killing_since {
            if !sent_kill && since.elapsed() > Duration::from_millis(1000) {
                job.signal(libc::SIGKILL);
                sent_kill = true;
            }
            // A host that does not answer the kill is cut off: its agent
            // goes, and its proxy with it (its stdin closes).
            if since.elapsed() > Duration::from_millis(5000) {
                for rm in &remotes {
                    if rm.agent > 0 {
                        // SAFETY: signalling the agent's own process group.
                        unsafe { libc::kill(-rm.agent, libc::SIGKILL) };
                    }
                }
            }
        }
        // Unauthenticated connections get 10 s to show the secret.
        pending.retain(|p| {
            let keep = p.since.elapsed() < Duration::from_secs(10);
            if !keep {
                eprintln!(
                    "mpirun: dropped a PMI connection from {} that sent no greeting",
                    p.peer
                );
            }
            keep
        });
        // Poll PMI sockets, output pipes, proxies, listeners and stdin.
        let mut pfds: Vec<libc::pollfd> = Vec::new();
        let mut who: Vec<Slot> = Vec::new();
        let mut add = |fd: RawFd, s: Slot| {
            pfds.push(libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            });
            who.push(s);
        };
        for (i, r) in ranks.iter().enumerate() {
            if let Some(fd) = &r.pmi {
                add(fd.as_raw_fd(), Slot::Pmi(i));
            }
            if let Some(fd) = &r.out {
                add(fd.as_raw_fd(), Slot::Out(i));
            }
            if let Some(fd) = &r.err {
                add(fd.as_raw_fd(), Slot::Err(i));
            }
        }
        for (k, rm) in remotes.iter().enumerate() {
            if let Some(fd) = &rm.from {
                add(fd.as_raw_fd(), Slot::Proxy(k));
            }
        }
        for (k, l) in listeners.iter().enumerate() {
            add(l.as_raw_fd(), Slot::Listen(k));
        }
        for (k, p) in pending.iter().enumerate() {
            add(p.fd.as_raw_fd(), Slot::Pending(k));
        }
        if let Some(fd) = &stdin {
            add(fd.as_raw_fd(), Slot::Stdin);
        }
        // SAFETY: pfds is a valid array of pollfd.
        unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, 20) };
        // Pending connections done with: (index, whether it greeted).
        let mut accepted: Vec<(usize, bool)> = Vec::new();
        for (p, &slot) in pfds.iter().zip(who.iter()) {
            if p.revents == 0 {
                continue;
            }
            match slot {
                Slot::Out(i) | Slot::Err(i) => {
                    let is_err = matches!(slot, Slot::Err(_));
                    let r = &mut ranks[i];
                    let fd = if is_err { &mut r.err } else { &mut r.out };
                    let got = proto::read_some(fd.as_ref().unwrap(), &mut buf);
                    if got == 0 {
                        *fd = None;
                    }
                    r.emit(i, &buf[..got], is_err, got == 0, o.tag);
                }
                Slot::Pmi(i) => {
                    let got = proto::read_some(ranks[i].pmi.as_ref().unwrap(), &mut buf);
                    if got == 0 {
                        ranks[i].pmi = None;
                        continue;
                    }
                    ranks[i].rbuf.extend_from_slice(&buf[..got]);
                    if ranks[i].rbuf.len() > 64 * wire::MAX_LINE {
                        ranks[i].rbuf.clear(); // a flood without newlines: drop it
                    }
                    handle_lines(&mut ranks, i, app_of[i], &mut job);
                }
                Slot::Proxy(k) => {
                    let got = proto::read_some(remotes[k].from.as_ref().unwrap(), &mut buf);
                    if got == 0 {
                        remotes[k].from = None;
                        continue;
                    }
                    remotes[k].lines.feed(&buf[..got]);
                    from_proxy(
                        &mut remotes,
                        k,
                        &mut ranks,
                        &app_of,
                        &mut job,
                        &o,
                        &mut running,
                    );
                }
                Slot::Listen(k) => {
                    while let Ok((s, addr)) = listeners[k].accept() {
                        s.set_nonblocking(false).ok();
                        s.set_nodelay(true).ok();
                        pending.push(Pending {
                            fd: OwnedFd::from(s),
                            peer: addr.to_string(),
                            buf: Vec::new(),
                            since: Instant::now(),
                        });
                    }
                }
                Slot::Pending(k) => {
                    let got = proto::read_some(&pending[k].fd, &mut buf);
                    if got == 0 {
                        accepted.push((k, false)); // closed before its greeting
                        continue;
                    }
                    pending[k].buf.extend_from_slice(&buf[..got]);
                    if pending[k].buf.contains(&b'\n') || pending[k].buf.len() > wire::MAX_LINE {
                        accepted.push((k, true));
                    }
                }
                Slot::Stdin => {
                    let got = proto::read_some(stdin.as_ref().unwrap(), &mut buf[..16384]);
                    let to = stdin_to.and_then(|k| job.proxies[k].as_ref());
                    if got == 0 {
                        stdin = None;
                        if let Some(to) = to {
                            proto::send(to, &Msg::new("stdin_eof"));
                        }
                    } else if let Some(to) = to {
                        proto::send(to, &Msg::new("stdin").with("data", proto::enc(&buf[..got])));
                    }
                }
            }
        }
        // Connections that greeted (or closed) leave the pending list.
        accepted.sort_unstable();
        for (k, greeted) in accepted.into_iter().rev() {
            let p = pending.remove(k);
            if greeted {
                greet(p, &mut ranks, &secret, n);
            }
        }
        // Reap exited ranks and agents.
        loop {
            let mut status = 0;
            // SAFETY: waitpid on our own children.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
            if let Some(k) = remotes.iter().position(|rm| rm.agent == pid) {
                agent_exited(
                    &mut remotes,
                    k,
                    status,
                    &mut ranks,
                    &app_of,
                    &mut job,
                    &o,
                    &mut running,
                );
                continue;
            }
            let Some(i) = ranks
                .iter()
                .position(|r| r.pid == pid && r.remote.is_none())
            else {
                continue;
            };
            let (code, why) = spawn::exit_of(status);
            rank_exited(
                &mut ranks,
                i,
                app_of[i],
                code,
                &why,
                None,
                &mut job,
                &mut running,
            );
        }
    }
    // Every rank is gone: the proxies finish (their stdin closes) and their
    // agents exit; any that lingers is killed.
    for p in job.proxies.iter_mut() {
        *p = None;
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    while remotes.iter().any(|rm| rm.agent > 0) {
        let mut status = 0;
        // SAFETY: waitpid on our own children.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if let Some(rm) = remotes.iter_mut().find(|rm| pid > 0 && rm.agent == pid) {
            rm.agent = 0;
        } else if Instant::now() > deadline {
            for rm in remotes.iter_mut().filter(|rm| rm.agent > 0) {
                // SAFETY: signalling the agent's own process group.
                unsafe { libc::kill(-rm.agent, libc::SIGKILL) };
                // SAFETY: reaping our own child.
                unsafe { libc::waitpid(rm.agent, &mut status, 0) };
                rm.agent = 0;
            }
        } else {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    for (i, r) in ranks.iter_mut().enumerate() {
        r.emit(i, &[], false, true, o.tag);
        r.emit(i, &[], true, true, o.tag);
    }
    cleanup_shm(&kvs);
    if let Some(f) = job.failure {
        eprintln!("{f}");
    }
    std::process::exit(job.exit_code.unwrap_or(0));
}

/// A rank has exited (`code` as 128+N for signal N; `host` when not this one): what it sent last is
/// read first (an abort's message, so the summary quotes it), then its exit
/// is judged.
#[allow(clippy::too_many_arguments)]
fn rank_exited(
    ranks: &mut [Rank],
    i: usize,
    appnum: usize,
    code: i32,
    why: &str,
    host: Option<&str>,
    job: &mut Job,
    running: &mut usize,
) {
    if ranks[i].state == RankState::Exited {
        return;
    }
    let wait = if ranks[i].remote.is_some() {
        Duration::from_millis(300)
    } else {
        Duration::ZERO
    };
    drain_pmi(ranks, i, appnum, job, wait);
    let finalized = ranks[i].state == RankState::Finalized;
    ranks[i].state = RankState::Exited;
    *running -= 1;
    if code != 0 {
        let pid = ranks[i].pid;
        job.fail(
            format!(
                "mpirun: rank {i} (pid {pid}{}) {why}{}; killing the job",
                host.map(|h| format!(" on {h}")).unwrap_or_default(),
                if finalized {
                    " after MPI_Finalize"
                } else {
                    " before MPI_Finalize"
                }
            ),
            code,
        );
    }
}

/// Handles what a proxy said.
#[allow(clippy::too_many_arguments)]
fn from_proxy(
    remotes: &mut [Remote],
    k: usize,
    ranks: &mut [Rank],
    app_of: &[usize],
    job: &mut Job,
    o: &args::Opts,
    running: &mut usize,
) {
    let host = remotes[k].host.clone();
    while let Some(m) = remotes[k].lines.next_msg() {
        let rank: Option<usize> = m.get("rank").and_then(|v| v.parse().ok());
        let Some(r) = rank.filter(|&r| r < ranks.len() && ranks[r].remote == Some(k)) else {
            continue;
        };
        match m.cmd() {
            "started" => ranks[r].pid = m.get("pid").and_then(|v| v.parse().ok()).unwrap_or(0),
            "out" => {
                let data = proto::dec(m.get("data").unwrap_or(""));
                ranks[r].emit(r, &data, m.get("fd") == Some("2"), false, o.tag);
            }
            "nostart" => {
                let code = m.get("code").and_then(|v| v.parse().ok()).unwrap_or(126);
                let msg = proto::dec_str(m.get("msg").unwrap_or(""));
                job.fail(format!("mpirun: {msg}; killing the job"), code);
                ranks[r].state = RankState::Exited;
                *running -= 1;
            }
            "exit" => {
                let code = m.get("code").and_then(|v| v.parse().ok()).unwrap_or(1);
                let why = proto::dec_str(m.get("why").unwrap_or(""));
                rank_exited(ranks, r, app_of[r], code, &why, Some(&host), job, running);
            }
            _ => {}
        }
    }
}

/// A host's agent has exited: what its proxy said last is handled, and
/// ranks it did not report as exited are lost with the host.
#[allow(clippy::too_many_arguments)]
fn agent_exited(
    remotes: &mut [Remote],
    k: usize,
    status: i32,
    ranks: &mut [Rank],
    app_of: &[usize],
    job: &mut Job,
    o: &args::Opts,
    running: &mut usize,
) {
    let mut buf = vec![0u8; 65536];
    while let Some(fd) = remotes[k].from.as_ref() {
        let mut p = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a short wait for the proxy's last lines.
        if unsafe { libc::poll(&mut p, 1, 200) } <= 0 {
            break;
        }
        let got = proto::read_some(fd, &mut buf);
        if got == 0 {
            remotes[k].from = None;
            break;
        }
        remotes[k].lines.feed(&buf[..got]);
        from_proxy(remotes, k, ranks, app_of, job, o, running);
    }
    remotes[k].agent = 0;
    job.proxies[k] = None;
    let lost: Vec<usize> = remotes[k]
        .ranks
        .iter()
        .copied()
        .filter(|&r| ranks[r].state != RankState::Exited)
        .collect();
    if lost.is_empty() {
        return;
    }
    for &r in &lost {
        ranks[r].state = RankState::Exited;
        ranks[r].pmi = None;
        *running -= 1;
    }
    let (code, why) = spawn::exit_of(status);
    let ever_started = lost.iter().any(|&r| ranks[r].pid != 0);
    job.fail(
        format!(
            "mpirun: {} host {}: its launcher {why}{}; killing the job",
            if ever_started {
                "lost"
            } else {
                "cannot start ranks on"
            },
            remotes[k].host,
            if ever_started {
                format!(
                    " while rank{} {} ran there",
                    if lost.len() > 1 { "s" } else { "" },
                    lost.iter()
                        .map(|r| r.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                )
            } else {
                " (check that it is reachable and has mpirun at the same path, or give --prefix)"
                    .into()
            }
        ),
        if code == 0 { 1 } else { code },
    );
}

/// A rank on another host connected: its first line must be
/// `cmd=initack pmiid=R secret=S` with this job's secret, for a rank on
/// another host not yet connected; then it gets MPICH's greeting (initack,
/// size, rank, debug) and becomes that rank's PMI socket.
fn greet(p: Pending, ranks: &mut [Rank], secret: &str, n: usize) {
    let line: Vec<u8> = p.buf.split(|&b| b == b'\n').next().unwrap_or(&[]).to_vec();
    let m = wire::parse(&line).ok();
    let rank: Option<usize> = m
        .as_ref()
        .filter(|m| m.cmd() == "initack")
        .and_then(|m| m.get("pmiid"))
        .and_then(|v| v.parse().ok());
    let ok_secret = m
        .as_ref()
        .and_then(|m| m.get("secret"))
        .is_some_and(|s| remote::same_secret(s, secret));
    let Some(r) = rank.filter(|&r| {
        ok_secret
            && r < n
            && ranks[r].remote.is_some()
            && ranks[r].pmi.is_none()
            && ranks[r].state != RankState::Exited
    }) else {
        eprintln!(
            "mpirun: refused a PMI connection from {}: {}",
            p.peer,
            if !ok_secret {
                "it did not show this job's secret"
            } else {
                "not a rank of this job on another host, or one already connected"
            }
        );
        return;
    };
    let fd = p.fd;
    for m in [
        Msg::new("initack"),
        Msg::new("set").with("size", n),
        Msg::new("set").with("rank", r),
        Msg::new("set").with("debug", 0),
    ] {
        proto::send(&fd, &m);
    }
    // Anything after the greeting line is the rank's first PMI request.
    let pos = p
        .buf
        .iter()
        .position(|&b| b == b'\n')
        .map_or(p.buf.len(), |i| i + 1);
    ranks[r].rbuf.extend_from_slice(&p.buf[pos..]);
    ranks[r].pmi = Some(fd);
}
