//! mpirun's part on another host (`mpirun --oxmpi-proxy`, started there by
//! ssh or the launcher agent): starts that host's ranks, pinned, with the
//! environment mpirun sends; forwards their output, their exits and stdin
//! for rank 0; signals them when told; and when mpirun goes (its stdin
//! closes), kills them. The ranks speak PMI to mpirun directly, over TCP.
//! On its way out it removes the job's files from this host's /dev/shm.
//!
//! mpirun writes on its stdin, values `proto::enc`oded:
//! `cmd=job kvs= size= host= cwd= port= secret= bind= report=`,
//! `cmd=env k= v=` (every rank), `cmd=app idx= [wdir=]`, `cmd=arg idx= v=`,
//! `cmd=aenv idx= k= v=`, `cmd=rank rank= app=` (one per rank here, in
//! order), `cmd=go`; then `cmd=stdin data=`, `cmd=stdin_eof`, `cmd=signal sig=`.
//! It answers on stdout: `cmd=started rank= pid=`, `cmd=nostart rank= code= msg=`,
//! `cmd=out rank= fd=1|2 data=`, `cmd=exit rank= code= why=`.

use crate::args::Bind;
use crate::proto::{self, dec, dec_str, enc, Lines};
use crate::spawn::{self, allowed_cpus, cleanup_shm, cpu_list, kill_group, In, Launch};
use oxmpi::bootstrap::wire::Msg;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNALLED.store(sig, Ordering::Relaxed);
}

#[derive(Default)]
struct AppDesc {
    prog: Vec<String>,
    wdir: Option<String>,
    env: Vec<(String, String)>,
}

struct Local {
    rank: usize,
    pid: i32,
    stdin: Option<OwnedFd>,
    /// Stdin bytes not yet taken by the rank.
    pending_in: Vec<u8>,
    stdin_eof: bool,
    out: Option<OwnedFd>,
    err: Option<OwnedFd>,
    exited: bool,
}

fn die(msg: &str) -> ! {
    eprintln!("mpirun (proxy on {}): {msg}", oxmpi::sys::hostname());
    std::process::exit(1);
}

pub(crate) fn run() -> ! {
    // SAFETY: installing async-signal-safe handlers that only store an atomic.
    unsafe {
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::signal(s, on_signal as *const () as libc::sighandler_t);
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    // SAFETY: fd 0 and 1 are this process's stdin and stdout, which it owns
    // from here on (nothing else reads or writes them).
    let (input, output) = unsafe { (OwnedFd::from_raw_fd(0), OwnedFd::from_raw_fd(1)) };
    let mut lines = Lines::default();
    let mut buf = vec![0u8; 65536];
    let mut job: Option<Msg> = None;
    let mut env: Vec<(String, String)> = Vec::new();
    let mut apps: Vec<AppDesc> = Vec::new();
    let mut mine: Vec<(usize, usize)> = Vec::new(); // (rank, app)
    'setup: loop {
        let got = proto::read_some(&input, &mut buf);
        if got == 0 {
            // mpirun went before the job started.
            std::process::exit(1);
        }
        lines.feed(&buf[..got]);
        while let Some(m) = lines.next_msg() {
            let idx = || -> usize { m.get("idx").and_then(|v| v.parse().ok()).unwrap_or(0) };
            let app = |apps: &mut Vec<AppDesc>, k: usize| {
                if apps.len() <= k {
                    apps.resize_with(k + 1, AppDesc::default);
                }
            };
            match m.cmd() {
                "job" => job = Some(m.clone()),
                "env" => env.push((
                    dec_str(m.get("k").unwrap_or("")),
                    dec_str(m.get("v").unwrap_or("")),
                )),
                "app" => {
                    let k = idx();
                    app(&mut apps, k);
                    apps[k].wdir = m.get("wdir").map(dec_str);
                }
                "arg" => {
                    let k = idx();
                    app(&mut apps, k);
                    apps[k].prog.push(dec_str(m.get("v").unwrap_or("")));
                }
                "aenv" => {
                    let k = idx();
                    app(&mut apps, k);
                    apps[k].env.push((
                        dec_str(m.get("k").unwrap_or("")),
                        dec_str(m.get("v").unwrap_or("")),
                    ));
                }
                "rank" => {
                    let r = m.get("rank").and_then(|v| v.parse().ok());
                    let a = m.get("app").and_then(|v| v.parse().ok());
                    match (r, a) {
                        (Some(r), Some(a)) => mine.push((r, a)),
                        _ => die("a rank line without rank= and app="),
                    }
                }
                "go" => break 'setup,
                _ => {}
            }
        }
    }
    let job = job.unwrap_or_else(|| die("no job description from mpirun"));
    let get = |k: &str| job.get(k).map(dec_str).unwrap_or_default();
    let kvs = get("kvs");
    let bind = Bind::parse(&get("bind")).unwrap_or(Bind::Cpu);
    let report = get("report") == "1";
    let cwd = get("cwd");
    let allowed = allowed_cpus();
    let ncpus = allowed.len().max(1);
    let nlocal = mine.len();
    let mut pgid = 0;
    let mut ranks: Vec<Local> = Vec::with_capacity(nlocal);
    for (local, &(rank, a)) in mine.iter().enumerate() {
        let Some(app) = apps.get(a).filter(|x| !x.prog.is_empty()) else {
            die(&format!("rank {rank}: no program for block {a}"));
        };
        let mut e: Vec<(String, String)> = env.clone();
        e.extend(app.env.iter().cloned());
        e.extend([
            ("PMI_PORT".into(), get("port")),
            ("PMI_ID".into(), rank.to_string()),
            ("PMI_RANK".into(), rank.to_string()),
            ("PMI_SIZE".into(), get("size")),
            ("OXMPI_PMI_SECRET".into(), get("secret")),
            ("MPI_LOCALNRANKS".into(), nlocal.to_string()),
            ("MPI_LOCALRANKID".into(), local.to_string()),
            ("OXMPI_JOB".into(), kvs.clone()),
            ("OXMPI_NODE_CPUS".into(), ncpus.to_string()),
        ]);
        let cpus = spawn::binding(bind, &allowed, local, nlocal);
        // A block's -wdir, else mpirun's directory where it exists here.
        let wdir = app
            .wdir
            .clone()
            .or_else(|| std::path::Path::new(&cwd).is_dir().then(|| cwd.clone()));
        let l = Launch {
            prog: &app.prog,
            wdir: wdir.as_deref(),
            env: e,
            keep_fd: None,
            stdin: if rank == 0 { In::Pipe } else { In::Null },
            pipe_output: true,
            pgid,
            cpus: &cpus,
        };
        match spawn::start(&l) {
            Ok(s) => {
                if pgid == 0 {
                    pgid = s.pid;
                }
                if report {
                    if cpus.is_empty() {
                        eprintln!(
                            "mpirun: rank {rank} (pid {}, {}): not bound",
                            s.pid,
                            oxmpi::sys::hostname()
                        );
                    } else {
                        eprintln!(
                            "mpirun: rank {rank} (pid {}, {}) bound to CPUs {}",
                            s.pid,
                            oxmpi::sys::hostname(),
                            cpu_list(&cpus)
                        );
                    }
                }
                proto::send(
                    &output,
                    &Msg::new("started").with("rank", rank).with("pid", s.pid),
                );
                ranks.push(Local {
                    rank,
                    pid: s.pid,
                    stdin: s.stdin,
                    pending_in: Vec::new(),
                    stdin_eof: false,
                    out: s.out,
                    err: s.err,
                    exited: false,
                });
            }
            Err(e) => {
                let code = if e.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                };
                proto::send(
                    &output,
                    &Msg::new("nostart")
                        .with("rank", rank)
                        .with("code", code)
                        .with(
                            "msg",
                            enc(format!(
                                "cannot start {}{} on {}: {e}",
                                app.prog[0],
                                wdir.as_ref()
                                    .map(|d| format!(" in {d}"))
                                    .unwrap_or_default(),
                                oxmpi::sys::hostname()
                            )
                            .as_bytes()),
                        ),
                );
                kill_group(pgid, libc::SIGKILL);
                finish(&mut ranks, &output, &kvs);
            }
        }
    }
    let mut input = Some(input);
    let mut killing_since: Option<Instant> = None;
    let mut sent_kill = false;
    loop {
        let sig = SIGNALLED.swap(0, Ordering::Relaxed);
        if sig != 0 {
            kill_group(pgid, sig);
            killing_since.get_or_insert_with(Instant::now);
        }
        if let Some(t) = killing_since {
            if !sent_kill && t.elapsed() > Duration::from_millis(1000) {
                kill_group(pgid, libc::SIGKILL);
                sent_kill = true;
            }
        }
        if ranks.iter().all(|r| r.exited) {
            finish(&mut ranks, &output, &kvs);
        }
        let mut pfds: Vec<libc::pollfd> = Vec::new();
        let mut who: Vec<(usize, u8)> = Vec::new();
        if let Some(fd) = &input {
            pfds.push(pollfd(fd, libc::POLLIN));
            who.push((usize::MAX, 0));
        }
        for (i, r) in ranks.iter().enumerate() {
            if let Some(fd) = &r.out {
                pfds.push(pollfd(fd, libc::POLLIN));
                who.push((i, 1));
            }
            if let Some(fd) = &r.err {
                pfds.push(pollfd(fd, libc::POLLIN));
                who.push((i, 2));
            }
            if let Some(fd) = r.stdin.as_ref().filter(|_| !r.pending_in.is_empty()) {
                pfds.push(pollfd(fd, libc::POLLOUT));
                who.push((i, 3));
            }
        }
        // SAFETY: pfds is a valid array of pollfd.
        unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, 20) };
        for (p, &(i, k)) in pfds.iter().zip(who.iter()) {
            if p.revents == 0 {
                continue;
            }
            match k {
                0 => {
                    let got = proto::read_some(input.as_ref().unwrap(), &mut buf);
                    if got == 0 {
                        // mpirun is gone: so is the job.
                        input = None;
                        kill_group(pgid, libc::SIGTERM);
                        killing_since.get_or_insert_with(Instant::now);
                        continue;
                    }
                    lines.feed(&buf[..got]);
                }
                1 | 2 => {
                    let r = &mut ranks[i];
                    let fd = if k == 1 { &mut r.out } else { &mut r.err };
                    let got = proto::read_some(fd.as_ref().unwrap(), &mut buf);
                    if got == 0 {
                        *fd = None;
                        continue;
                    }
                    proto::send(
                        &output,
                        &Msg::new("out")
                            .with("rank", r.rank)
                            .with("fd", k)
                            .with("data", enc(&buf[..got])),
                    );
                }
                _ => {
                    let r = &mut ranks[i];
                    let fd = r.stdin.as_ref().unwrap().as_raw_fd();
                    // SAFETY: writing bytes we own to the rank's stdin pipe.
                    let w = unsafe {
                        libc::write(
                            fd,
                            r.pending_in.as_ptr() as *const libc::c_void,
                            r.pending_in.len().min(65536),
                        )
                    };
                    if w > 0 {
                        r.pending_in.drain(..w as usize);
                    } else if w < 0 {
                        // The rank closed its stdin: drop what it did not take.
                        r.pending_in.clear();
                        r.stdin = None;
                    }
                    if r.pending_in.is_empty() && r.stdin_eof {
                        r.stdin = None;
                    }
                }
            }
        }
        while let Some(m) = lines.next_msg() {
            match m.cmd() {
                "signal" => {
                    let s = m.get("sig").and_then(|v| v.parse().ok()).unwrap_or(0);
                    if s > 0 {
                        kill_group(pgid, s);
                    }
                }
                "stdin" => {
                    if let Some(r) = ranks.iter_mut().find(|r| r.rank == 0) {
                        r.pending_in.extend(dec(m.get("data").unwrap_or("")));
                    }
                }
                "stdin_eof" => {
                    if let Some(r) = ranks.iter_mut().find(|r| r.rank == 0) {
                        r.stdin_eof = true;
                        if r.pending_in.is_empty() {
                            r.stdin = None;
                        }
                    }
                }
                _ => {}
            }
        }
        reap(&mut ranks, &output);
    }
}

fn pollfd(fd: &OwnedFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    }
}

/// Reports every rank that has exited.
fn reap(ranks: &mut [Local], output: &OwnedFd) {
    loop {
        let mut status = 0;
        // SAFETY: waitpid on our own children.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        let Some(r) = ranks.iter_mut().find(|r| r.pid == pid) else {
            continue;
        };
        // Its last output goes before its exit.
        let mut buf = vec![0u8; 65536];
        for (k, fd) in [(1u8, &mut r.out), (2, &mut r.err)] {
            while let Some(f) = fd.as_ref() {
                let got = nonblocking_read(f, &mut buf);
                if got <= 0 {
                    if got == 0 {
                        *fd = None;
                    }
                    break;
                }
                proto::send(
                    output,
                    &Msg::new("out")
                        .with("rank", r.rank)
                        .with("fd", k)
                        .with("data", enc(&buf[..got as usize])),
                );
            }
        }
        r.exited = true;
        let (code, why) = spawn::exit_of(status);
        proto::send(
            output,
            &Msg::new("exit")
                .with("rank", r.rank)
                .with("code", code)
                .with("why", enc(why.as_bytes())),
        );
    }
}

/// Reads a pipe without blocking (`recv` works only on sockets).
fn nonblocking_read(f: &OwnedFd, buf: &mut [u8]) -> isize {
    let fd = f.as_raw_fd();
    // SAFETY: fcntl and read on an open pipe we own, into our buffer.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
        let got = libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len());
        libc::fcntl(fd, libc::F_SETFL, fl);
        if got < 0 {
            -1
        } else {
            got
        }
    }
}

/// The job is over here: remove its shared-memory files and go.
fn finish(ranks: &mut [Local], output: &OwnedFd, kvs: &str) -> ! {
    reap(ranks, output);
    cleanup_shm(kvs);
    std::process::exit(0);
}
