#!/usr/bin/env bash
# Jobs across pretend hosts (tools/hosts.sh: network, UTS, IPC and mount
# namespaces on one machine, traffic only inside them), started by our
# mpirun in host 1 (its proxies in the other hosts through the hosts'
# launcher agent) and by MPICH's Hydra the same way: ranks on different
# hosts talk through the UCX link, ranks on one host through shared memory.
# Every job has a timeout that kills it on every host; after each job the
# script checks that no process of it and no /dev/shm file is left on any
# host; the hosts are torn down on exit, whatever happened.
# Needs root, iproute2 and util-linux (skips without); Hydra's part needs
# Debian's mpich.
set -euo pipefail
prefix=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$root/build/tests/multihost
mkdir -p "$out"
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! command -v ip >/dev/null; then
  echo "skipped: needs root, unshare and ip"
  exit 0
fi
hosts=$(mktemp -d /tmp/oxhosts.XXXXXX)
cleanup() { "$root/tools/hosts.sh" down "$hosts" || true; }
trap cleanup EXIT
fail=0
progs="crash crash_signal abort peer_exit idle_wait link_conformance p2p_basic p2p_nonblocking p2p_probe p2p_bsend icoll coll_dtypes coll_basic intercomm dtypes threads rma_basic rma_passive rma_batch"
for p in $progs mpmd deadlock mpit; do
  "$prefix/bin/mpicc" -I"$here" "$here/$p.c" -o "$out/$p" -lpthread -lm
done
nhosts=3
"$root/tools/hosts.sh" up $nhosts "$hosts"
A=$hosts/agent
M="timeout 100 $prefix/bin/mpirun --timeout 90 --launcher-exec $A"

# Nothing of a job may outlive it: no process running a program from $out
# (or its proxy), no job file in any host's /dev/shm.
leftovers() {
  local left=""
  sleep 0.2
  if pgrep -f "$out/|--oxmpi-proxy" >/dev/null; then
    left="processes: $(pgrep -fa "$out/|--oxmpi-proxy" | head -3 | tr '\n' ';')"
    pkill -9 -f "$out/|--oxmpi-proxy" || true
  fi
  for i in $(seq $nhosts); do
    local f
    f=$("$A" "oxhnode$i" "ls /dev/shm | grep '^oxmpi-' || true")
    if [ -n "$f" ]; then
      left="$left oxhnode$i:/dev/shm: $f"
      "$A" "oxhnode$i" "rm -f /dev/shm/oxmpi-*"
    fi
  done
  if [ -n "$left" ]; then echo "FAIL $1 left behind: $left"; fail=1; fi
}

# name, expected exit status ('!0': any failure but a timeout), text the output must hold ('' for none),
# command (run through the agent in host 1)
expect() {
  local name=$1 rc=$2 want=$3 cmd=$4 got st
  set +e
  got=$(timeout 120 "$A" oxhnode1 "$cmd" 2>&1)
  st=$?
  set -e
  if { [ "$st" = "$rc" ] || { [ "$rc" = '!0' ] && [ $st != 0 ] && [ $st != 124 ]; }; } \
     && { [ -z "$want" ] || grep -q -- "$want" <<<"$got"; }; then
    echo "ok   $name"
  else
    echo "FAIL $name: exit $st (want $rc${want:+, output with '$want'})"; echo "$got" | tail -15; fail=1
  fi
  leftovers "$name"
}

# ---- our mpirun across hosts: the programs at 2 hosts x 2 ranks and 3 hosts x 1-2
for p in $progs; do
  case $p in crash*|abort|peer_exit) continue ;; esac
  expect "$p, 2 hosts x 2 ranks" 0 "" "$M --host oxhnode1:2,oxhnode2:2 $out/$p"
done
expect "link_conformance, 2 hosts x 1 rank" 0 "ok at 2 ranks" "$M -H oxhnode1,oxhnode2 $out/link_conformance"
expect "link_conformance, 3 hosts x 1-2 ranks" 0 "ok at 5 ranks" "$M --host oxhnode1:2,oxhnode2:1,oxhnode3:2 $out/link_conformance"
for p in p2p_basic icoll coll_basic; do
  expect "$p, 3 hosts x 1 rank" 0 "" "$M --host oxhnode1,oxhnode2,oxhnode3 $out/$p"
done
# One-sided operations: ranks of a node by shared memory, of other nodes by UCX.
expect "rma_basic, 3 hosts x 2,1,2" 0 "rma_basic ok" "$M --host oxhnode1:2,oxhnode2:1,oxhnode3:2 $out/rma_basic"
expect "rma_passive, 3 hosts x 1 rank" 0 "rma_passive ok" "$M --host oxhnode1,oxhnode2,oxhnode3 $out/rma_passive"
expect "rma_batch, 3 hosts x 2,1,2" 0 "rma_batch ok" "$M --host oxhnode1:2,oxhnode2:1,oxhnode3:2 $out/rma_batch"
expect "rma_batch, 2 hosts x 1 rank, acc_single_intrinsic" 0 "rma_batch ok" "$M -x RMA_TEST_INTRINSIC=1 --host oxhnode1,oxhnode2 $out/rma_batch"
# mpirun need not be on a host of the job.
expect "p2p_basic on hosts 2 and 3 only, started from host 1" 0 "p2p_basic ok" \
  "$M --host oxhnode2:2,oxhnode3:1 $out/p2p_basic"

# ---- every collective algorithm forced across hosts (at 2 hosts x 2 ranks
# and 3 hosts x 2,1,2; the node-aware forms switch on by themselves there)
forced=(
  "OXMPI_ALLREDUCE=rabenseifner OXMPI_ALLGATHER=bruck OXMPI_ALLTOALL=bruck OXMPI_BCAST=pipeline OXMPI_GATHER=binomial OXMPI_SCATTER=binomial OXMPI_SCAN=recursive_doubling OXMPI_REDUCE_SCATTER=recursive_halving"
  "OXMPI_ALLREDUCE=ring OXMPI_ALLGATHER=ring OXMPI_ALLTOALL=pairwise OXMPI_BCAST=binomial OXMPI_GATHER=linear OXMPI_SCATTER=linear OXMPI_SCAN=linear OXMPI_REDUCE_SCATTER=reduce_scatterv OXMPI_BARRIER=dissemination OXMPI_REDUCE=binomial"
  "OXMPI_BCAST=linear OXMPI_ALLGATHER=linear OXMPI_ALLTOALL=linear OXMPI_ALLREDUCE=linear OXMPI_REDUCE_SCATTER=linear"
  "OXMPI_ALLREDUCE=recursive_doubling OXMPI_ALLGATHER=recursive_doubling OXMPI_BCAST=scatter_allgather OXMPI_REDUCE_SCATTER=pairwise"
  "OXMPI_ALLREDUCE=hierarchical OXMPI_ALLGATHER=hierarchical OXMPI_BCAST=hierarchical OXMPI_REDUCE_SCATTER=ring"
  "OXMPI_ALLGATHER=shm_cma OXMPI_ALLTOALL=shm_cma OXMPI_BCAST=shm_cma OXMPI_ALLREDUCE=shm_cma OXMPI_REDUCE_SCATTER=shm_cma OXMPI_REDUCE=shm_cma OXMPI_BARRIER=shm"
)
for f in "${forced[@]}"; do
  short=$(echo "$f" | sed 's/OXMPI_//g' | cut -c1-60)
  expect "coll_basic, 2 hosts x 2, forced: $short..." 0 "" "$f $M --host oxhnode1:2,oxhnode2:2 $out/coll_basic"
  expect "coll_dtypes, 3 hosts x 2,1,2, forced: $short..." 0 "" "$f $M --host oxhnode1:2,oxhnode2:1,oxhnode3:2 $out/coll_dtypes"
done
expect "icoll, 3 hosts x 2,1,2, forced: ${forced[0]:0:40}..." 0 "" "${forced[0]} $M --host oxhnode1:2,oxhnode2:1,oxhnode3:2 $out/icoll"

# ---- placement: host lists, host files in both forms, -ppn, --map-by node
where='sh -c "echo \$PMI_RANK \$(hostname) \$MPI_LOCALRANKID/\$MPI_LOCALNRANKS"'
place() { # name, want (sorted "rank host local/n" lines joined by ';'), mpirun args
  local name=$1 want=$2 got
  got=$(timeout 60 "$A" oxhnode1 "$M $3 $where" 2>&1 | sort -n | tr '\n' ';')
  if [ "$got" = "$want" ]; then echo "ok   placement: $name"; else
    echo "FAIL placement: $name: got '$got', want '$want'"; fail=1; fi
}
place "--host a:2,b:2 fills a first" "0 oxhnode1 0/2;1 oxhnode1 1/2;2 oxhnode2 0/2;3 oxhnode2 1/2;" "--host oxhnode1:2,oxhnode2:2"
place "--map-by node takes turns" "0 oxhnode1 0/2;1 oxhnode2 0/2;2 oxhnode1 1/2;3 oxhnode2 1/2;" "--host oxhnode1:2,oxhnode2:2 --map-by node"
printf 'oxhnode2 slots=1  # Open MPI form\noxhnode3 slots=2\n' > "$out/hosts.ompi"
printf '# MPICH form\noxhnode3:1\noxhnode1:2\n' > "$out/hosts.mpich"
place "--hostfile with 'host slots=N'" "0 oxhnode2 0/1;1 oxhnode3 0/2;2 oxhnode3 1/2;" "--hostfile $out/hosts.ompi"
place "-f with 'host:N', -n 2" "0 oxhnode3 0/1;1 oxhnode1 0/1;" "-f $out/hosts.mpich -n 2"
place "-ppn 1 over 3 hosts" "0 oxhnode1 0/1;1 oxhnode2 0/1;2 oxhnode3 0/1;" "-ppn 1 --host oxhnode1,oxhnode2,oxhnode3"
place "--map-by ppr:2:node" "0 oxhnode2 0/2;1 oxhnode2 1/2;2 oxhnode3 0/2;3 oxhnode3 1/2;" "--map-by ppr:2:node --host oxhnode2,oxhnode3"
place "--oversubscribe wraps around" "0 oxhnode1 0/2;1 oxhnode2 0/1;2 oxhnode1 1/2;" "--oversubscribe -n 3 --host oxhnode1,oxhnode2"
expect "more ranks than slots is an error" 2 "3 ranks but only 2 slots" "$M -n 3 --host oxhnode1,oxhnode2 true"

# ---- output, stdin, environment
expect "tagged output from every host" 0 "\[2\] rank2-oxhnode2" \
  "$M -l --host oxhnode1:2,oxhnode2:1 sh -c 'echo rank\$PMI_RANK-\$(hostname)'"
expect "stdin reaches rank 0 on another host" 0 "got b on oxhnode2" \
  "printf 'a\nb\n' | $M --host oxhnode2:1,oxhnode1:1 sh -c 'while read x; do echo got \$x on \$(hostname); done'"
expect "-x and the environment reach the other hosts" 0 "X=1 Y=2 on oxhnode3" \
  "Y=2 $M -x X=1 --host oxhnode3 sh -c 'echo X=\$X Y=\$Y on \$(hostname)'"
expect "a program missing on another host" 127 "cannot start $out/nonexistent in .* on oxhnode2" \
  "$M --host oxhnode2:2 $out/nonexistent"
expect "an unreachable host" 1 "cannot start ranks on host oxhnode2" \
  "$M --launcher-exec /bin/false --host oxhnode1,oxhnode2 $out/p2p_basic"

expect "MPMD blocks across hosts, -wdir and -x on another host" 0 "mpmd: 3 ranks, sum of appnums 2, argv\[1\]=first" \
  "$M --host oxhnode1,oxhnode2:2 -n 1 -x TEST_APPNUM=0 -x TEST_FIRST=0 $out/mpmd first : -n 2 -x TEST_APPNUM=1 -x TEST_FIRST=1 -wdir /tmp -x TEST_WDIR=/tmp $out/mpmd"
rm -rf "$out/of"
expect "--output-filename across hosts" 0 "" \
  "$M --host oxhnode1,oxhnode2 --output-filename $out/of sh -c 'echo out \$(hostname); echo err >&2'"
if [ "$(cat "$out/of/1/rank.1/stdout" "$out/of/1/rank.1/stderr" 2>/dev/null | tr '\n' ' ')" = "out oxhnode2 err " ]; then
  echo "ok   --output-filename: rank 1's files hold its output from oxhnode2"
else
  echo "FAIL --output-filename: $(cat "$out"/of/1/rank.1/* 2>&1 | tr '\n' ' ')"; fail=1
fi
expect "--report-bindings names the other host" 0 "rank 1 (pid [0-9]*, oxhnode2) bound to CPUs" "$M --report-bindings --host oxhnode1,oxhnode2 true"

# ---- failures end the job on every host, fast, with the rank's code
expect "a rank on host 2 exits with code 3 before MPI_Finalize" 3 "rank 1 (pid [0-9]* on oxhnode2) exited with code 3 before MPI_Finalize" \
  "$M --host oxhnode1:1,oxhnode2:2 $out/crash"
expect "a rank on host 2 killed by SIGKILL" 137 "on oxhnode2) was killed by signal 9" \
  "$M --host oxhnode1:1,oxhnode2:2 $out/crash_signal"
expect "MPI_Abort on host 2" 7 "rank 2 called MPI_Abort with error code 7" \
  "$M --host oxhnode1:1,oxhnode2:3 $out/abort"
expect "a rank that shows a wrong secret is refused" 16 "refused a PMI connection from 10.200.0.2" \
  "$M --host oxhnode1,oxhnode2 sh -c '[ \$(hostname) = oxhnode2 ] && export OXMPI_PMI_SECRET=0; exec $out/p2p_basic'"
expect "--timeout across hosts" 124 "timed out" \
  "timeout 60 $prefix/bin/mpirun --timeout 1 --launcher-exec $A --host oxhnode1,oxhnode2,oxhnode3 sleep 30"
# The hang report across hosts: ranks on hosts 2 and 3 wait for each
# other; each answers over its PMI connection, and the timeout then ends
# the job everywhere.
expect "hang report across hosts" 124 "deadlock: rank 0 waits in MPI_Recv(src=1, tag=7) while rank 1 waits in MPI_Recv(src=0, tag=7)" \
  "timeout 60 $prefix/bin/mpirun --timeout 8 --launcher-exec $A -x DEADLOCK=recv --host oxhnode2,oxhnode3 $out/deadlock"
expect "hang report across hosts: collectives out of step" 124 \
  "collectives out of step on MPI_COMM_WORLD: rank 1 at call 1 (MPI_Allreduce); ranks 0, 2 at call 2 (MPI_Barrier)" \
  "timeout 60 $prefix/bin/mpirun --timeout 8 --launcher-exec $A -x DEADLOCK=steps --host oxhnode1,oxhnode2,oxhnode3 $out/deadlock"
# The profile and the tools interface's counters across hosts (ranks 0
# and 1 talk through UCX there: MPIT_UCX tells mpit so).
expect "profile across hosts" 0 "OxMPI profile: 3 ranks" \
  "$M --profile --host oxhnode1,oxhnode2:2 $out/p2p_basic"
expect "MPI_T counters across hosts" 0 "mpit ok" \
  "$M -x OXMPI_EAGER_LIMIT=4096 -x OXMPI_UCX_EAGER_LIMIT=4096 -x MPIT_UCX=1 --host oxhnode1,oxhnode2 $out/mpit"
# Ctrl-C (SIGINT) to mpirun ends the job everywhere with 130; a SIGKILLed
# mpirun takes its ranks (and the other hosts' proxies) with it.
expect "SIGINT to mpirun" 130 "received signal 2" \
  "$M --host oxhnode2:2,oxhnode3:1 sleep 30 & sleep 1; kill -INT \$!; wait \$!"
expect "SIGKILL to mpirun" 137 "" \
  "$prefix/bin/mpirun --launcher-exec $A --host oxhnode1,oxhnode2:2 sleep 30 & sleep 1; kill -KILL \$!; wait \$!"
# A job across hosts where libucp cannot be found fails in MPI_Init, saying
# which hosts need what.
expect "a job across hosts without libucp" 15 "ranks on host oxhnode[12] and host oxhnode[12] need an inter-node transport" \
  "OXMPI_UCX_LIB=liboxmpi-hidden-ucp.so.0 $M --host oxhnode1,oxhnode2 $out/p2p_basic"

# ---- the same binaries under MPICH's Hydra, through the same agent
if command -v mpiexec.hydra >/dev/null; then
  H="timeout 100 mpiexec.hydra -launcher ssh -launcher-exec $A"
  for p in link_conformance p2p_basic icoll intercomm; do
    expect "$p under Hydra, 2 hosts x 2 ranks" 0 "" "$H -hosts oxhnode1:2,oxhnode2:2 -n 4 $out/$p"
  done
  expect "link_conformance under Hydra, 3 hosts x 1-2 ranks" 0 "ok at 5 ranks" \
    "$H -hosts oxhnode1:2,oxhnode2:1,oxhnode3:2 -n 5 $out/link_conformance"
  # Hydra started through the agent leaves the other hosts' ranks running
  # when one exits early (for MPICH's own programs too): rank 0 must end by
  # itself when UCX reports its peer's endpoint failed, naming rank 1.
  expect "a peer's exit under Hydra: UCX's error callback ends rank 0" '!0' "lost world rank 1 on another host" \
    "$H -hosts oxhnode1:1,oxhnode2:1 -n 2 $out/peer_exit"
  start=$(date +%s)
  set +e
  timeout 60 "$A" oxhnode1 "$H -hosts oxhnode1:1,oxhnode2:2 -n 3 $out/crash_signal" >"$out/hydra_crash.log" 2>&1
  st=$?
  set -e
  if [ $st = 0 ] || [ $(( $(date +%s) - start )) -ge 50 ]; then
    echo "FAIL crash_signal under Hydra: exit $st after $(( $(date +%s) - start )) s"; tail -5 "$out/hydra_crash.log"; fail=1
  else
    echo "ok   crash_signal under Hydra: the job ends with a failure"
  fi
  leftovers "crash_signal under Hydra"
else
  echo "skipped: Hydra (no mpiexec.hydra)"
fi

hid=$(cat "$hosts/id")
cleanup
trap - EXIT
if ip netns list | grep -q "^oxh$hid-\|^oxbr$hid"; then
  echo "FAIL pretend hosts left behind: $(ip netns list | grep "$hid" | tr '\n' ' ')"; fail=1
else
  echo "ok   pretend hosts torn down"
fi
exit $fail
