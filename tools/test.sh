#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what it needs, builds,
# installs into build/prefix, runs the Rust tests, the MPI programs (plain and
# with -fsanitize=address,undefined), the interoperability checks, and jobs
# across pretend hosts under our mpirun, Hydra and Slurm.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential python3 python3-venv pkg-config cmake gfortran mpich libmpich-dev libucx0 \
    slurmd slurmctld slurm-client munge slurm-wlm-basic-plugins >/dev/null
fi
export CARGO_TERM_COLOR=never
echo "== format and lints"
cargo fmt --all -- --check
cargo clippy --all-targets -q -- -D warnings
echo "== build and install into build/prefix"
make install PREFIX="$PWD/build/prefix" >/dev/null
echo "== libmpi.so.12 does not link UCX (the inter-node link opens libucp.so.0 at run time)"
if ldd build/prefix/lib/libmpi.so.12 | grep -q libucp; then
  echo "libmpi.so.12 links libucp at load time"; exit 1
fi
echo "== generated Fortran layer (mpif.h, mpi module, entry points) is fresh"
python3 tools/gen_fortran.py --check
python3 tools/gen_f08.py --check
echo "== the stubs (src/abi/stubs.rs) are fresh from their table (src/abi/stubs.txt)"
python3 tools/gen_stubs.py --check
echo "== the collectives' nonblocking and persistent forms are fresh from their table (src/abi/coll/forms.txt)"
python3 tools/gen_coll_forms.py --check
echo "== docs/functions.md matches the exported functions"
python3 tools/function_status.py build/prefix/lib/libmpi.so.12 --check
echo "== NVRTC from NVIDIA's wheel (no GPU needed): every device reduction kernel must compile"
if [ ! -x build/nvrtc-venv/bin/pip ]; then python3 -m venv build/nvrtc-venv; fi
build/nvrtc-venv/bin/pip install -q --disable-pip-version-check nvidia-cuda-nvrtc-cu12
OXMPI_NVRTC_LIB=$(ls "$PWD"/build/nvrtc-venv/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12)
export OXMPI_NVRTC_LIB OXMPI_NVRTC_REQUIRED=1
echo "== Rust tests (units, matching engine vs reference, header freshness, NVRTC kernels)"
cargo test --release -q 2>&1 | grep -E "^test result|FAILED|panicked|error" || true
cargo test --release -q >/dev/null 2>&1
echo "== MPI test programs"
python3 mpi_tests/run.py build/prefix
echo "== MPI test programs with -fsanitize=address,undefined"
python3 mpi_tests/run.py build/prefix "--cflags=-fsanitize=address,undefined -fno-omit-frame-pointer"
echo "== interoperability (Hydra, MPICH-built binaries, wrappers, build systems)"
bash mpi_tests/interop.sh build/prefix
echo "== across pretend hosts (tools/hosts.sh): our mpirun and Hydra start jobs on 2-3 hosts; UCX between them"
bash mpi_tests/multihost.sh build/prefix
echo "== under a two-node Slurm on pretend hosts (srun --mpi=pmi2)"
bash mpi_tests/slurm.sh build/prefix
echo "== mpirun's command line (MPMD, --help, errors, habitual flags)"
bash mpi_tests/mpirun_cli.sh build/prefix
echo "== diagnosis: the profile at finalize (OXMPI_PROFILE, mpirun --profile)"
bash mpi_tests/diagnosis.sh build/prefix
echo "== all tests passed"
