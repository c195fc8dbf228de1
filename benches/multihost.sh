#!/usr/bin/env bash
# OxMPI, MPICH (ch4:ucx) and Open MPI (ob1 over tcp) side by side across two
# pretend hosts (tools/hosts.sh), each started by its own launcher through
# the same launcher agent from inside host 1, alternated REPS times; and
# ucx_perftest's tag latency on the same pair as the floor.
#   p2p (benches/net_bench.c): 1 rank per host; coll: 2 hosts x 2 ranks
#   (4 ranks on this machine's 2 CPUs: every MPI's waits then depend on the
#   scheduler) and coll21: 2 hosts x 1 rank.
# No MPI binds its ranks: the pretend hosts share this machine's CPUs, so
# each host's rank 0 pinned to CPU 0 would share one CPU with the other's.
# Open MPI's ob1 over tcp runs a twentieth of the iterations (its
# per-message times here are milliseconds).
# Prints, per test and size, the median over the launches of each launch's
# median per-iteration figure, with the range over the launches, and the
# ratio OxMPI / faster peer.
# Usage: benches/multihost.sh [REPS] [MAXBYTES]    (MPIS="oxmpi mpich" to leave one out)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}; maxn=${2:-4194304}; mpis=${MPIS:-oxmpi mpich openmpi}
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] && { ! command -v mpicc.openmpi >/dev/null || ! command -v ucx_perftest >/dev/null; }; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev mpich libmpich-dev ucx-utils >/dev/null
fi
make install PREFIX="$PWD/build/prefix" >/dev/null
out=$PWD/build/bench/multihost; mkdir -p "$out"
build/prefix/bin/mpicc -O2 benches/net_bench.c -o "$out/nb_oxmpi"
mpicc.mpich -O2 benches/net_bench.c -o "$out/nb_mpich"
mpicc.openmpi -O2 benches/net_bench.c -o "$out/nb_openmpi"
hosts=$(mktemp -d /tmp/oxbench.XXXXXX)
trap 'tools/hosts.sh down "$hosts"' EXIT
tools/hosts.sh up 2 "$hosts"
A=$hosts/agent
launch() { # mpi, what (p2p|coll|coll21)
  local hl=oxhnode1:1,oxhnode2:1 n=2 w=$2
  [ "$2" = coll ] && { hl=oxhnode1:2,oxhnode2:2; n=4; }
  [ "$2" = coll21 ] && w=coll
  case $1 in
    oxmpi) "$A" oxhnode1 "timeout 300 $PWD/build/prefix/bin/mpirun --bind-to none --launcher-exec $A --host $hl $out/nb_oxmpi $w $maxn" ;;
    mpich) "$A" oxhnode1 "timeout 300 mpiexec.hydra -launcher ssh -launcher-exec $A -hosts $hl -n $n $out/nb_mpich $w $maxn" ;;
    openmpi) "$A" oxhnode1 "timeout 300 mpirun.openmpi --allow-run-as-root --bind-to none --mca plm_rsh_agent $A --host $hl -n $n \
       --mca pml ob1 --mca btl tcp,vader,self --mca btl_tcp_if_include 10.200.0.0/24 --mca oob_tcp_if_include 10.200.0.0/24 \
       $out/nb_openmpi $w $maxn 20" 2>/dev/null ;;
  esac
}
order=$mpis
for r in $(seq "$reps"); do
  for m in $order; do
    for w in p2p coll coll21; do launch "$m" "$w" > "$out/$m.$w.$r" || echo "($m $w launch $r failed)" >&2; done
  done
  order=$(echo $order | tr ' ' '\n' | tac | tr '\n' ' ')
  # The floors: ucx_perftest's tag and active-message latency over tcp
  # between the two hosts.
  for t in tag_lat ucp_am_lat; do
    "$A" oxhnode2 "UCX_TLS=tcp timeout 60 ucx_perftest -t $t -s 8 -n 20000 >/dev/null 2>&1" &
    sleep 0.5
    "$A" oxhnode1 "UCX_TLS=tcp timeout 60 ucx_perftest oxhnode2 -t $t -s 8 -n 20000" > "$out/perftest.$t.$r" 2>&1 || true
    wait
  done
done
python3 - "$out" "$reps" $mpis <<'PY'
import sys, statistics, collections, re
out, reps, mpis = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
vals = collections.defaultdict(lambda: collections.defaultdict(list))
for mpi in mpis:
    for w in ("p2p", "coll", "coll21"):
        for r in range(1, reps + 1):
            try:
                for line in open(f"{out}/{mpi}.{w}.{r}"):
                    f = line.split()
                    if len(f) == 5 and f[0] in ("lat", "bw", "rate", "allreduce", "bcast", "allgather", "alltoall"):
                        name = f[0] + ("/2x1" if w == "coll21" else "")
                        vals[(name, int(f[1]))][mpi].append(float(f[2]))
            except FileNotFoundError:
                pass
floors = collections.defaultdict(list)
for t in ("tag_lat", "ucp_am_lat"):
    for r in range(1, reps + 1):
        try:
            for line in open(f"{out}/perftest.{t}.{r}"):
                f = line.split()
                # Final line: "Final: iterations typical average overall ..."
                if f and f[0] == "Final:" and len(f) >= 4:
                    floors[t].append(float(f[2]))
        except FileNotFoundError:
            pass
hi = ("bw", "rate")
print(f"{'test':13} {'size':>8} " + " ".join(f"{m:>22}" for m in mpis) + f" {'ratio':>6}")
print(f"{'':13} {'':>8} " + " ".join(f"{'median (range)':>22}" for m in mpis))
order = ["lat", "bw", "rate"] + [c + s for s in ("", "/2x1") for c in ("allreduce", "bcast", "allgather", "alltoall")]
for (t, n) in sorted(vals, key=lambda k: (order.index(k[0]), k[1])):
    row = vals[(t, n)]
    med = {m: statistics.median(v) for m, v in row.items() if v}
    cells = []
    for m in mpis:
        v = row.get(m, [])
        cells.append(f"{med[m]:>9.2f} ({min(v):.1f}-{max(v):.1f})" if v else f"{'-':>22}")
    peers = [med[m] for m in mpis if m != "oxmpi" and m in med]
    best = (max(peers) if t in hi else min(peers)) if peers else None
    ratio = f"{med['oxmpi'] / best:6.2f}" if best and "oxmpi" in med else "     -"
    print(f"{t:13} {n:>8} " + " ".join(f"{c:>22}" for c in cells) + f" {ratio}")
for t, floor in floors.items():
    print(f"ucx_perftest {t} 8 B (typical, us): median {statistics.median(floor):.2f} (range {min(floor):.2f}-{max(floor):.2f})")
print(f"(median over {reps} launches of each launch's median per-iteration figure; lat and collectives in us, lower is better; bw MB/s and rate msg/s, higher is better; ratio: OxMPI / faster peer)")
PY
