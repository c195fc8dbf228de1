//! After a panic caught at the C boundary the library is poisoned: every
//! later call reports MPI_ERR_INTERN (naming the first panic) instead of
//! running on state the panic may have left half updated. A process of its
//! own (an integration test binary), since the flag is process-wide.

use oxmpi::abi::consts::*;
use oxmpi::abi::guard::enter;
use oxmpi::core::runtime::set_phase;

#[test]
fn a_panic_poisons_every_later_call() {
    // As after MPI_Init: errors return (no state means no handler to abort).
    set_phase(1);
    assert_eq!(enter(&"MPI_Test_first", None, || Ok(())), MPI_SUCCESS);
    let rc = enter(&"MPI_Test_panics", None, || panic!("boom"));
    assert_eq!(rc, MPI_ERR_INTERN);
    let mut ran = false;
    let rc = enter(&"MPI_Test_later", None, || {
        ran = true;
        Ok(())
    });
    assert_eq!(
        rc, MPI_ERR_INTERN,
        "a call after the panic must not succeed"
    );
    assert!(!ran, "a call after the panic must not run its body");
}
