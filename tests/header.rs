//! The committed include/mpi.h must equal the header build.rs generates from
//! the sources (run `make header` after changing the C API).
#[test]
fn committed_header_is_fresh() {
    let generated = include_str!(concat!(env!("OUT_DIR"), "/mpi.h"));
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/mpi.h")).unwrap();
    assert!(
        generated == committed,
        "include/mpi.h is stale: run `make header` and commit it"
    );
}

/// Every MPI_ function in the header has its PMPI_ twin.
#[test]
fn header_declares_pmpi_for_every_function() {
    let h = include_str!(concat!(env!("OUT_DIR"), "/mpi.h"));
    let mut n = 0;
    for line in h.lines() {
        if let Some(i) = line.find(" MPI_") {
            let rest = &line[i + 1..];
            if let Some(p) = rest.find('(') {
                let name = &rest[..p];
                if !line.starts_with('#')
                    && !line.starts_with(' ')
                    && !name.contains(' ')
                    && line.ends_with(',')
                    || line.ends_with(");")
                        && !line.starts_with('#')
                        && !line.starts_with("typedef")
                        && !line.starts_with(' ')
                {
                    let name = name.trim();
                    assert!(h.contains(&format!(" P{name}(")), "no PMPI twin for {name}");
                    n += 1;
                }
            }
        }
    }
    assert!(n >= 60, "only {n} prototypes found");
}
