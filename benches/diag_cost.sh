#!/usr/bin/env bash
# What the diagnosis costs when it is on, against the same build with it
# off: the 8 B point-to-point latency and message rate with OXMPI_PROFILE=1,
# and bcast, allreduce, allgather and alltoallv at 8 B, 64 KiB and 1 MiB with
# OXMPI_CHECK=1, at 2 and 4 ranks; REPS alternated launches of each,
# medians. Usage: benches/diag_cost.sh PREFIX [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$1; reps=${2:-5}
out=build/bench/diag; mkdir -p "$out"
"$prefix/bin/mpicc" -O2 benches/p2p_bench.c -o "$out/p2p"
"$prefix/bin/mpicc" -O2 benches/coll_bench.c -o "$out/coll"
M="$prefix/bin/mpirun"
: > "$out/all"
for r in $(seq "$reps"); do
  for mode in off on; do
    if [ $mode = on ]; then pe="OXMPI_PROFILE=1"; ce="OXMPI_CHECK=1"; else pe="OXMPI_PROFILE=0"; ce="OXMPI_CHECK=0"; fi
    env $pe $M -n 2 "$out/p2p" lat 8 2>/dev/null | awk -v m=$mode '$2==8{print "profile", m, "lat", 8, $3}' >> "$out/all"
    env $pe $M -n 2 "$out/p2p" rate 8 2>/dev/null | awk -v m=$mode '$2==8{print "profile", m, "rate", 8, $3}' >> "$out/all"
    for n in 2 4; do
      env $ce $M -n $n "$out/coll" 1048576 world bcast,allreduce,allgather,alltoallv 8 \
        | awk -v m=$mode -v n=$n '$2==8||$2==65536||$2==1048576{print "check", m, "np" n "-" $1, $2, $3}' >> "$out/all"
    done
  done
done
python3 - "$out/all" <<'PY'
import sys, statistics, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    what, mode, fig, size, v = line.split()
    d[(what, fig, int(size), mode)].append(float(v))
print(f"{'switch':8} {'figure':16} {'size':>8} {'off':>11} {'on':>11} {'on/off':>7}   (medians; us, or msg/s for rate)")
for (what, fig, size) in sorted({k[:3] for k in d}):
    off, on = statistics.median(d[(what, fig, size, 'off')]), statistics.median(d[(what, fig, size, 'on')])
    print(f"{what:8} {fig:16} {size:>8} {off:>11.3f} {on:>11.3f} {on/off:>7.2f}")
PY
