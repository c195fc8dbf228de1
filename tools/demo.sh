#!/usr/bin/env bash
# Demo: build OxMPI, install it into build/prefix, and run a 4-rank job that
# sums the ranks with MPI_Allreduce and measures point-to-point bandwidth.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential python3 >/dev/null
fi
make install PREFIX="$PWD/build/prefix" >/dev/null
mkdir -p build/demo
build/prefix/bin/mpicc -O2 benches/demo.c -o build/demo/demo
build/prefix/bin/mpirun -n 4 --timeout 60 build/demo/demo
