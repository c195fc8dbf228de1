#!/usr/bin/env bash
# Node-level figures of OxMPI, Open MPI and MPICH side by side (issue 5):
# launch time of `mpirun -n 4` of a hello program (median of 7), resident
# memory per rank at 8 ranks, and, at 8 ranks on this machine's cores, a
# ping-pong pair's 8 B latency while six ranks wait in MPI_Recv plus the CPU
# a rank uses while blocked for 2 s in MPI_Recv (benches/node_bench.c).
# Usage: benches/node_compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] && ! command -v mpicc.openmpi >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev mpich libmpich-dev >/dev/null
fi
make install PREFIX="$PWD/build/prefix" >/dev/null
out=build/bench; mkdir -p "$out"
cat > "$out/hello.c" <<'C'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int r, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    printf("hello %d of %d\n", r, n);
    MPI_Finalize();
    return 0;
}
C
build/prefix/bin/mpicc -O2 "$out/hello.c" -o "$out/hello_oxmpi"
mpicc.openmpi -O2 "$out/hello.c" -o "$out/hello_openmpi"
mpicc.mpich -O2 "$out/hello.c" -o "$out/hello_mpich"
build/prefix/bin/mpicc -O2 benches/node_bench.c -o "$out/node_oxmpi"
mpicc.openmpi -O2 benches/node_bench.c -o "$out/node_openmpi"
mpicc.mpich -O2 benches/node_bench.c -o "$out/node_mpich"
python3 - "$out" <<'PY'
import subprocess, sys, time, statistics
out = sys.argv[1]
run = {
    "oxmpi": ["build/prefix/bin/mpirun", "-n"],
    "openmpi": ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-n"],
    "mpich": ["mpiexec.hydra", "-n"],
}
launch = {k: [] for k in run}
for _ in range(7):
    for k, c in run.items():
        t = time.time()
        subprocess.run(c + ["4", f"{out}/hello_{k}"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        launch[k].append((time.time() - t) * 1000)
vals = {k: {"launch_ms": statistics.median(v)} for k, v in launch.items()}
for k, c in run.items():
    for what in ("rss", "oversub"):
        r = subprocess.run(c + ["8", f"{out}/node_{k}", what], check=True, capture_output=True, text=True, timeout=300)
        for line in r.stdout.split("\n"):
            f = line.split()
            if len(f) == 2:
                vals[k][f[0]] = float(f[1])
names = ["launch_ms", "rss_max_kib", "rss_mean_kib", "pair_latency_us", "blocked_recv_cpu_percent"]
print(f"{'figure':26} {'OxMPI':>10} {'Open MPI':>10} {'MPICH':>10} {'ratio':>7}   (lower is better; ratio = OxMPI / better peer)")
for n in names:
    m = {k: vals[k].get(n, float("nan")) for k in run}
    best = min(m["openmpi"], m["mpich"])
    print(f"{n:26} {m['oxmpi']:>10.2f} {m['openmpi']:>10.2f} {m['mpich']:>10.2f} {m['oxmpi'] / best if best else float('nan'):>7.2f}")
PY
