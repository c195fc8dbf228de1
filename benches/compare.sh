#!/usr/bin/env bash
# Builds benches/p2p_bench.c against OxMPI, Open MPI and MPICH (Debian
# packages) and runs them alternately, REPS times each, 2 ranks pinned to one
# core each; prints the median per size and the ratio OxMPI / faster peer.
# Usage: benches/compare.sh [REPS] [TEST] [MAX_BYTES] [RANKS] [COMM] [COLLS] [MIN_BYTES]
#   TEST: lat | bw | bibw | rate | all (point-to-point, p2p_bench.c), coll (coll_bench.c) or rma (rma_bench.c)
#   COMM (coll only): world (default) or reversed (world's ranks in reverse order)
#   COLLS (coll only): all (default) or a comma-separated list (allgather,alltoall)
#   MIN_BYTES (coll only): first size (default 8); SCALE=k multiplies the iteration counts
# FLAVOR (rma only): allocate (default), create or dynamic, the window's flavor.
# MPIS="oxmpi openmpi" leaves MPICH out (its busy-polling ranks do not finish
# oversubscribed runs); each repetition swaps the order of the launches.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}; test=${2:-all}; maxn=${3:-16777216}; np=${4:-2}; comm=${5:-world}
colls=${6:-all}; minn=${7:-8}; mpis=${MPIS:-oxmpi openmpi mpich}
prog=p2p_bench; [ "$test" = coll ] && prog=coll_bench; [ "$test" = rma ] && prog=rma_bench
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
args="$test $maxn"; [ "$test" = coll ] && args="$maxn $comm $colls $minn ${SCALE:-1}"
flavor=${FLAVOR:-allocate}
[ "$test" = rma ] && args="$maxn $flavor"
# Open MPI 4.1's osc/rdma over vader's CMA single copy segfaults in
# MPI_Compare_and_swap on allocated windows on these machines; without the
# single copy it runs. Created and dynamic windows' memory is reached by
# that single copy (it runs there).
ompi_extra=""; [ "$test" = rma ] && [ "$flavor" = allocate ] && ompi_extra="--mca btl_vader_single_copy_mechanism none"
launch() {
  case $1 in
    oxmpi) build/prefix/bin/mpirun -n "$np" "$out/${prog}_oxmpi" $args ;;
    openmpi) mpirun.openmpi --allow-run-as-root --oversubscribe $ompi_extra -n "$np" "$out/${prog}_openmpi" $args 2>/dev/null ;;
    mpich) mpiexec.hydra -n "$np" "$out/${prog}_mpich" $args ;;
  esac
}
order=$mpis
for r in $(seq "$reps"); do
  for m in $order; do launch "$m" > "$out/$m.$r"; done
  order=$(echo $order | tr ' ' '\n' | tac | tr '\n' ' ')
done
python3 - "$out" "$reps" $mpis <<'PY'
import sys, statistics, collections
out, reps, mpis = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
vals = collections.defaultdict(lambda: collections.defaultdict(list))
for mpi in mpis:
    for r in range(1, reps + 1):
        for line in open(f"{out}/{mpi}.{r}"):
            f = line.split()
            if len(f) == 3:
                vals[(f[0], int(f[1]))][mpi].append(float(f[2]))
print(f"{'test':5} {'size':>9} {'OxMPI':>10} {'Open MPI':>10} {'MPICH':>10} {'ratio':>7}   (median of {reps}; lat, collectives and put/get/acc/fop/cas in us, lower is better; bw/bibw/putbw/getbw/accbw MB/s, rate msg/s, foprate thousands/s, higher is better)")
for (t, n) in sorted(vals, key=lambda k: (k[0], k[1])):
    m = {k: statistics.median(v) for k, v in vals[(t, n)].items()}
    if len(m) < len(mpis) or "oxmpi" not in m: continue
    peers = [m[k] for k in mpis if k != "oxmpi"]
    lower_better = t not in ("bw", "bibw", "rate", "vbw", "cma", "putbw", "getbw", "accbw", "foprate")
    best = (min(peers) if lower_better else max(peers)) if peers else float("nan")
    ratio = m["oxmpi"] / best if best else float("nan")
    cols = " ".join(f"{m.get(k, float('nan')):>10.2f}" for k in ("oxmpi", "openmpi", "mpich"))
    print(f"{t:5} {n:>9} {cols} {ratio:>7.2f}")
PY
