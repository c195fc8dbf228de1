//! Forwarding a rank's output, line by line, optionally tagged with its rank.

use std::io::Write;

#[allow(clippy::too_many_arguments)]
pub(crate) fn forward(
    buf: &mut Vec<u8>,
    data: &[u8],
    rank: usize,
    tag: bool,
    to_err: bool,
    flush_all: bool,
    file: Option<&mut std::fs::File>,
) {
    let mut w: Box<dyn Write + '_> = match file {
        Some(f) => Box::new(f),
        None if to_err => Box::new(std::io::stderr().lock()),
        None => Box::new(std::io::stdout().lock()),
    };
    if !tag {
        // Untagged output passes as it comes (a prompt without a newline too).
        let _ = w.write_all(data);
        let _ = w.flush();
        return;
    }
    buf.extend_from_slice(data);
    while let Some(i) = buf.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = buf.drain(..=i).collect();
        if tag {
            let _ = write!(w, "[{rank}] ");
        }
        let _ = w.write_all(&line);
    }
    if flush_all && !buf.is_empty() {
        if tag {
            let _ = write!(w, "[{rank}] ");
        }
        let _ = w.write_all(buf);
        let _ = w.write_all(b"\n");
        buf.clear();
    }
    let _ = w.flush();
}
