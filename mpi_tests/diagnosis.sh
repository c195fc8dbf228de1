#!/usr/bin/env bash
# The diagnosis OxMPI gives of itself (issue 22): the profile at finalize
# (OXMPI_PROFILE, mpirun --profile[=FILE]), its counts, bytes and pairs
# checked against a program with known calls (mpi_tests/profile.c) at 1, 2
# and 4 ranks (4 oversubscribes a 2-CPU machine); the hang report of
# deliberate hangs (mpi_tests/deadlock.c) when --timeout fires and on
# SIGQUIT. Every job runs under timeout and mpirun --timeout.
# Usage: diagnosis.sh PREFIX
set -uo pipefail
prefix=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/../build/tests/diagnosis" && mkdir -p "$here/../build/tests/diagnosis"
out=$(cd "$here/../build/tests/diagnosis" && pwd)
bin=$prefix/bin
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
"$bin/mpicc" -I"$here" "$here/profile.c" -o "$out/profile" || { echo "FAIL build profile.c"; exit 1; }
"$bin/mpicc" -I"$here" "$here/deadlock.c" -o "$out/deadlock" || { echo "FAIL build deadlock.c"; exit 1; }
M="$bin/mpirun --timeout 60"

for n in 1 2 4; do
  rm -f "$out/p.json"
  if timeout 90 $M -n $n --profile="$out/p.json" "$out/profile" >"$out/o" 2>"$out/e"; then
    if python3 - "$out/p.json" "$out/e" $n <<'PY'
import json, sys
path, err, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = json.load(open(path))
f = {x["name"]: x for x in p["functions"]}
def want(cond, what):
    if not cond:
        print("profile:", what); sys.exit(1)
want(p["ranks"] == n, f"ranks {p['ranks']}")
for name, calls in [("MPI_Init", 1), ("MPI_Comm_rank", 1), ("MPI_Comm_size", 1), ("MPI_Barrier", 10),
                    ("MPI_Send", 5), ("MPI_Recv", 5), ("MPI_Allreduce", 3), ("MPI_Irecv", 2),
                    ("MPI_Isend", 2), ("MPI_Waitall", 1)]:
    want(name in f, f"{name} missing")
    want(f[name]["calls"] == calls * n, f"{name}: {f[name]['calls']} calls, not {calls * n}")
    want(f[name]["per_rank"]["calls"] == [calls] * n, f"{name}: per rank {f[name]['per_rank']['calls']}")
    want(f[name]["time_ns"] > 0, f"{name}: no time")
    want(0 <= f[name]["wait_ns"] <= f[name]["time_ns"], f"{name}: wait {f[name]['wait_ns']} of {f[name]['time_ns']}")
want("MPI_Finalize" not in f, "MPI_Finalize reported (its record ends after the report)")
want(f["MPI_Send"]["bytes"] == 5 * 400 * n, f"MPI_Send bytes {f['MPI_Send']['bytes']}")
want(f["MPI_Isend"]["bytes"] == 2 * 400 * n, f"MPI_Isend bytes {f['MPI_Isend']['bytes']}")
want(f["MPI_Recv"]["bytes"] == 0, f"MPI_Recv bytes {f['MPI_Recv']['bytes']}")
m = p["bytes_sent"]
for r in range(n):
    nxt = (r + 1) % n
    want(m[r][nxt] >= 7 * 400, f"bytes_sent[{r}][{nxt}] = {m[r][nxt]}")
text = open(err).read()
want(f"OxMPI profile: {n} ranks" in text, "no table on stderr")
want("MPI_Send" in text and "heaviest pairs" in text, "table lacks rows or pairs")
PY
    then ok "profile at $n ranks: calls, bytes, pairs and the table"; else bad "profile at $n ranks"; tail -20 "$out/e"; fi
  else
    bad "profile job at $n ranks: exit $?"; tail -5 "$out/e"
  fi
done

# mpirun --profile alone prints the table; without it nothing is printed.
if timeout 90 $M -n 2 --profile "$out/profile" >"$out/o" 2>"$out/e" && grep -q "OxMPI profile: 2 ranks" "$out/e" \
   && grep -q "MPI_Barrier" "$out/e"; then ok "mpirun --profile prints the table"; else bad "mpirun --profile"; tail -5 "$out/e"; fi
if timeout 90 $M -n 2 "$out/profile" >"$out/o" 2>"$out/e" && ! grep -q "OxMPI profile" "$out/e"; then
  ok "no profile without --profile"; else bad "a profile printed unasked"; fi
if timeout 90 env OXMPI_PROFILE=1 $M -n 2 "$out/profile" >"$out/o" 2>"$out/e" && grep -q "OxMPI profile: 2 ranks" "$out/e"; then
  ok "OXMPI_PROFILE=1 prints the table"; else bad "OXMPI_PROFILE=1"; fi
if timeout 90 env OXMPI_PROFILE=/nonexistent/dir/p.json $M -n 1 "$out/profile" >"$out/o" 2>"$out/e"; then
  bad "an unwritable profile file passed silently"
elif grep -q "OXMPI_PROFILE=/nonexistent/dir/p.json: the JSON profile could not be written" "$out/e"; then
  ok "an unwritable profile file is an error naming it"
else bad "an unwritable profile file: $(tail -2 "$out/e")"; fi

# The hang report: a deliberate deadlock gives its cycle when --timeout fires.
hang() { # name, mode, ranks, text the report must hold...
  local name=$1 mode=$2 n=$3; shift 3
  DEADLOCK=$mode timeout 60 "$bin/mpirun" -n $n --timeout 6 "$out/deadlock" >"$out/o" 2>"$out/e"
  local rc=$? miss=""
  for t in "$@"; do grep -qF -- "$t" "$out/e" || miss="$miss [$t]"; done
  if [ $rc = 124 ] && [ -z "$miss" ]; then ok "hang report: $name"; else bad "hang report: $name: exit $rc, missing$miss"; cat "$out/e"; fi
}
hang "two receives wait for each other" recv 2 \
  "deadlock: rank 0 waits in MPI_Recv(src=1, tag=7) while rank 1 waits in MPI_Recv(src=0, tag=7)" \
  "mpirun: job timed out after 6 s"
hang "a barrier waits for a receiver" coll 3 \
  "rank 2: waits in MPI_Barrier(comm=MPI_COMM_WORLD) for rank 1" \
  "deadlock: rank 0 waits in MPI_Barrier(comm=MPI_COMM_WORLD) for rank 1 while rank 1 waits in MPI_Recv(src=0, tag=MPI_ANY_TAG)"
hang "collectives out of step" steps 3 \
  "collectives out of step on MPI_COMM_WORLD: rank 1 at call 1 (MPI_Allreduce); ranks 0, 2 at call 2 (MPI_Barrier)"
hang "a rank computing outside MPI" compute 3 \
  "rank 1: no answer (not waiting in MPI" "rank 0 -> rank 1 (which does not wait in MPI)" "rank 0: waits in MPI_Recv(src=1, tag=3)"
# SIGQUIT to mpirun: the report, and the job goes on (until its timeout).
DEADLOCK=recv timeout 60 "$bin/mpirun" -n 2 --timeout 10 "$out/deadlock" >"$out/o" 2>"$out/e" &
job=$!
sleep 4
pkill -QUIT -P $job -x mpirun 2>/dev/null || kill -QUIT $(pgrep -f "mpirun -n 2 --timeout 10 $out/deadlock" | head -1) 2>/dev/null
wait $job; rc=$?
reports=$(grep -c "mpirun: hang report" "$out/e")
if [ $rc = 124 ] && [ "$reports" = 2 ] && grep -q "deadlock: rank 0 waits in MPI_Recv(src=1, tag=7)" "$out/e"; then
  ok "hang report on SIGQUIT, the job going on"; else bad "SIGQUIT: exit $rc, $reports reports"; cat "$out/e"; fi

# OXMPI_HANG_REPORT=SECONDS: one report once every rank has waited that
# long, none while a rank computes.
DEADLOCK=recv OXMPI_HANG_REPORT=2 timeout 60 "$bin/mpirun" -n 2 --timeout 9 "$out/deadlock" >"$out/o" 2>"$out/e"; rc=$?
stuck=$(grep -c "mpirun: no rank has progressed for 2 s (OXMPI_HANG_REPORT)" "$out/e")
if [ $rc = 124 ] && [ "$stuck" = 1 ] && [ "$(grep -c "deadlock: rank 0 waits in MPI_Recv(src=1, tag=7)" "$out/e")" = 2 ]; then
  ok "OXMPI_HANG_REPORT: one report when nothing progresses"; else bad "OXMPI_HANG_REPORT: exit $rc, $stuck reports"; cat "$out/e"; fi
DEADLOCK=compute OXMPI_HANG_REPORT=1 timeout 60 "$bin/mpirun" -n 3 --timeout 6 "$out/deadlock" >"$out/o" 2>"$out/e"; rc=$?
if [ $rc = 124 ] && ! grep -q "no rank has progressed" "$out/e"; then
  ok "OXMPI_HANG_REPORT: none while a rank computes"; else bad "OXMPI_HANG_REPORT with a rank computing: exit $rc"; cat "$out/e"; fi

# Under another launcher (MPICH's Hydra here): each rank reports its own
# wait on its stderr, once per wait.
if command -v mpiexec.hydra >/dev/null; then
  DEADLOCK=recv OXMPI_HANG_REPORT=1 timeout 8 mpiexec.hydra -n 3 "$out/deadlock" >"$out/o" 2>"$out/e"; rc=$?
  sleep 1
  if pgrep -f "$out/deadlock" >/dev/null; then bad "Hydra left ranks behind"; pkill -KILL -f "$out/deadlock"; fi
  miss=""
  for t in "OxMPI hang report: rank 0 (" ") has waited" "in MPI_Recv: recv comm=MPI_COMM_WORLD src=1 wsrc=1 tag=7" \
           "OxMPI hang report: rank 1 (" "in MPI_Recv: recv comm=MPI_COMM_WORLD src=0 wsrc=0 tag=7" \
           "OxMPI hang report: rank 2 (" "in MPI_Barrier: coll comm=MPI_COMM_WORLD wranks=0,1"; do
    grep -qF -- "$t" "$out/e" || miss="$miss [$t]"
  done
  n0=$(grep -c "OxMPI hang report: rank 0 " "$out/e")
  if [ $rc = 124 ] && [ -z "$miss" ] && [ "$n0" = 1 ]; then
    ok "OXMPI_HANG_REPORT under Hydra: each rank reports its wait once"
  else bad "OXMPI_HANG_REPORT under Hydra: exit $rc, rank 0 reported $n0 times, missing$miss"; cat "$out/e"; fi
else
  echo "skipped: OXMPI_HANG_REPORT under Hydra (no mpiexec.hydra)"
fi

left=$(ls /dev/shm | grep '^oxmpi-' || true)
[ -z "$left" ] || { echo "FAIL: left in /dev/shm: $left"; fail=1; }
exit $fail
