#!/usr/bin/env bash
# Before/after comparison of two OxMPI builds: alternated launches of
# benches/p2p_bench.c (2 ranks) and benches/coll_bench.c (2 and 4 ranks),
# REPS launches each; prints the median per figure and the speed ratio
# after/before (>1: the second build is faster; times inverted).
# Usage: benches/before_after.sh BEFORE_PREFIX AFTER_PREFIX [REPS]
# A prefix is what `make install PREFIX=...` made (for an older commit:
# git worktree add /tmp/old REV && make -C /tmp/old install PREFIX=/tmp/old/prefix).
set -euo pipefail
cd "$(dirname "$0")/.."
before=$1; after=$2; reps=${3:-7}
out=build/bench/ba; mkdir -p "$out"
for v in before after; do
  p=${!v}
  "$p/bin/mpicc" -O2 benches/p2p_bench.c -o "$out/p2p_$v"
  "$p/bin/mpicc" -O2 benches/coll_bench.c -o "$out/coll_$v"
done
colls=allreduce,bcast,allgather,alltoall
order="before after"
for r in $(seq "$reps"); do
  for v in $order; do
    p=${!v}
    {
      "$p/bin/mpirun" -n 2 "$out/p2p_$v" lat 8
      "$p/bin/mpirun" -n 2 "$out/p2p_$v" rate 8
      "$p/bin/mpirun" -n 2 "$out/p2p_$v" bw 4194304
      "$p/bin/mpirun" -n 2 "$out/coll_$v" 4194304 world $colls 8 | sed 's/^/np2-/'
      "$p/bin/mpirun" -n 4 "$out/coll_$v" 4194304 world $colls 8 | sed 's/^/np4-/'
    } > "$out/$v.$r"
  done
  order=$(echo $order | tr ' ' '\n' | tac | tr '\n' ' ')
done
python3 - "$out" "$reps" <<'PY'
import sys, statistics, collections
out, reps = sys.argv[1], int(sys.argv[2])
want = {("lat", 0), ("lat", 8), ("rate", 8), ("bw", 65536), ("bw", 4194304)}
vals = collections.defaultdict(lambda: collections.defaultdict(list))
for v in ("before", "after"):
    for r in range(1, reps + 1):
        for line in open(f"{out}/{v}.{r}"):
            f = line.split()
            if len(f) != 3:
                continue
            k = (f[0], int(f[1]))
            if k in want or (f[0].startswith("np") and k[1] in (8, 65536, 4194304)):
                vals[k][v].append(float(f[2]))
print(f"{'figure':16} {'size':>8} {'before':>10} {'after':>10} {'speed':>6}   (median of {reps} alternated; us, or MB/s for bw, msg/s for rate)")
for k in sorted(vals):
    m = {v: statistics.median(x) for v, x in vals[k].items()}
    if len(m) < 2:
        continue
    faster_is_higher = k[0] in ("bw", "rate")
    s = m["after"] / m["before"] if faster_is_higher else m["before"] / m["after"]
    print(f"{k[0]:16} {k[1]:>8} {m['before']:>10.3f} {m['after']:>10.3f} {s:>6.2f}")
PY
