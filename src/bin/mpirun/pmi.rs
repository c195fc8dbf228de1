//! The PMI-1 server: the job's key-value store, barrier, finalize and abort.

use crate::spawn::kill_group;
use crate::{Rank, RankState};
use oxmpi::bootstrap::wire::{self, Msg};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

pub(crate) fn write_line(fd: &OwnedFd, m: &Msg) {
    let s = m.encode();
    // SAFETY: writing a buffer we own to an open socket.
    unsafe { libc::write(fd.as_raw_fd(), s.as_ptr() as *const libc::c_void, s.len()) };
}

/// Reads and handles every PMI line an exited rank left in its socket.
#[allow(clippy::too_many_arguments)]
pub(crate) fn drain_pmi(
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
pub(crate) fn handle_pmi(
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
