#!/usr/bin/env bash
# The same binaries under a two-node Slurm on one machine: two pretend hosts
# (tools/hosts.sh), munged in the machine's own namespaces (its socket is
# shared), slurmctld in host 1 and a slurmd in each host, all with a private
# configuration and state under a temporary directory; then
# `srun --mpi=pmi2 -N 2 -n 4` (Slurm's pmi2 plugin answers PMI-1) runs
# point-to-point, collective and link programs across the two nodes, and a
# rank's early exit must end the job with a failure. Everything is stopped
# and torn down on exit, whatever happened, and nothing may be left.
# Needs root and Debian's slurmd, slurmctld, slurm-client, munge (skips
# without them).
# Usage: slurm.sh PREFIX
set -euo pipefail
prefix=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=$root/build/tests/slurm
mkdir -p "$out"
for c in slurmd slurmctld srun munged unshare ip; do
  if ! command -v $c >/dev/null || [ "$(id -u)" != 0 ]; then
    echo "skipped: needs root and $c"; exit 0
  fi
done
dir=$(mktemp -d /tmp/oxslurm.XXXXXX)
hosts=$dir/hosts
A=$hosts/agent
munge_started=0
cleanup() {
  for f in "$dir"/slurmd-*.pid "$dir"/slurmctld.pid; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  # The daemons take a moment (their steps first); then they are killed.
  for _ in $(seq 50); do pgrep -f "slurm.* -f $dir/slurm.conf" >/dev/null || break; sleep 0.1; done
  pkill -9 -f "slurm.* -f $dir/slurm.conf" 2>/dev/null || true
  if [ $munge_started = 1 ]; then
    pkill -f "munged --socket=$dir/munge/sock" 2>/dev/null || true
  fi
  "$root/tools/hosts.sh" down "$hosts" || true
  rm -rf "$dir"
}
trap cleanup EXIT
fail=0
for p in link_conformance p2p_basic p2p_nonblocking icoll coll_basic crash deadlock; do
  "$prefix/bin/mpicc" -I"$here" "$here/$p.c" -o "$out/$p" -lm
done
"$root/tools/hosts.sh" up 2 "$hosts"

# munge: a private socket, key, state and log, as user munge.
install -d -o munge -g munge -m 0700 "$dir/munge"
cp /etc/munge/munge.key "$dir/munge/key" 2>/dev/null \
  || dd if=/dev/urandom of="$dir/munge/key" bs=1 count=1024 2>/dev/null
chown munge:munge "$dir/munge/key"; chmod 0400 "$dir/munge/key"
chmod 0755 "$dir"
runuser -u munge -- munged --socket="$dir/munge/sock" --key-file="$dir/munge/key" \
  --pid-file="$dir/munge/pid" --log-file="$dir/munge/log" --seed-file="$dir/munge/seed" --force
munge_started=1

# cgroup v1 trees, which slurmd 22.05 wants, inside each host.
for i in 1 2; do
  "$A" oxhnode$i "mount -t tmpfs cgroup /sys/fs/cgroup && mkdir -p /sys/fs/cgroup/systemd /sys/fs/cgroup/freezer \
    && mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd \
    && mount -t cgroup -o freezer cgroup /sys/fs/cgroup/freezer"
done
mkdir -p "$dir/spool/oxhnode1" "$dir/spool/oxhnode2" "$dir/state"
cat > "$dir/slurm.conf" <<EOF
ClusterName=oxtest
SlurmctldHost=oxhnode1(10.200.0.1)
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/sock
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
SlurmctldPort=6817
SlurmdPort=6818
NodeName=oxhnode1 NodeAddr=10.200.0.1 CPUs=2 RealMemory=1000 State=UNKNOWN
NodeName=oxhnode2 NodeAddr=10.200.0.2 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=ox Nodes=oxhnode1,oxhnode2 Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$dir/slurm.conf
"$A" oxhnode1 "SLURM_CONF=$SLURM_CONF slurmctld -f $SLURM_CONF"
for i in 1 2; do "$A" oxhnode$i "SLURM_CONF=$SLURM_CONF slurmd -f $SLURM_CONF -N oxhnode$i"; done
ready=0
for _ in $(seq 100); do
  if "$A" oxhnode1 "SLURM_CONF=$SLURM_CONF sinfo -h -o '%T' 2>/dev/null" | grep -qx idle \
     && [ "$("$A" oxhnode1 "SLURM_CONF=$SLURM_CONF sinfo -h -N -o '%T'" | grep -cx idle)" = 2 ]; then
    ready=1; break
  fi
  sleep 0.2
done
if [ $ready != 1 ]; then
  echo "FAIL slurm: the two nodes did not come up"; tail -5 "$dir"/*.log; exit 1
fi

S="SLURM_CONF=$SLURM_CONF timeout 100 srun --mpi=pmi2 -N 2 -n 4 --time=2"
expect() { # name, expected exit status ('!0': any failure), text the output must hold, command
  local name=$1 rc=$2 want=$3 cmd=$4 got st
  set +e
  got=$(timeout 120 "$A" oxhnode1 "$cmd" 2>&1)
  st=$?
  set -e
  if { [ "$rc" = '!0' ] && [ $st != 0 ] && [ $st != 124 ]; } || [ "$st" = "$rc" ]; then
    if [ -z "$want" ] || grep -q -- "$want" <<<"$got"; then echo "ok   $name"; return; fi
  fi
  echo "FAIL $name: exit $st (want $rc${want:+, output with '$want'})"; echo "$got" | tail -15; fail=1
}
expect "srun places 2 ranks on each node" 0 "" "$S sh -c 'echo \$SLURM_PROCID \$(hostname)'"
got=$("$A" oxhnode1 "$S sh -c 'echo \$SLURM_PROCID \$(hostname)'" | sort -n | tr '\n' ';')
if [ "$got" = "0 oxhnode1;1 oxhnode1;2 oxhnode2;3 oxhnode2;" ]; then echo "ok   srun: block placement"; else
  echo "FAIL srun placement: $got"; fail=1; fi
for p in link_conformance p2p_basic p2p_nonblocking icoll coll_basic; do
  expect "$p under srun --mpi=pmi2, 2 nodes x 2 ranks" 0 "" "$S $out/$p"
done
expect "link_conformance under srun, 2 nodes x 1 rank" 0 "ok at 2 ranks" \
  "SLURM_CONF=$SLURM_CONF timeout 100 srun --mpi=pmi2 -N 2 -n 2 $out/link_conformance"
expect "a rank's exit(3) before MPI_Finalize ends the job" '!0' "" "$S --kill-on-bad-exit=1 $out/crash"
# OXMPI_HANG_REPORT under srun: each rank writes its own wait to stderr
# (ranks 0 and 1 receive from each other, 2 and 3 on the other node wait
# in MPI_Barrier for them); timeout ends the step.
set +e
hr=$(timeout 60 "$A" oxhnode1 "DEADLOCK=recv OXMPI_HANG_REPORT=1 SLURM_CONF=$SLURM_CONF timeout 8 srun --mpi=pmi2 -N 2 -n 4 --time=2 $out/deadlock" 2>&1)
st=$?
set -e
miss=""
for t in "OxMPI hang report: rank 0 (oxhnode1) has waited" "in MPI_Recv: recv comm=MPI_COMM_WORLD src=1 wsrc=1 tag=7" \
         "OxMPI hang report: rank 3 (oxhnode2) has waited" "s in MPI_Barrier: "; do
  grep -qF -- "$t" <<<"$hr" || miss="$miss [$t]"
done
if [ $st = 124 ] && [ -z "$miss" ]; then echo "ok   OXMPI_HANG_REPORT under srun: each rank reports its wait"; else
  echo "FAIL OXMPI_HANG_REPORT under srun: exit $st, missing$miss"; echo "$hr" | tail -8; fail=1; fi
for i in 1 2 3 4 5 6 7 8 9 10; do pgrep -f "$out/deadlock" >/dev/null || break; sleep 0.5; done
for i in 1 2; do
  if [ -n "$("$A" oxhnode$i "ls /dev/shm | grep '^oxmpi-' || true")" ]; then
    echo "FAIL /dev/shm files left on oxhnode$i"; fail=1
  fi
done
if pgrep -f "$out/" >/dev/null; then echo "FAIL processes left: $(pgrep -fa "$out/" | head -3)"; fail=1; fi
hid=$(cat "$hosts/id")
cleanup
trap - EXIT
if ip netns list | grep -q "^oxh$hid-\|^oxbr$hid"; then echo "FAIL pretend hosts left behind"; fail=1; else echo "ok   slurm stopped, hosts torn down"; fi
exit $fail
