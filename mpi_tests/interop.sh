#!/usr/bin/env bash
# Interoperability checks (need Debian's mpich package):
#  1. a program built with OxMPI's mpicc starts under MPICH's Hydra (PMI-1 over PMI_FD and PMI_PORT);
#  2. the same source built with MPICH's mpicc runs on OxMPI's libmpi.so.12 via LD_LIBRARY_PATH,
#     under our mpirun and under Hydra (the program checks that the library says "OxMPI");
#     (also the large-count collectives, whose MPI_Count and MPI_Aint arrays must match MPICH's);
#     and mpi4py's binary wheel for MPICH runs on OxMPI;
#  3. mpicc -show / -compile-info / -link-info and pkg-config work from the installation;
#  4. build systems find OxMPI (buildsys.sh: every wrapper query form, pkg-config names, Meson, CMake).
set -euo pipefail
prefix=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=$here/../build/tests/interop
mkdir -p "$out"
fail=0
check() { # name, expected text, command...
  local name=$1 want=$2; shift 2
  local got
  if got=$(timeout 60 "$@" 2>&1) && grep -q -- "$want" <<<"$got"; then
    echo "ok   $name"
  else
    echo "FAIL $name"; echo "$got" | tail -20; fail=1
  fi
}
"$prefix/bin/mpicc" "$here/hello.c" -o "$out/hello_ox"
"$prefix/bin/mpicc" -I"$here" "$here/p2p_basic.c" -o "$out/p2p_ox"
if command -v mpiexec.hydra >/dev/null && command -v mpicc.mpich >/dev/null; then
  check "hydra runs an OxMPI program (PMI_FD)" "hello from rank 2 of 3" mpiexec.hydra -n 3 "$out/hello_ox"
  check "hydra runs an OxMPI program (PMI_PORT)" "hello from rank 1 of 2" mpiexec.hydra -pmi-port -n 2 "$out/hello_ox"
  check "hydra runs p2p_basic" "p2p_basic ok" mpiexec.hydra -n 4 "$out/p2p_ox"
  mpicc.mpich "$here/hello.c" -o "$out/hello_mpich"
  mpicc.mpich -I"$here" "$here/p2p_basic.c" -o "$out/p2p_mpich"
  check "MPICH-built binary needs libmpich.so.12" "libmpich.so.12" objdump -p "$out/hello_mpich"
  check "MPICH-built hello on OxMPI under our mpirun" "hello from rank 3 of 4" env LD_LIBRARY_PATH="$prefix/lib" "$prefix/bin/mpirun" -n 4 "$out/hello_mpich"
  check "MPICH-built p2p_basic on OxMPI under our mpirun" "p2p_basic ok" env LD_LIBRARY_PATH="$prefix/lib" "$prefix/bin/mpirun" -n 3 "$out/p2p_mpich"
  mpicc.mpich -I"$here" "$here/coll_bigcount.c" -o "$out/coll_bigcount_mpich"
  check "MPICH-built large-count collectives on OxMPI" "coll_bigcount ok" env LD_LIBRARY_PATH="$prefix/lib" "$prefix/bin/mpirun" -n 3 "$out/coll_bigcount_mpich"
  mpicc.mpich -I"$here" "$here/p2p_bigcount.c" -o "$out/p2p_bigcount_mpich"
  check "MPICH-built large-count point-to-point on OxMPI" "p2p_bigcount ok" env LD_LIBRARY_PATH="$prefix/lib" "$prefix/bin/mpirun" -n 2 "$out/p2p_bigcount_mpich"
  check "MPICH-built p2p_basic on OxMPI under hydra" "p2p_basic ok" mpiexec.hydra -genv LD_LIBRARY_PATH "$prefix/lib" -n 2 "$out/p2p_mpich"
else
  echo "FAIL: MPICH (mpiexec.hydra, mpicc.mpich) is not installed"; fail=1
fi
check "mpicc -show" "-lmpi" "$prefix/bin/mpicc" -show x.c
check "mpicc -compile-info" "-I$prefix/include" "$prefix/bin/mpicc" -compile-info
check "mpicxx -link-info" "-lmpi" "$prefix/bin/mpicxx" -link-info
check "pkg-config mpi" "-I$prefix/include" env PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs mpi
"$prefix/bin/mpicxx" -x c++ "$here/hello.c" -o "$out/hello_cxx"
check "C++ program through mpicxx" "hello from rank 1 of 2" "$prefix/bin/mpirun" -n 2 "$out/hello_cxx"
if command -v gfortran >/dev/null; then
  gfortran -c -I"$prefix/include" "$here/f_module.f90" -o "$out/f_module.o" -J "$out" \
    && echo "ok   use mpi needs no -fallow-argument-mismatch" \
    || { echo "FAIL use mpi with plain gfortran"; fail=1; }
  if command -v mpif90.mpich >/dev/null; then
    mpif90.mpich "$here/f_basic.f" -o "$out/f_basic_mpich" 2>/dev/null
    check "MPICH-built Fortran binary on OxMPI" "f_basic ok" env LD_LIBRARY_PATH="$prefix/lib" "$prefix/bin/mpirun" -n 2 "$out/f_basic_mpich"
  fi
fi
# mpi4py's binary wheel (built against MPICH) on OxMPI's libmpi.so.12: every
# function it references strongly is exported, the rest are stubs.
if command -v python3 >/dev/null && python3 -m venv "$out/py" >/dev/null 2>&1 \
   && "$out/py/bin/pip" install -q --only-binary=:all: "mpi4py==4.1.2" >/dev/null 2>&1; then
  cp "$here/mpi4py_allreduce.py" "$out/"
  check "mpi4py 4.1.2 (MPICH wheel) on OxMPI" "mpi4py ok" env MPI4PY_MPIABI=mpich LD_LIBRARY_PATH="$prefix/lib" \
    "$prefix/bin/mpirun" -n 3 "$out/py/bin/python" "$out/mpi4py_allreduce.py"
else
  echo "FAIL: could not install mpi4py 4.1.2 from PyPI into a virtual environment"; fail=1
fi
check "singleton run without mpirun" "hello from rank 0 of 1" "$out/hello_ox"
# Build systems: the wrappers' query forms, pkg-config names, Meson, CMake (buildsys.sh).
if [ -x "$out/py/bin/pip" ]; then
  bash "$here/buildsys.sh" "$prefix" "$out/py" || fail=1
else
  echo "FAIL: no virtual environment for the build-system checks"; fail=1
fi
check "stdin to rank 0, --tag-output" "\[0\] from stdin" sh -c "echo from stdin | '$prefix/bin/mpirun' -n 2 --tag-output --timeout 20 cat"
start=$(date +%s)
set +e
timeout --preserve-status -s INT 1 "$prefix/bin/mpirun" -n 3 sleep 30 2>/dev/null
rc=$?
set -e
if [ "$rc" = 130 ] && [ $(( $(date +%s) - start )) -le 5 ]; then echo "ok   SIGINT is forwarded and ends the job (exit 130)"; else echo "FAIL SIGINT forwarding: rc=$rc"; fail=1; fi
left=$(ls /dev/shm | grep '^oxmpi-' || true)
[ -z "$left" ] || { echo "FAIL: left in /dev/shm: $left"; fail=1; }
exit $fail
