#!/usr/bin/env bash
# The GPU checks of the CUDA work, as one prepared script for a machine with
# a GPU (the tool library's device machine: no network, maybe no compiler).
#
#   bash tools/gpu_check.sh prepare   # here: build the programs into build/gpu_check
#   bash tools/gpu_check.sh run       # there, with build/prefix and build/gpu_check carried
#
# `run` prints the GPU and the driver's own costs (copies, events,
# queries; benches/gpu_probe.c), what alternating GPU work between two
# processes costs without MPI (benches/gpu_pingpong_probe.c), runs the
# device-buffer test programs against the real driver (gpu_reduce: the
# NVRTC kernels against the host ones; gpu_p2p at 2 and 4 ranks and
# without CUDA IPC; gpu_coll and gpu_rma at 2 and 4), then the
# device-buffer benchmarks: cuMemcpyDtoD of 64 MiB in one process (the
# yardstick of the device-to-device bandwidth), point to point (device to
# device with IPC and staged, host to host, device to host; small messages
# by rendezvous, with a long spin and by copies instead of value writes; staged through the device pipeline
# at every size and at two chunk sizes), allreduce on device buffers from
# 1 KiB to 256 MiB at 2 and 4 ranks, by IPC and staged; then some of it
# again under MPS where the machine has it (OXMPI_GPU_CHECK_MPS=0: not).
# benches/gpu_ipc_probe.c (how the driver maps small allocations over IPC)
# is built too, to be run by hand. NVRTC is looked for in the usual
# places; without it reductions run on host copies (the programs then
# print one
# warning line). Every job has a timeout.
set -uo pipefail
cd "$(dirname "$0")/.."
out=build/gpu_check
case "${1:-}" in
prepare)
  mkdir -p "$out"
  for p in gpu_p2p gpu_coll gpu_reduce gpu_rma; do
    build/prefix/bin/mpicc -O1 -g mpi_tests/$p.c -o "$out/$p" || exit 1
  done
  build/prefix/bin/mpicc -O2 benches/gpu_bench.c -o "$out/gpu_bench" || exit 1
  cc -O2 benches/gpu_probe.c -o "$out/gpu_probe" -ldl || exit 1
  cc -O2 benches/gpu_ipc_probe.c -o "$out/gpu_ipc_probe" -ldl || exit 1
  cc -O2 benches/gpu_pingpong_probe.c -o "$out/gpu_pingpong_probe" -ldl || exit 1
  echo "prepared $out (carry build/prefix and $out)"
  ;;
run)
  export LD_LIBRARY_PATH="$PWD/build/prefix/lib:${LD_LIBRARY_PATH:-}"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -3
  if [ -z "${OXMPI_NVRTC_LIB:-}" ]; then
    # The toolkit's, else a Python wheel's (nvidia/cu13/lib, nvidia/cuda_nvrtc/lib).
    for f in /usr/local/cuda/lib64/libnvrtc.so.1[32] /usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.1[32] \
      $(find /usr/local /usr/lib /opt -maxdepth 9 -name 'libnvrtc.so.1[32]' 2>/dev/null | sort -r); do
      if [ -e "$f" ]; then export OXMPI_NVRTC_LIB="$f"; break; fi
    done
  fi
  echo "NVRTC: ${OXMPI_NVRTC_LIB:-none found}"
  mpirun=build/prefix/bin/mpirun
  fail=0
  job() {
    echo "--- $*"
    local t0=$SECONDS
    timeout 75 "$@" 2>&1 | tail -12
    local rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] || { echo "FAILED (exit $rc)"; fail=1; }
    echo "    ($((SECONDS - t0)) s)"
  }
  echo "--- the driver's own costs (benches/gpu_probe.c)"
  timeout 60 "$out/gpu_probe" || { echo "FAILED"; fail=1; }
  echo "--- alternating GPU work between two processes (benches/gpu_pingpong_probe.c)"
  timeout 60 "$out/gpu_pingpong_probe" || { echo "FAILED"; fail=1; }
  job $mpirun -n 1 --timeout 60 "$out/gpu_reduce"
  job $mpirun -n 2 --timeout 60 "$out/gpu_p2p"
  job $mpirun -n 4 --timeout 60 "$out/gpu_p2p"
  job env OXMPI_CUDA_IPC=0 $mpirun -n 2 --timeout 60 "$out/gpu_p2p"
  job $mpirun -n 2 --timeout 60 "$out/gpu_coll"
  job $mpirun -n 4 --timeout 60 "$out/gpu_coll"
  job $mpirun -n 2 --timeout 60 "$out/gpu_rma"
  job $mpirun -n 4 --timeout 60 "$out/gpu_rma"
  job $mpirun -n 1 --timeout 60 "$out/gpu_bench" copy
  for k in dd hh dh; do job $mpirun -n 2 --timeout 60 "$out/gpu_bench" $k; done
  job env OXMPI_CUDA_IPC=0 $mpirun -n 2 --timeout 60 "$out/gpu_bench" dd
  # CUDA IPC at every size, also where the two ranks share the GPU without
  # MPS (the default stages those below OXMPI_CUDA_IPC_SHARED_MIN): the
  # crossover of this line and the one above sets that threshold.
  job env OXMPI_CUDA_IPC_SHARED_MIN=0 $mpirun -n 2 --timeout 60 "$out/gpu_bench" dd
  # Small device messages: every one by rendezvous (staged, then by IPC),
  # and with the waiting rank spinning throughout.
  job env OXMPI_CUDA_IPC=0 OXMPI_EAGER_LIMIT=0 $mpirun -n 2 --timeout 60 "$out/gpu_bench" dd 65536
  job env OXMPI_EAGER_LIMIT=0 $mpirun -n 2 --timeout 60 "$out/gpu_bench" dd 65536
  job env OXMPI_SPIN_US=1000000 $mpirun -n 2 --timeout 60 "$out/gpu_bench" dd 65536
  # Short messages written into device memory by copies, not value writes.
  job env OXMPI_GPU_MEMOP_MAX=0 $mpirun -n 2 --timeout 60 "$out/gpu_bench" dd 4096
  # The device pipeline's threshold and chunk (staged device to device):
  # every staged message, then two chunk sizes.
  job env OXMPI_CUDA_IPC=0 OXMPI_GPU_PIPELINE=0 $mpirun -n 2 --timeout 60 "$out/gpu_bench" dd
  for c in 131072 2097152; do
    job env OXMPI_CUDA_IPC=0 OXMPI_GPU_PIPELINE_CHUNK=$c $mpirun -n 2 --timeout 60 "$out/gpu_bench" dd
  done
  # Allreduce by CUDA IPC (the default) and staged through host memory;
  # without MPS the default stages calls whose slices are below
  # OXMPI_CUDA_IPC_SHARED_MIN, so IPC at every size (minimum 0) beside it
  # gives the collectives' own crossover.
  for n in 2 4; do
    job $mpirun -n $n --timeout 60 "$out/gpu_bench" allreduce
    job env OXMPI_CUDA_IPC=0 $mpirun -n $n --timeout 60 "$out/gpu_bench" allreduce
    job env OXMPI_CUDA_IPC_SHARED_MIN=0 $mpirun -n $n --timeout 60 "$out/gpu_bench" allreduce
  done
  # Ranks sharing one GPU without MPS pay a switch between the processes'
  # GPU contexts whenever the GPU work alternates between them (a ping-pong,
  # a collective); under MPS they share one. The same benchmarks again
  # under MPS where the machine has it.
  if [ "${OXMPI_GPU_CHECK_MPS:-1}" != 0 ] && command -v nvidia-cuda-mps-control >/dev/null; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/oxmpi-mps CUDA_MPS_LOG_DIRECTORY=/tmp/oxmpi-mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d; then
      echo "--- under MPS"
      job $mpirun -n 2 --timeout 60 "$out/gpu_p2p"
      job $mpirun -n 4 --timeout 60 "$out/gpu_coll"
      job $mpirun -n 2 --timeout 60 "$out/gpu_bench" dd
      job env OXMPI_GPU_MEMOP_MAX=0 $mpirun -n 2 --timeout 60 "$out/gpu_bench" dd 4096
      job env OXMPI_CUDA_IPC=0 $mpirun -n 2 --timeout 60 "$out/gpu_bench" dd
      job $mpirun -n 2 --timeout 60 "$out/gpu_bench" allreduce
      job $mpirun -n 4 --timeout 60 "$out/gpu_bench" allreduce
      job env OXMPI_CUDA_IPC=0 $mpirun -n 4 --timeout 60 "$out/gpu_bench" allreduce
      echo quit | nvidia-cuda-mps-control
    fi
  fi
  echo "gpu_check: $([ $fail = 0 ] && echo all passed || echo FAILURES)"
  exit $fail
  ;;
*) echo "usage: $0 prepare|run"; exit 2 ;;
esac
