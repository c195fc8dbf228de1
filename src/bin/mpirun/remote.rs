//! The other hosts of a job, seen from mpirun: which names are this host,
//! the address the other hosts reach mpirun's PMI listener on, the job's
//! secret, and starting each host's proxy through ssh or the launcher agent.

use crate::proto;
use oxmpi::bootstrap::wire::Msg;
use std::net::{IpAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// Another host's part of the job: its proxy, started through the agent.
pub(crate) struct Remote {
    pub(crate) host: String,
    /// The agent's pid (ssh, or the launcher agent); 0 once reaped.
    pub(crate) agent: i32,
    /// The proxy's stdout.
    pub(crate) from: Option<OwnedFd>,
    pub(crate) lines: proto::Lines,
    /// The ranks it runs.
    pub(crate) ranks: Vec<usize>,
}

/// Whether `host` names this host: `localhost`, this hostname (or its
/// first label), or a name whose address is one of this host's.
pub(crate) fn is_local(host: &str) -> bool {
    let me = oxmpi::sys::hostname();
    let short = |h: &str| h.split('.').next().unwrap_or(h).to_ascii_lowercase();
    if host == "localhost" || host.eq_ignore_ascii_case(&me) || short(host) == short(&me) {
        return true;
    }
    let Ok(addrs) = (host, 0).to_socket_addrs() else {
        return false;
    };
    addrs
        .map(|a| a.ip())
        .any(|ip| !ip.is_unspecified() && UdpSocket::bind((ip, 0)).is_ok())
}

/// The address of this host on the route to `host` (the cluster interface
/// that host reaches us through).
pub(crate) fn route_to(host: &str) -> Option<IpAddr> {
    let addr = (host, 9).to_socket_addrs().ok()?.find(|a| a.is_ipv4())?;
    let s = UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect(addr).ok()?;
    Some(s.local_addr().ok()?.ip())
}

/// A fresh secret for the job, which its ranks present when they connect.
pub(crate) fn secret() -> String {
    let mut b = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut b);
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Compares two secrets in time independent of where they differ.
pub(crate) fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// The command line that starts a proxy on `host`: `AGENT HOST COMMAND`,
/// COMMAND one string for the remote shell (ssh joins its arguments; an
/// agent runs it through sh -c).
pub(crate) fn agent_argv(launcher: Option<&str>, host: &str, proxy: &str) -> Vec<String> {
    let cmd = format!("{} --oxmpi-proxy", sh_quote(proxy));
    match launcher {
        None | Some("ssh") => vec![
            "ssh".into(),
            "-x".into(),
            "-o".into(),
            "BatchMode=yes".into(),
            host.into(),
            cmd,
        ],
        Some(a) => vec![a.into(), host.into(), cmd],
    }
}

/// `s` quoted for a POSIX shell.
pub(crate) fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Starts the agent for one host; its stdin and stdout are the proxy's.
/// It runs in its own process group (a Ctrl-C at the terminal reaches
/// mpirun, which forwards it, not ssh) and dies with mpirun.
pub(crate) fn start_agent(argv: &[String]) -> std::io::Result<(i32, OwnedFd, OwnedFd)> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    // SAFETY: setpgid and prctl are async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::setpgid(0, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut ch = cmd.spawn()?;
    let pid = ch.id() as i32;
    let to = OwnedFd::from(ch.stdin.take().expect("piped stdin"));
    let from = OwnedFd::from(ch.stdout.take().expect("piped stdout"));
    std::mem::forget(ch); // reaped with waitpid
    Ok((pid, to, from))
}

/// Variables of mpirun's environment that describe mpirun's own host or
/// session and are not passed to the ranks on other hosts.
pub(crate) fn host_specific(k: &str) -> bool {
    matches!(
        k,
        "HOSTNAME"
            | "HOST"
            | "PWD"
            | "OLDPWD"
            | "SHLVL"
            | "_"
            | "DISPLAY"
            | "XAUTHORITY"
            | "TMUX"
            | "TERMCAP"
    ) || k.starts_with("SSH_")
        || k.starts_with("PMI_")
        || k.starts_with("MPI_LOCAL")
        || k == "OXMPI_JOB"
        || k == "OXMPI_NODE_CPUS"
        || k == "OXMPI_PMI_SECRET"
}

/// A message with one encoded value.
pub(crate) fn kv(cmd: &str, pairs: &[(&str, &str)]) -> Msg {
    let mut m = Msg::new(cmd);
    for (k, v) in pairs {
        m = m.with(k, proto::enc(v.as_bytes()));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_command_lines() {
        assert_eq!(
            agent_argv(None, "n2", "/opt/ox mpi/bin/mpirun"),
            vec![
                "ssh",
                "-x",
                "-o",
                "BatchMode=yes",
                "n2",
                "'/opt/ox mpi/bin/mpirun' --oxmpi-proxy"
            ]
        );
        assert_eq!(
            agent_argv(Some("/x/agent"), "n2", "/p/mpirun"),
            vec!["/x/agent", "n2", "'/p/mpirun' --oxmpi-proxy"]
        );
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert!(same_secret("abc", "abc") && !same_secret("abc", "abd") && !same_secret("a", "ab"));
        assert!(is_local("localhost") && is_local(&oxmpi::sys::hostname()));
        assert!(host_specific("SSH_CLIENT") && host_specific("PMI_FD") && !host_specific("PATH"));
    }
}
