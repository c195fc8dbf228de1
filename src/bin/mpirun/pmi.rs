//! The PMI-1 server: the job's key-value store, barrier, finalize and abort,
//! and the job's fate (the first failure, the exit code, the kill).

use crate::proto;
use crate::spawn::kill_group;
use crate::{Rank, RankState};
use oxmpi::bootstrap::wire::{self, Msg};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// What the server keeps for the whole job.
pub(crate) struct Job {
    pub(crate) kvs: String,
    pub(crate) n: usize,
    /// `PMI_process_mapping`.
    pub(crate) mapping: String,
    pub(crate) kv: HashMap<String, String>,
    /// The summary printed at the end (the first failure).
    pub(crate) failure: Option<String>,
    pub(crate) exit_code: Option<i32>,
    /// Set when the kill started (SIGTERM; SIGKILL a second later).
    pub(crate) killing_since: Option<Instant>,
    /// The process group of the ranks on this host.
    pub(crate) pgid: i32,
    /// The stdin of each other host's proxy (None once closed).
    pub(crate) proxies: Vec<Option<OwnedFd>>,
    /// The hang report asked for (when, and why), and each rank's answer.
    pub(crate) hang_asked: Option<(Instant, crate::hang::Why)>,
    pub(crate) hang: Vec<Option<String>>,
}

impl Job {
    /// Sends `sig` to every rank, on every host.
    pub(crate) fn signal(&self, sig: i32) {
        kill_group(self.pgid, sig);
        for p in self.proxies.iter().flatten() {
            proto::send(p, &Msg::new("signal").with("sig", sig));
        }
    }

    /// The job failed: the first failure is the one reported and sets the
    /// exit code; the job is killed everywhere.
    pub(crate) fn fail(&mut self, why: String, code: i32) {
        if self.killing_since.is_none() {
            self.failure = Some(why);
            self.exit_code = Some(code);
            self.signal(libc::SIGTERM);
            self.killing_since = Some(Instant::now());
        } else {
            self.exit_code.get_or_insert(code);
        }
    }
}

/// Reads and handles every PMI line an exited rank left in its socket; for
/// a rank on another host, waits up to `wait` for its socket to close (its
/// last lines may still be on the way).
pub(crate) fn drain_pmi(
    ranks: &mut [Rank],
    i: usize,
    appnum: usize,
    job: &mut Job,
    wait: Duration,
) {
    let Some(fd) = ranks[i].pmi.as_ref().map(|f| f.as_raw_fd()) else {
        return;
    };
    let deadline = Instant::now() + wait;
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
        if got > 0 {
            ranks[i].rbuf.extend_from_slice(&buf[..got as usize]);
            continue;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if got == 0 || left.is_zero() {
            break;
        }
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, left.as_millis().max(1) as i32) };
    }
    handle_lines(ranks, i, appnum, job);
}

/// Handles every whole line rank `i` has sent (lines that do not parse
/// are dropped).
pub(crate) fn handle_lines(ranks: &mut [Rank], i: usize, appnum: usize, job: &mut Job) {
    while let Some(pos) = ranks[i].rbuf.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = ranks[i].rbuf.drain(..=pos).collect();
        if let Ok(m) = wire::parse(&line) {
            handle_pmi(ranks, i, appnum, &m, job);
        }
    }
}

pub(crate) fn handle_pmi(ranks: &mut [Rank], i: usize, appnum: usize, m: &Msg, job: &mut Job) {
    let reply = |ranks: &[Rank], i: usize, r: Msg| {
        if let Some(fd) = ranks[i].pmi.as_ref() {
            proto::send(fd, &r);
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
            Msg::new("universe_size").with("rc", 0).with("size", job.n),
        ),
        "get_my_kvsname" => reply(
            ranks,
            i,
            Msg::new("my_kvsname")
                .with("rc", 0)
                .with("kvsname", &job.kvs),
        ),
        "put" => {
            if let (Some(k), Some(v)) = (m.get("key"), m.get("value")) {
                job.kv.insert(k.to_string(), v.to_string());
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
                Some(job.mapping.clone())
            } else {
                job.kv.get(k).cloned()
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
            let why = format!(
                "mpirun: rank {i} called MPI_Abort with error code {code}{}; killing the job",
                m.get("message")
                    .map(|s| format!(" ({})", wire::text_decode(s)))
                    .unwrap_or_default()
            );
            if job.killing_since.is_none() {
                job.fail(why, if code == 0 { 1 } else { code });
            }
        }
        "oxmpi_hang" => {
            if let Some(t) = m.get("text") {
                job.hang[i] = Some(wire::text_decode(t));
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
