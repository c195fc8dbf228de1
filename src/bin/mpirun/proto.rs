//! The lines mpirun and its proxies on other hosts exchange through the
//! launcher agent's stdin and stdout: PMI's `key=value` form, values with
//! spaces, `=`, `%`, control and non-ASCII bytes as `%XX` (so any bytes of
//! a rank's output survive), no length limit.

use oxmpi::bootstrap::wire::Msg;
use std::os::fd::{AsRawFd, OwnedFd};

/// Bytes as a value without spaces, `=` or newlines.
pub(crate) fn enc(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len());
    for &c in b {
        if c <= b' ' || c == b'=' || c == b'%' || c >= 0x7f {
            s.push_str(&format!("%{c:02X}"));
        } else {
            s.push(c as char);
        }
    }
    s
}

/// The bytes `enc` made.
pub(crate) fn dec(s: &str) -> Vec<u8> {
    oxmpi::bootstrap::wire::percent_decode(s)
}

/// A decoded value as text.
pub(crate) fn dec_str(s: &str) -> String {
    String::from_utf8_lossy(&dec(s)).into_owned()
}

/// Writes one message, whole (retrying short writes and EINTR). A peer
/// that has gone is not an error here: its end shows as EOF or an exit.
pub(crate) fn send(fd: &OwnedFd, m: &Msg) {
    let s = m.encode();
    let mut b = s.as_bytes();
    while !b.is_empty() {
        // SAFETY: writing a buffer we own to an open descriptor.
        let w = unsafe { libc::write(fd.as_raw_fd(), b.as_ptr() as *const libc::c_void, b.len()) };
        if w > 0 {
            b = &b[w as usize..];
        } else if w < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        {
            continue;
        } else {
            return;
        }
    }
}

/// Splits a byte stream into messages.
#[derive(Default)]
pub(crate) struct Lines {
    buf: Vec<u8>,
}

impl Lines {
    pub(crate) fn feed(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The next whole line as a message (lines that are not `key=value`
    /// pairs are skipped).
    pub(crate) fn next_msg(&mut self) -> Option<Msg> {
        while let Some(pos) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=pos).collect();
            if let Some(m) = parse(&line) {
                return Some(m);
            }
        }
        None
    }
}

fn parse(line: &[u8]) -> Option<Msg> {
    let s = std::str::from_utf8(line)
        .ok()?
        .trim_end_matches(['\n', '\r']);
    let mut m = Msg { pairs: Vec::new() };
    for tok in s.split(' ').filter(|t| !t.is_empty()) {
        let (k, v) = tok.split_once('=')?;
        m.pairs.push((k.to_string(), v.to_string()));
    }
    (!m.pairs.is_empty()).then_some(m)
}

/// Reads what is there (up to `buf`'s size); 0 at EOF or on an error.
pub(crate) fn read_some(fd: &OwnedFd, buf: &mut [u8]) -> usize {
    loop {
        // SAFETY: reading into our buffer from an open descriptor.
        let got = unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
            )
        };
        if got < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return got.max(0) as usize;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_bytes_survive() {
        let all: Vec<u8> = (0..=255u8).collect();
        let e = enc(&all);
        assert!(!e.contains(' ') && !e.contains('=') && !e.contains('\n'));
        assert_eq!(dec(&e), all);
        assert_eq!(enc(b"a b=c\n"), "a%20b%3Dc%0A");
        assert_eq!(dec("100%"), b"100%");
        let mut l = Lines::default();
        let m = Msg::new("out").with("data", enc(b"line one\nline two\n"));
        let s = m.encode();
        l.feed(&s.as_bytes()[..5]);
        assert!(l.next_msg().is_none());
        l.feed(&s.as_bytes()[5..]);
        l.feed(b"garbage\n");
        let got = l.next_msg().unwrap();
        assert_eq!(dec(got.get("data").unwrap()), b"line one\nline two\n");
        assert!(l.next_msg().is_none());
    }
}
