#!/usr/bin/env bash
# Build systems find OxMPI as they find Open MPI and MPICH:
#  - the wrappers answer every query form of both (-v, --version, -show,
#    -compile_info, -link_info, -show-compile-info, -show-link-info,
#    --showme, --showme:compile, --showme:link, --showme:version), exit 0;
#  - pkg-config knows every name (mpi, oxmpi, mpi-c, mpi-cxx, mpi-fort,
#    ompi, ompi-c, ompi-cxx, ompi-fort, mpich);
#  - Meson (from PyPI) finds C, C++ and Fortran through the wrappers first on
#    PATH, through MPICC / MPICXX / MPIFC, and through pkg-config; CMake's
#    FindMPI finds all three; the programs they build run.
# Usage: buildsys.sh PREFIX VENV   (VENV: a Python virtual environment to install Meson into)
set -euo pipefail
prefix=$(cd "$1" && pwd)
venv=$2
here=$(cd "$(dirname "$0")" && pwd)
out=$here/../build/tests/buildsys
rm -rf "$out" && mkdir -p "$out"
fail=0
check() { # name, expected text, command...
  local name=$1 want=$2; shift 2
  local got
  if got=$(timeout 120 "$@" 2>&1) && grep -q -- "$want" <<<"$got"; then
    echo "ok   $name"
  else
    echo "FAIL $name"; echo "$got" | tail -20; fail=1
  fi
}
bin=$prefix/bin
ver=$(sed -n 's/^version = "\(.*\)"/\1/p' "$here/../Cargo.toml" | head -1)

# ---- the wrappers' query forms
for w in mpicc mpicxx mpic++ mpiCC mpif90 mpifort mpif77; do
  [ -x "$bin/$w" ] && echo "ok   $w is installed" || { echo "FAIL $w is not installed"; fail=1; }
done
check "mpicc -v: a version line first" "^mpicc for OxMPI version $ver" "$bin/mpicc" -v
check "mpicc --version" "OxMPI version $ver" "$bin/mpicc" --version
check "mpicc -show" "-lmpi" "$bin/mpicc" -show x.c
check "mpicc -compile_info" "-I$prefix/include" "$bin/mpicc" -compile_info
check "mpicc -link_info" "-lmpi" "$bin/mpicc" -link_info
check "mpicc -show-compile-info" "-I$prefix/include" "$bin/mpicc" -show-compile-info
check "mpicxx -show-link-info" "-lmpi" "$bin/mpicxx" -show-link-info
check "mpicc -showme" "-lmpi" "$bin/mpicc" -showme
check "mpicc --showme:compile" "^-I$prefix/include" "$bin/mpicc" --showme:compile
check "mpicc -showme:link" "^-L$prefix/lib" "$bin/mpicc" -showme:link
check "mpifort --showme:version" "OxMPI $ver" "$bin/mpifort" --showme:version
check "mpif77 --showme:compile" "-fallow-argument-mismatch" "$bin/mpif77" --showme:compile

# ---- pkg-config under every name
for n in mpi oxmpi mpi-c mpi-cxx mpi-fort ompi ompi-c ompi-cxx ompi-fort mpich; do
  check "pkg-config $n" "-I$prefix/include" env PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs "$n"
done

# ---- a project in C, C++ and Fortran
src=$out/src
mkdir -p "$src"
cp "$here/hello.c" "$src/"
cat > "$src/hello.cc" <<'EOF'
#include <mpi.h>
#include <cstdio>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int l;
    MPI_Get_library_version(v, &l);
    std::printf("c++ hello from rank %d of %d (%.5s)\n", r, n, v);
    MPI_Finalize();
}
EOF
cat > "$src/hello.f90" <<'EOF'
program hello
  use mpi
  integer :: ierr, r, n
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, r, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, n, ierr)
  print '(a,i0,a,i0)', 'fortran hello from rank ', r, ' of ', n
  call MPI_Finalize(ierr)
end program
EOF
cat > "$src/meson.build" <<'EOF'
project('findmpi', 'c', 'cpp', 'fortran')
method = get_option('mpi_method')
executable('hello_c', 'hello.c', dependencies: dependency('mpi', language: 'c', method: method))
executable('hello_cpp', 'hello.cc', dependencies: dependency('mpi', language: 'cpp', method: method))
executable('hello_f', 'hello.f90', dependencies: dependency('mpi', language: 'fortran', method: method))
EOF
cat > "$src/meson.options" <<'EOF'
option('mpi_method', type: 'string', value: 'auto')
EOF

if "$venv/bin/pip" install -q meson ninja >/dev/null 2>&1; then
  mpath=$venv/bin
  runs() { # build dir: the three programs run on OxMPI
    check "$1: the C program runs" "hello from rank 1 of 2" "$bin/mpirun" -n 2 "$2/hello_c"
    check "$1: the C++ program runs on OxMPI" "c++ hello from rank 1 of 2 (OxMPI)" "$bin/mpirun" -n 2 "$2/hello_cpp"
    check "$1: the Fortran program runs" "fortran hello from rank 1 of 2" "$bin/mpirun" -n 2 "$2/hello_f"
  }
  # 1. the wrappers first on PATH
  check "Meson: wrappers on PATH, C" "Run-time dependency MPI for c found: YES $ver" \
    env PATH="$bin:$mpath:$PATH" meson setup "$out/m1" "$src"
  grep -q "Run-time dependency MPI for cpp found: YES $ver" "$out/m1/meson-logs/meson-log.txt" \
    && grep -q "Run-time dependency MPI for fortran found: YES $ver" "$out/m1/meson-logs/meson-log.txt" \
    && echo "ok   Meson: wrappers on PATH, C++ and Fortran" || { echo "FAIL Meson: wrappers on PATH, C++ and Fortran"; fail=1; }
  env PATH="$mpath:$PATH" ninja -C "$out/m1" >/dev/null && runs "Meson (PATH)" "$out/m1"
  # 2. MPICC / MPICXX / MPIFC name the wrappers
  check "Meson: MPICC, MPICXX, MPIFC" "mpifort found: YES ($bin/mpifort) $ver" \
    env PATH="$bin:$mpath:$PATH" MPICC="$bin/mpicc" MPICXX="$bin/mpicxx" MPIFC="$bin/mpifort" meson setup "$out/m2" "$src"
  # 3. pkg-config
  check "Meson: pkg-config (ompi-c, ompi-cxx, ompi-fort)" "Run-time dependency MPI for fortran found: YES $ver" \
    env PATH="$mpath:$PATH" PKG_CONFIG_PATH="$prefix/lib/pkgconfig" meson setup "$out/m3" "$src" -Dmpi_method=pkg-config
  env PATH="$mpath:$PATH" ninja -C "$out/m3" >/dev/null && runs "Meson (pkg-config)" "$out/m3"
else
  echo "FAIL: could not install Meson and Ninja from PyPI"; fail=1
fi

# ---- CMake's FindMPI, all three languages
if command -v cmake >/dev/null; then
  cat > "$src/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.10)
project(findmpi C CXX Fortran)
find_package(MPI REQUIRED COMPONENTS C CXX Fortran)
message(STATUS "MPI_C_LIBRARIES=${MPI_C_LIBRARIES} MPI_CXX_LIBRARIES=${MPI_CXX_LIBRARIES} MPI_Fortran_LIBRARIES=${MPI_Fortran_LIBRARIES} MPI_Fortran_HAVE_F90_MODULE=${MPI_Fortran_HAVE_F90_MODULE}")
add_executable(hello_c hello.c)
target_link_libraries(hello_c MPI::MPI_C)
add_executable(hello_cpp hello.cc)
target_link_libraries(hello_cpp MPI::MPI_CXX)
add_executable(hello_f hello.f90)
target_link_libraries(hello_f MPI::MPI_Fortran)
EOF
  check "CMake FindMPI: C, C++ and Fortran" "MPI_C_LIBRARIES=$prefix/lib/libmpi.so MPI_CXX_LIBRARIES=$prefix/lib/libmpi.so MPI_Fortran_LIBRARIES=$prefix/lib/libmpi_usempi.so;$prefix/lib/libmpi.so MPI_Fortran_HAVE_F90_MODULE=TRUE" \
    env PATH="$bin:$PATH" cmake -S "$src" -B "$out/cm"
  cmake --build "$out/cm" >/dev/null && runs_cm=yes || runs_cm=no
  if [ "$runs_cm" = yes ]; then
    check "CMake: the C++ program runs on OxMPI" "c++ hello from rank 1 of 2 (OxMPI)" "$bin/mpirun" -n 2 "$out/cm/hello_cpp"
    check "CMake: the Fortran program runs" "fortran hello from rank 1 of 2" "$bin/mpirun" -n 2 "$out/cm/hello_f"
  else
    echo "FAIL CMake build"; fail=1
  fi
else
  echo "FAIL: cmake is not installed"; fail=1
fi
exit $fail
