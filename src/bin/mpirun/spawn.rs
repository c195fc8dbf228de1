//! Starting ranks on this host: sockets, process groups, CPU binding,
//! and the job's shared-memory files.

use crate::args::Bind;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

pub(crate) fn socketpair() -> (OwnedFd, OwnedFd) {
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

pub(crate) fn kill_group(pgid: i32, sig: i32) {
    if pgid > 0 {
        // SAFETY: signalling our own job's process group.
        unsafe { libc::kill(-pgid, sig) };
    }
}

pub(crate) fn cleanup_shm(kvs: &str) {
    let prefix = format!("oxmpi-{kvs}-");
    if let Ok(d) = std::fs::read_dir("/dev/shm") {
        for e in d.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
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
pub(crate) fn cpu_of(r: usize, n: usize, ncpus: usize) -> usize {
    if n <= ncpus {
        r
    } else {
        r * ncpus / n
    }
}

/// An empty CPU set.
pub(crate) fn unsafe_zeroed_set() -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data; all zeroes is the empty set.
    unsafe { std::mem::zeroed() }
}

/// The CPUs of `allowed` in the same domain as `cpu` (by `domain_of`).
pub(crate) fn same_domain(
    allowed: &[usize],
    cpu: usize,
    domain_of: fn(usize) -> i64,
) -> Vec<usize> {
    let d = domain_of(cpu);
    allowed
        .iter()
        .copied()
        .filter(|&c| domain_of(c) == d)
        .collect()
}

/// "0-3,6" for a sorted CPU list.
pub(crate) fn cpu_list(v: &[usize]) -> String {
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
pub(crate) fn allowed_cpus() -> Vec<usize> {
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

/// What a rank's stdin is.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum In {
    /// mpirun's own (rank 0 on mpirun's host).
    Inherit,
    Null,
    /// A pipe the caller writes (rank 0 on another host, fed by its proxy).
    Pipe,
}

/// How to start one rank on this host.
pub(crate) struct Launch<'a> {
    pub(crate) prog: &'a [String],
    pub(crate) wdir: Option<&'a str>,
    /// Set on top of the inherited environment.
    pub(crate) env: Vec<(String, String)>,
    /// A descriptor the rank inherits (its PMI socket).
    pub(crate) keep_fd: Option<RawFd>,
    pub(crate) stdin: In,
    /// Stdout and stderr through pipes (else inherited).
    pub(crate) pipe_output: bool,
    /// The job's process group (0: the rank starts it).
    pub(crate) pgid: i32,
    /// CPUs to pin it to (empty: not pinned).
    pub(crate) cpus: &'a [usize],
}

pub(crate) struct Started {
    pub(crate) pid: i32,
    pub(crate) stdin: Option<OwnedFd>,
    pub(crate) out: Option<OwnedFd>,
    pub(crate) err: Option<OwnedFd>,
}

/// Starts a rank: in the job's process group, pinned, and killed by the
/// kernel if this process dies first (so a killed mpirun or proxy leaves no
/// rank behind).
pub(crate) fn start(l: &Launch) -> std::io::Result<Started> {
    let mut cmd = Command::new(&l.prog[0]);
    cmd.args(&l.prog[1..]);
    for (k, v) in &l.env {
        cmd.env(k, v);
    }
    if let Some(d) = l.wdir {
        cmd.current_dir(d);
    }
    match l.stdin {
        In::Inherit => {}
        In::Null => {
            cmd.stdin(Stdio::null());
        }
        In::Pipe => {
            cmd.stdin(Stdio::piped());
        }
    }
    if l.pipe_output {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    let mut mask: libc::cpu_set_t = unsafe_zeroed_set();
    for &c in l.cpus {
        // SAFETY: c is a CPU number from sched_getaffinity, below CPU_SETSIZE.
        unsafe { libc::CPU_SET(c, &mut mask) };
    }
    let pin = !l.cpus.is_empty();
    let keep = l.keep_fd;
    let group = l.pgid;
    // SAFETY: between fork and exec we only call async-signal-safe functions
    // (fcntl, setpgid, prctl, sched_setaffinity) on values computed before
    // the fork.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(fd) = keep {
                libc::fcntl(fd, libc::F_SETFD, 0);
            }
            libc::setpgid(0, group);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if pin {
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mask);
            }
            Ok(())
        });
    }
    let mut ch = cmd.spawn()?;
    let pid = ch.id() as i32;
    // SAFETY: also set from the parent to close the race with exec.
    unsafe { libc::setpgid(pid, if group == 0 { pid } else { group }) };
    let s = Started {
        pid,
        stdin: ch.stdin.take().map(OwnedFd::from),
        out: ch.stdout.take().map(OwnedFd::from),
        err: ch.stderr.take().map(OwnedFd::from),
    };
    std::mem::forget(ch); // reaped with waitpid by the caller
    Ok(s)
}

/// The CPUs rank `local` of `nlocal` on this host is pinned to under `bind`
/// (empty: not pinned).
pub(crate) fn binding(bind: Bind, allowed: &[usize], local: usize, nlocal: usize) -> Vec<usize> {
    if bind == Bind::None || allowed.is_empty() {
        return Vec::new();
    }
    let cpu = allowed[cpu_of(local, nlocal, allowed.len())];
    match bind {
        Bind::Socket => same_domain(allowed, cpu, oxmpi::sys::package_of),
        Bind::Numa => same_domain(allowed, cpu, oxmpi::sys::numa_of),
        _ => vec![cpu],
    }
}

/// The rank's exit as (code, words): 128+N for a signal.
pub(crate) fn exit_of(status: i32) -> (i32, String) {
    if libc::WIFSIGNALED(status) {
        let s = libc::WTERMSIG(status);
        (128 + s, format!("was killed by signal {s}"))
    } else {
        let c = libc::WEXITSTATUS(status);
        (c, format!("exited with code {c}"))
    }
}
