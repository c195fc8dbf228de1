//! The PMI-1 "simple" wire format: `cmd=NAME key=value ...\n`, at most 1024 bytes.
//!
//! Shared by the PMI client (bootstrap::pmi) and the server in `mpirun`.
//! Parser rules follow MPICH's: tokens separated by spaces, key up to the first
//! `=`, the value may contain `=` but no space; a token without `=` makes the
//! line malformed.

/// Longest line either side sends or accepts, including the newline.
pub const MAX_LINE: usize = 1024;

/// One parsed line: the pairs in order (`cmd` or `mcmd` first).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Msg {
    pub pairs: Vec<(String, String)>,
}

impl Msg {
    pub fn new(cmd: &str) -> Msg {
        Msg {
            pairs: vec![("cmd".into(), cmd.into())],
        }
    }

    pub fn with(mut self, k: &str, v: impl ToString) -> Msg {
        self.pairs.push((k.into(), v.to_string()));
        self
    }

    pub fn get(&self, k: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(kk, _)| kk == k)
            .map(|(_, v)| v.as_str())
    }

    pub fn cmd(&self) -> &str {
        self.get("cmd").unwrap_or("")
    }

    /// `rc` as servers send it: missing means success.
    pub fn rc(&self) -> i64 {
        self.get("rc").and_then(|v| v.parse().ok()).unwrap_or(0)
    }

    /// Serialises with a trailing newline. Values must not contain spaces or newlines.
    pub fn encode(&self) -> String {
        let mut s = String::new();
        for (i, (k, v)) in self.pairs.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(k);
            s.push('=');
            s.push_str(v);
        }
        s.push('\n');
        s
    }
}

/// Why a line was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    TooLong,
    Empty,
    NoEquals(String),
    NotUtf8,
}

/// Parses one line (without or with its trailing newline).
pub fn parse(line: &[u8]) -> Result<Msg, ParseError> {
    if line.len() > MAX_LINE {
        return Err(ParseError::TooLong);
    }
    let s = std::str::from_utf8(line).map_err(|_| ParseError::NotUtf8)?;
    let s = s.trim_end_matches(['\n', '\r']);
    let mut pairs = Vec::new();
    for tok in s.split(' ').filter(|t| !t.is_empty()) {
        match tok.find('=') {
            Some(0) | None => return Err(ParseError::NoEquals(tok.chars().take(64).collect())),
            Some(i) => pairs.push((tok[..i].to_string(), tok[i + 1..].to_string())),
        }
    }
    if pairs.is_empty() {
        return Err(ParseError::Empty);
    }
    Ok(Msg { pairs })
}

/// Text as a PMI value that reads almost as it is: space, `=`, `%` and
/// control characters as `%XX` (the rest, `_` included, unchanged).
pub fn text_encode(t: &str) -> String {
    let mut s = String::with_capacity(t.len());
    for c in t.chars() {
        if c == ' ' || c == '=' || c == '%' || c.is_control() {
            for b in c.to_string().bytes() {
                s.push_str(&format!("%{b:02X}"));
            }
        } else {
            s.push(c);
        }
    }
    s
}

/// The text `text_encode` encoded (a stray `%` stays as it is).
pub fn text_decode(s: &str) -> String {
    String::from_utf8_lossy(&percent_decode(s)).into_owned()
}

/// The bytes of a %XX-encoded value (`text_encode`, or mpirun's byte-wise
/// encoding of its proxies' lines); a `%` not followed by two hex digits
/// stands for itself.
pub fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = (b[i] == b'%' && i + 2 < b.len())
            .then(|| std::str::from_utf8(&b[i + 1..i + 3]).ok())
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(v) => {
                out.push(v);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

/// Encodes bytes so that they can travel as a PMI value (no spaces, no `=` issues).
pub fn hex_encode(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_survives_the_wire() {
        for t in [
            "MPI_Win_create: not implemented (rank 3)",
            "a=b 100% _x_",
            "tab\there",
            "",
        ] {
            let e = text_encode(t);
            assert!(!e.contains(' ') && !e.contains('='), "{e}");
            assert_eq!(text_decode(&e), t);
        }
        assert_eq!(text_encode("MPI_Send x"), "MPI_Send%20x");
        assert_eq!(text_decode("50%"), "50%");
    }

    #[test]
    fn parses_real_server_lines() {
        let m = parse(b"cmd=get_result rc=0 msg=success value=hello=from;1\n").unwrap();
        assert_eq!(m.cmd(), "get_result");
        assert_eq!(m.get("value"), Some("hello=from;1"));
        assert_eq!(m.rc(), 0);
        let m = parse(b"cmd=barrier_out").unwrap();
        assert_eq!(m.rc(), 0);
        let m = parse(b"cmd=get_result rc=-1 msg=key_x_not_found value=unknown").unwrap();
        assert_eq!(m.rc(), -1);
        let m = parse(b"cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1").unwrap();
        assert_eq!(m.get("pmi_version"), Some("1"));
    }

    #[test]
    fn rejects_malformed() {
        assert_eq!(
            parse(b"cmd=put novalue"),
            Err(ParseError::NoEquals("novalue".into()))
        );
        assert_eq!(parse(b"   \n"), Err(ParseError::Empty));
        assert_eq!(parse(&[b'a'; 2000]), Err(ParseError::TooLong));
        assert_eq!(parse(b"=x"), Err(ParseError::NoEquals("=x".into())));
        assert_eq!(parse(&[0xff, b'=', b'1']), Err(ParseError::NotUtf8));
    }

    #[test]
    fn round_trip() {
        let m = Msg::new("put")
            .with("kvsname", "k")
            .with("key", "a")
            .with("value", "b=c");
        assert_eq!(parse(m.encode().as_bytes()).unwrap(), m);
        let b: Vec<u8> = (0..=255).collect();
        assert_eq!(hex_decode(&hex_encode(&b)).unwrap(), b);
        assert_eq!(hex_decode("zz"), None);
    }

    /// Pseudo-random lines never panic the parser (cheap stand-in for the fuzz corpus).
    #[test]
    fn random_lines_never_panic() {
        let mut x = 0x1234_5678_9abc_def0u64;
        for _ in 0..20000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 1100) as usize;
            let alphabet = b"cmd= key=valu\n\r \xff\x00";
            let line: Vec<u8> = (0..len)
                .map(|i| alphabet[((x >> (i % 60)) as usize + i) % alphabet.len()])
                .collect();
            let _ = parse(&line);
        }
    }
}
