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
progs="link_conformance p2p_basic p2p_nonblocking p2p_probe p2p_bsend icoll coll_dtypes intercomm dtypes"
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
  run "$p, 2 hosts x 2 ranks" "" oxhnode1:2,oxhnode2:2 4 "$p"
done
run "link_conformance, 2 hosts x 1 rank" "ok at 2 ranks" oxhnode1:1,oxhnode2:1 2 link_conformance
run "link_conformance, 3 hosts x 1-2 ranks" "ok at 5 ranks" oxhnode1:2,oxhnode2:1,oxhnode3:2 5 link_conformance
run "p2p_basic, 3 hosts x 1 rank" "p2p_basic ok" oxhnode1:1,oxhnode2:1,oxhnode3:1 3 p2p_basic
# A job across hosts where libucp cannot be found fails in MPI_Init,
# naming the host pair and what to install.
if got=$(timeout 60 "$hosts/agent" oxhnode1 \
    "OXMPI_UCX_LIB=liboxmpi-hidden-ucp.so.0 timeout 50 mpiexec.hydra -launcher ssh -launcher-exec $hosts/agent -genvall -hosts oxhnode1:1,oxhnode2:1 -n 2 $out/p2p_basic" 2>&1); then
  echo "FAIL a job without libucp ran"; fail=1
elif grep -q "need an inter-node transport" <<<"$got" && grep -q "apt-get install libucx0" <<<"$got"; then
  echo "ok   a job across hosts without libucp fails in MPI_Init with what to install"
else
  echo "FAIL a job without libucp: unexpected output"; echo "$got" | tail -10; fail=1
fi
cleanup
trap - EXIT
if ip netns list | grep -q "^oxh"; then
  echo "FAIL pretend hosts left behind: $(ip netns list | tr '\n' ' ')"; fail=1
else
  echo "ok   pretend hosts torn down"
fi
exit $fail
