//! Every reduction kernel compiles with NVRTC (for sm_80 and sm_90) and
//! every kernel name is in its CUBIN. NVRTC is found as `OXMPI_NVRTC_LIB`
//! or `libnvrtc.so.12` (the `nvidia-cuda-nvrtc-cu12` wheel in CI); without
//! it the test skips, unless `OXMPI_NVRTC_REQUIRED=1` (CI sets it).

use oxmpi::gpu::kernels;

#[test]
fn every_kernel_compiles_with_nvrtc() {
    let required = std::env::var("OXMPI_NVRTC_REQUIRED").is_ok_and(|v| v == "1");
    let mut names = 0;
    for arch in ["sm_80", "sm_90"] {
        for &e in kernels::ELEMS {
            let cubin = match kernels::compile(e, arch) {
                Ok(c) => c,
                Err(why) if !required && why.contains("libnvrtc") => {
                    eprintln!("skip: no NVRTC ({why})");
                    return;
                }
                Err(why) => panic!("{why}"),
            };
            assert!(
                cubin.starts_with(b"\x7fELF"),
                "{e:?} for {arch}: not a CUBIN"
            );
            for op in kernels::ops(e) {
                let n = kernels::name(op, e).unwrap();
                assert!(
                    cubin.windows(n.len()).any(|w| w == n.as_bytes()),
                    "{n} missing from the {arch} CUBIN"
                );
                names += 1;
            }
        }
    }
    assert!(names > 250, "only {names} kernels");
}
