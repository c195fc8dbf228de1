#!/usr/bin/env bash
# One-sided operations across two pretend hosts (tools/hosts.sh), 1 rank
# per host: benches/rma_bench.c under OxMPI (UCX RMA over tcp), MPICH
# (ch4:ucx) and Open MPI (ob1 over tcp with osc/pt2pt: its osc/rdma refuses
# MPI_Win_allocate over tcp with MPI_ERR_WIN), each started by its own
# launcher through the same agent from inside host 1, alternated REPS times.
# Prints the median per test and size over the launches, with the range, and
# the ratio OxMPI / faster peer.
# Usage: benches/multihost_rma.sh [REPS] [MAXBYTES]   (MPIS="oxmpi mpich" to leave one out;
# FLAVOR=create or dynamic for the window's flavor, allocate by default)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}; maxn=${2:-65536}; mpis=${MPIS:-oxmpi mpich openmpi}; flavor=${FLAVOR:-allocate}
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] && ! command -v mpicc.openmpi >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev mpich libmpich-dev >/dev/null
fi
make install PREFIX="$PWD/build/prefix" >/dev/null
out=$PWD/build/bench/multihost_rma; mkdir -p "$out"
build/prefix/bin/mpicc -O2 benches/rma_bench.c -o "$out/rb_oxmpi"
mpicc.mpich -O2 benches/rma_bench.c -o "$out/rb_mpich"
mpicc.openmpi -O2 benches/rma_bench.c -o "$out/rb_openmpi"
hosts=$(mktemp -d /tmp/oxbench.XXXXXX)
trap 'tools/hosts.sh down "$hosts"' EXIT
tools/hosts.sh up 2 "$hosts"
A=$hosts/agent
hl=oxhnode1:1,oxhnode2:1
launch() {
  case $1 in
    oxmpi) "$A" oxhnode1 "timeout 300 $PWD/build/prefix/bin/mpirun --bind-to none --launcher-exec $A --host $hl $out/rb_oxmpi $maxn $flavor" ;;
    mpich) "$A" oxhnode1 "timeout 300 mpiexec.hydra -launcher ssh -launcher-exec $A -hosts $hl -n 2 $out/rb_mpich $maxn $flavor" ;;
    openmpi) "$A" oxhnode1 "timeout 300 mpirun.openmpi --allow-run-as-root --bind-to none --mca plm_rsh_agent $A --host $hl -n 2 \
       --mca pml ob1 --mca osc pt2pt --mca btl tcp,vader,self --mca btl_tcp_if_include 10.200.0.0/24 --mca oob_tcp_if_include 10.200.0.0/24 \
       $out/rb_openmpi $maxn $flavor" 2>/dev/null ;;
  esac
}
order=$mpis
for r in $(seq "$reps"); do
  for m in $order; do launch "$m" > "$out/$m.$r" || echo "($m launch $r failed)" >&2; done
  order=$(echo $order | tr ' ' '\n' | tac | tr '\n' ' ')
done
python3 - "$out" "$reps" $mpis <<'PY'
import sys, statistics, collections
out, reps, mpis = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
vals = collections.defaultdict(lambda: collections.defaultdict(list))
for mpi in mpis:
    for r in range(1, reps + 1):
        try:
            for line in open(f"{out}/{mpi}.{r}"):
                f = line.split()
                if len(f) == 3:
                    vals[(f[0], int(f[1]))][mpi].append(float(f[2]))
        except (FileNotFoundError, ValueError):
            pass
hi = ("putbw", "getbw", "accbw", "foprate")
print(f"{'test':7} {'size':>7} " + " ".join(f"{m:>24}" for m in mpis) + f" {'ratio':>6}")
for (t, n) in sorted(vals):
    row = vals[(t, n)]
    med = {m: statistics.median(v) for m, v in row.items() if v}
    cells = [f"{med[m]:>10.2f} ({min(row[m]):.1f}-{max(row[m]):.1f})" if row.get(m) else f"{'-':>24}" for m in mpis]
    peers = [med[m] for m in mpis if m != "oxmpi" and m in med]
    best = (max(peers) if t in hi else min(peers)) if peers else None
    ratio = f"{med['oxmpi'] / best:6.2f}" if best and "oxmpi" in med else "     -"
    print(f"{t:7} {n:>7} " + " ".join(f"{c:>24}" for c in cells) + f" {ratio}")
print(f"(median over {reps} launches; put/get/acc/fop/cas in us with a flush each, lower is better; putbw/getbw/accbw MB/s, foprate thousands/s, higher is better; ratio: OxMPI / faster peer)")
PY
