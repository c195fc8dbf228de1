//! Sets the SONAME of the C library and generates mpi.h.
//!
//! The header is generated into $OUT_DIR/mpi.h from the sources by cbindgen
//! (cbindgen.toml), with a `PMPI_` prototype added for every `MPI_` function.
//! `make header` copies it to include/mpi.h; tests/header.rs fails when the
//! committed header differs from the generated one.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi.so.12");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let out = std::env::var("OUT_DIR").unwrap();
    let cfg = cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")).expect("cbindgen.toml");
    let mut buf = Vec::new();
    match cbindgen::Builder::new()
        .with_crate(&dir)
        .with_config(cfg)
        .generate()
    {
        Ok(b) => {
            b.write(&mut buf);
        }
        Err(e) => {
            println!("cargo:warning=cbindgen failed: {e}");
            return;
        }
    }
    let text = String::from_utf8(buf).unwrap();
    std::fs::write(format!("{out}/mpi.h"), add_pmpi(&text)).unwrap();
}

/// After the block of MPI_ prototypes, repeats each as PMPI_.
fn add_pmpi(h: &str) -> String {
    let marker = "/* PMPI */";
    let mut protos = Vec::new();
    let mut cur: Option<String> = None;
    for line in h.lines() {
        if let Some(c) = cur.as_mut() {
            c.push('\n');
            c.push_str(line);
            if line.trim_end().ends_with(';') {
                protos.push(cur.take().unwrap());
            }
            continue;
        }
        // A prototype: "<return type> MPI_Xxx(" at the start of a line.
        let is_proto = !line.starts_with(' ')
            && !line.starts_with('#')
            && !line.starts_with("typedef")
            && line.split_once('(').is_some_and(|(head, _)| {
                head.rsplit(' ')
                    .next()
                    .is_some_and(|n| n.starts_with("MPI_"))
            });
        if is_proto {
            if line.trim_end().ends_with(';') {
                protos.push(line.to_string());
            } else {
                cur = Some(line.to_string());
            }
        }
    }
    let mut p = String::from("/* Profiling interface: every MPI_ function is also PMPI_. */\n");
    for pr in protos {
        let name_end = pr.find('(').unwrap();
        let i = pr[..name_end].rfind(' ').unwrap() + 1;
        let fixed = format!("{}P{}{}", &pr[..i], &pr[i..name_end], &pr[name_end..]);
        // Re-indent continuation lines for the one extra character.
        p.push_str(&fixed.replace("\n ", "\n  "));
        p.push_str("\n\n");
    }
    h.replace(marker, &p)
}
