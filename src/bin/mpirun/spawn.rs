//! Starting ranks on this host: sockets, process groups, CPU binding,
//! and the job's shared-memory files.

use std::os::fd::{FromRawFd, OwnedFd};

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
