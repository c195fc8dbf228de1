#!/usr/bin/env bash
# Jobs across pretend hosts (tools/hosts.sh: network, UTS, IPC and mount
# namespaces on one machine, traffic only inside them), started by MPICH's
# Hydra through the hosts' launcher agent: ranks on different hosts talk
# through the UCX link, ranks on one host through shared memory. Every job
# has a timeout that kills it on every host; the hosts are torn down on exit,
# whatever happened, and the script checks that nothing is left behind.
# Needs root, iproute2, util-linux and Debian's mpich (Hydra); skips without.
set -euo pipefail
prefix=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$root/build/tests/multihost
mkdir -p "$out"
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! command -v ip >/dev/null \
  || ! command -v mpiexec.hydra >/dev/null; then
  echo "skipped: needs root, unshare, ip and mpiexec.hydra"
  exit 0
fi
hosts=$(mktemp -d /tmp/oxhosts.XXXXXX)
cleanup() { "$root/tools/hosts.sh" down "$hosts" || true; }
trap cleanup EXIT
fail=0
progs="crash_signal link_conformance p2p_basic p2p_nonblocking p2p_probe p2p_bsend icoll coll_dtypes intercomm dtypes"
for p in $progs; do
  "$prefix/bin/mpicc" -I"$here" "$here/$p.c" -o "$out/$p"
done
run() { # name, want, hostlist, ranks, program
  local name=$1 want=$2 hl=$3 n=$4 p=$5 got
  # mpiexec runs inside host 1; the agent starts its proxies in the others.
  if got=$(timeout 120 "$hosts/agent" oxhnode1 \
      "timeout 100 mpiexec.hydra -launcher ssh -launcher-exec $hosts/agent -hosts $hl -n $n $out/$p" 2>&1) \
      && grep -q -- "$want" <<<"$got"; then
    echo "ok   $name"
  else
    echo "FAIL $name"; echo "$got" | tail -20; fail=1
  fi
}
"$root/tools/hosts.sh" up 3 "$hosts"
for p in $progs; do
  case $p in crash*) continue ;; esac
  run "$p, 2 hosts x 2 ranks" "" oxhnode1:2,oxhnode2:2 4 "$p"
done
# A rank on host 2 is killed (SIGKILL) while the others wait in MPI_Recv on
# hosts 1 and 2: the job ends, quickly and with a failure, on every host.
# (A rank that calls exit(3) before MPI_Finalize is not here: Hydra started
# through the agent leaves the other hosts' ranks waiting, for MPICH's own
# programs too; our mpirun across hosts is to end such a job.)
for p in crash_signal; do
  start=$(date +%s)
  if timeout 60 "$hosts/agent" oxhnode1 \
      "timeout 50 mpiexec.hydra -launcher ssh -launcher-exec $hosts/agent -hosts oxhnode1:1,oxhnode2:2 -n 3 $out/$p" >"$out/$p.log" 2>&1; then
    echo "FAIL $p across hosts: the job succeeded"; fail=1
  elif [ $(( $(date +%s) - start )) -ge 45 ]; then
    echo "FAIL $p across hosts: the job hung until its timeout"; tail -5 "$out/$p.log"; fail=1
  else
    echo "ok   $p across hosts: the job ends with a failure"
  fi
done
run "link_conformance, 2 hosts x 1 rank" "ok at 2 ranks" oxhnode1:1,oxhnode2:1 2 link_conformance
run "link_conformance, 3 hosts x 1-2 ranks" "ok at 5 ranks" oxhnode1:2,oxhnode2:1,oxhnode3:2 5 link_conformance
run "p2p_basic, 3 hosts x 1 rank" "p2p_basic ok" oxhnode1:1,oxhnode2:1,oxhnode3:1 3 p2p_basic
# A job across hosts where libucp cannot be found fails in MPI_Init. (The
# message naming the hosts and what to install is checked by the suite's
# OXMPI_TEST_UCX case under our mpirun: Hydra may drop the output of a rank
# that its abort of the others overtakes.)
if timeout 60 "$hosts/agent" oxhnode1 \
    "OXMPI_UCX_LIB=liboxmpi-hidden-ucp.so.0 timeout 50 mpiexec.hydra -launcher ssh -launcher-exec $hosts/agent -genvall -hosts oxhnode1:1,oxhnode2:1 -n 2 $out/p2p_basic" >"$out/noucx.log" 2>&1; then
  echo "FAIL a job without libucp ran"; fail=1
else
  echo "ok   a job across hosts without libucp fails in MPI_Init"
fi
cleanup
trap - EXIT
if ip netns list | grep -q "^oxh"; then
  echo "FAIL pretend hosts left behind: $(ip netns list | tr '\n' ' ')"; fail=1
else
  echo "ok   pretend hosts torn down"
fi
exit $fail
