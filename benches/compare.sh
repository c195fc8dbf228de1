#!/usr/bin/env bash
# Builds benches/p2p_bench.c against OxMPI, Open MPI and MPICH (Debian
# packages) and runs them alternately, REPS times each, 2 ranks pinned to one
# core each; prints the median per size and the ratio OxMPI / faster peer.
# Usage: benches/compare.sh [REPS] [TEST] [MAX_BYTES] [RANKS] [COMM]
#   TEST: lat | bw | bibw | rate | all (point-to-point, p2p_bench.c) or coll (coll_bench.c)
#   COMM (coll only): world (default) or reversed (world's ranks in reverse order)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}; test=${2:-all}; maxn=${3:-16777216}; np=${4:-2}; comm=${5:-world}
prog=p2p_bench; [ "$test" = coll ] && prog=coll_bench
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] && ! command -v mpicc.openmpi >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev mpich libmpich-dev >/dev/null
fi
make install PREFIX="$PWD/build/prefix" >/dev/null
out=build/bench; mkdir -p "$out"
# One binary per program and MPI, so that a p2p run after a coll run (or
# the other way round) never picks up the other program.
build/prefix/bin/mpicc -O2 benches/$prog.c -o "$out/${prog}_oxmpi"
mpicc.openmpi -O2 benches/$prog.c -o "$out/${prog}_openmpi"
mpicc.mpich -O2 benches/$prog.c -o "$out/${prog}_mpich"
args="$test $maxn"; [ "$test" = coll ] && args="$maxn $comm"
for r in $(seq "$reps"); do
  build/prefix/bin/mpirun -n "$np" "$out/${prog}_oxmpi" $args > "$out/oxmpi.$r"
  mpirun.openmpi --allow-run-as-root --oversubscribe -n "$np" "$out/${prog}_openmpi" $args > "$out/openmpi.$r" 2>/dev/null
  mpiexec.hydra -n "$np" "$out/${prog}_mpich" $args > "$out/mpich.$r"
done
python3 - "$out" "$reps" <<'PY'
import sys, statistics, collections
out, reps = sys.argv[1], int(sys.argv[2])
vals = collections.defaultdict(lambda: collections.defaultdict(list))
for mpi in ("oxmpi", "openmpi", "mpich"):
    for r in range(1, reps + 1):
        for line in open(f"{out}/{mpi}.{r}"):
            f = line.split()
            if len(f) == 3:
                vals[(f[0], int(f[1]))][mpi].append(float(f[2]))
print(f"{'test':5} {'size':>9} {'OxMPI':>10} {'Open MPI':>10} {'MPICH':>10} {'ratio':>7}   (median of {reps}; lat and collectives in us, lower is better; bw/bibw MB/s, rate msg/s, higher is better)")
for (t, n) in sorted(vals, key=lambda k: (k[0], k[1])):
    m = {k: statistics.median(v) for k, v in vals[(t, n)].items()}
    if len(m) < 3: continue
    lower_better = t not in ("bw", "bibw", "rate", "vbw", "cma")
    best = min(m["openmpi"], m["mpich"]) if lower_better else max(m["openmpi"], m["mpich"])
    ratio = m["oxmpi"] / best if best else float("nan")
    print(f"{t:5} {n:>9} {m['oxmpi']:>10.2f} {m['openmpi']:>10.2f} {m['mpich']:>10.2f} {ratio:>7.2f}")
PY
