//! PMI-1 client: rank, size, key-value exchange and barrier through the
//! process manager (our mpirun, MPICH's Hydra, Slurm's srun --mpi=pmi2).
//!
//! Owns the PMI socket. Calls only `sys` and `bootstrap::wire`. Finds its server
//! through `PMI_FD` (inherited socket), else `PMI_PORT` (+`PMI_ID`), else runs
//! as a singleton (size 1, a private key-value store).
//! Each request is one `write` of one line, answered before the next is sent
//! (Slurm reads a request with a single `read`).

use super::wire::{self, Msg};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::fd::FromRawFd;

enum Conn {
    Unix(std::os::unix::net::UnixStream),
    Tcp(std::net::TcpStream),
}

impl Conn {
    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            Conn::Unix(s) => s.write_all(b),
            Conn::Tcp(s) => s.write_all(b),
        }
    }
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => s.read(b),
            Conn::Tcp(s) => s.read(b),
        }
    }
}

pub struct Pmi {
    conn: Option<Conn>,
    rbuf: Vec<u8>,
    pub rank: i32,
    pub size: i32,
    pub appnum: i32,
    pub universe_size: i32,
    pub kvsname: String,
    local: HashMap<String, String>,
}

fn io_err(msg: String) -> io::Error {
    io::Error::other(msg)
}

impl Pmi {
    /// Connects to the process manager named by the environment, or becomes a singleton.
    pub fn init() -> io::Result<Pmi> {
        let mut p = Pmi {
            conn: None,
            rbuf: Vec::new(),
            rank: 0,
            size: 1,
            appnum: 0,
            universe_size: 1,
            kvsname: format!("singinit_kvs_{}_0", crate::sys::pid()),
            local: HashMap::new(),
        };
        if let Ok(fd) = std::env::var("PMI_FD") {
            let fd: i32 = fd
                .trim()
                .parse()
                .map_err(|_| io_err(format!("bad PMI_FD={fd}")))?;
            // SAFETY: PMI_FD names a connected stream socket that the process manager
            // gave us to own; nothing else in this process uses it.
            let s = unsafe { std::os::unix::net::UnixStream::from_raw_fd(fd) };
            p.conn = Some(Conn::Unix(s));
            p.rank = env_int("PMI_RANK")?;
            p.size = env_int("PMI_SIZE")?;
        } else if let Ok(port) = std::env::var("PMI_PORT") {
            let s = std::net::TcpStream::connect(port.trim())?;
            s.set_nodelay(true).ok();
            p.conn = Some(Conn::Tcp(s));
            let id = std::env::var("PMI_ID").unwrap_or_else(|_| "0".into());
            let mut hello = Msg::new("initack").with("pmiid", id);
            // Our mpirun accepts a rank on another host only with the job's
            // secret, which it put in the rank's environment.
            if let Ok(s) = std::env::var("OXMPI_PMI_SECRET") {
                hello = hello.with("secret", s);
            }
            p.send(&hello)?;
            for _ in 0..4 {
                let m = p.recv()?;
                match (m.cmd(), m.get("size"), m.get("rank")) {
                    ("set", Some(s), _) => p.size = s.parse().unwrap_or(1),
                    ("set", _, Some(r)) => p.rank = r.parse().unwrap_or(0),
                    _ => {}
                }
            }
        } else {
            return Ok(p);
        }
        let r = p.call(
            &Msg::new("init")
                .with("pmi_version", 1)
                .with("pmi_subversion", 1),
        )?;
        if r.cmd() != "response_to_init" || r.rc() != 0 {
            return Err(io_err(format!("PMI init refused: {}", r.encode().trim())));
        }
        let r = p.call(&Msg::new("get_my_kvsname"))?;
        p.kvsname = r.get("kvsname").unwrap_or("kvs").to_string();
        let r = p.call(&Msg::new("get_appnum"))?;
        p.appnum = r.get("appnum").and_then(|v| v.parse().ok()).unwrap_or(0);
        let r = p.call(&Msg::new("get_universe_size"))?;
        p.universe_size = r.get("size").and_then(|v| v.parse().ok()).unwrap_or(-1);
        Ok(p)
    }

    pub fn is_singleton(&self) -> bool {
        self.conn.is_none()
    }

    fn send(&mut self, m: &Msg) -> io::Result<()> {
        let line = m.encode();
        if line.len() > wire::MAX_LINE {
            return Err(io_err(format!("PMI line too long ({} bytes)", line.len())));
        }
        match self.conn.as_mut() {
            Some(c) => c.write_all(line.as_bytes()),
            None => Err(io_err("no PMI server".into())),
        }
    }

    fn recv(&mut self) -> io::Result<Msg> {
        loop {
            if let Some(i) = self.rbuf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.rbuf.drain(..=i).collect();
                match wire::parse(&line) {
                    Ok(m) => return Ok(m),
                    Err(e) => return Err(io_err(format!("malformed PMI reply: {e:?}"))),
                }
            }
            let mut b = [0u8; 1024];
            let conn = self
                .conn
                .as_mut()
                .ok_or_else(|| io_err("no PMI server".into()))?;
            let n = conn.read(&mut b)?;
            if n == 0 {
                return Err(io_err("PMI server closed the connection".into()));
            }
            self.rbuf.extend_from_slice(&b[..n]);
        }
    }

    fn call(&mut self, m: &Msg) -> io::Result<Msg> {
        self.send(m)?;
        self.recv()
    }

    pub fn put(&mut self, key: &str, value: &str) -> io::Result<()> {
        if self.conn.is_none() {
            self.local.insert(key.into(), value.into());
            return Ok(());
        }
        let kvs = self.kvsname.clone();
        let r = self.call(
            &Msg::new("put")
                .with("kvsname", kvs)
                .with("key", key)
                .with("value", value),
        )?;
        if r.rc() != 0 {
            return Err(io_err(format!(
                "PMI put {key} failed: {}",
                r.encode().trim()
            )));
        }
        Ok(())
    }

    pub fn get(&mut self, key: &str) -> io::Result<Option<String>> {
        if self.conn.is_none() {
            return Ok(self.local.get(key).cloned());
        }
        let kvs = self.kvsname.clone();
        let r = self.call(&Msg::new("get").with("kvsname", kvs).with("key", key))?;
        if r.rc() != 0 || r.get("found") == Some("FALSE") {
            return Ok(None);
        }
        Ok(r.get("value").map(|s| s.to_string()))
    }

    pub fn barrier(&mut self) -> io::Result<()> {
        if self.conn.is_none() {
            return Ok(());
        }
        let r = self.call(&Msg::new("barrier_in"))?;
        if r.cmd() != "barrier_out" || r.rc() != 0 {
            return Err(io_err(format!("PMI barrier failed: {}", r.encode().trim())));
        }
        Ok(())
    }

    pub fn finalize(&mut self) -> io::Result<()> {
        if self.conn.is_none() {
            return Ok(());
        }
        let r = self.call(&Msg::new("finalize"));
        self.conn = None;
        r.map(|_| ())
    }

    /// Sends this rank's part of a hang report (OxMPI's own mpirun asked for
    /// it); does not wait for an answer.
    pub fn hang_note(&mut self, text: &str) {
        let _ = self.send(&Msg::new("oxmpi_hang").with("text", super::wire::text_encode(text)));
    }

    /// Asks the process manager to kill the job; does not wait for an answer.
    pub fn abort(&mut self, code: i32, msg: &str) {
        // Encoded so that mpirun can give it back as it was (`wire::text_decode`).
        let m: String = msg.chars().take(300).collect();
        let _ = self.send(
            &Msg::new("abort")
                .with("exitcode", code)
                .with("message", super::wire::text_encode(&m)),
        );
    }
}

fn env_int(k: &str) -> io::Result<i32> {
    let v = std::env::var(k).map_err(|_| io_err(format!("{k} is not set")))?;
    v.trim().parse().map_err(|_| io_err(format!("bad {k}={v}")))
}
