#!/usr/bin/env bash
# Pretend hosts on one machine, for tests across nodes (the facts are in
# ../shared/reference/multi-host-on-one-machine.md): each host has its own
# network (a veth on a private bridge, 10.200.<net>.N/24, no route out), its
# own hostname (oxhnodeN), /dev/shm, /sys, boot id and /etc/hosts naming the
# others. Traffic stays inside these namespaces.
#
#   tools/hosts.sh up N DIR     make N hosts, their state under DIR
#   tools/hosts.sh down DIR     tear them down (nothing is left behind)
#   DIR/agent HOST CMD...       run CMD (through sh -c) in HOST: the launcher
#                               agent convention of Hydra's -launcher-exec
#                               and Open MPI's plm_rsh_agent
set -euo pipefail
cmd=${1:-}; shift || true
case "$cmd" in
up)
  n=$1; dir=$(realpath -m "$2")
  mkdir -p "$dir"
  id=$(printf %s "$dir" | md5sum | cut -c1-6)
  echo "$id" > "$dir/id"
  echo "$n" > "$dir/n"
  # The namespace files are bind mounts, visible only in this mount namespace:
  # a long-lived process here lets commands inside any host come back first.
  mount --bind "$dir" "$dir"
  mount --make-private "$dir"
  setsid sleep infinity </dev/null >/dev/null 2>&1 &
  echo $! > "$dir/anchor.pid"
  ip netns add "oxbr$id"
  ip -n "oxbr$id" link add br0 type bridge
  ip -n "oxbr$id" link set br0 up
  {
    echo "127.0.0.1 localhost"
    for i in $(seq "$n"); do echo "10.200.0.$i oxhnode$i"; done
  } > "$dir/hosts"
  for i in $(seq "$n"); do
    ip netns add "oxh$id-$i"
    ip link add "oxv$id$i" type veth peer name "oxb$id$i"
    ip link set "oxv$id$i" netns "oxh$id-$i"
    ip link set "oxb$id$i" netns "oxbr$id"
    ip -n "oxbr$id" link set "oxb$id$i" master br0 up
    ip -n "oxh$id-$i" addr add "10.200.0.$i/24" dev "oxv$id$i"
    ip -n "oxh$id-$i" link set "oxv$id$i" up
    ip -n "oxh$id-$i" link set lo up
    cat /proc/sys/kernel/random/uuid > "$dir/$i.boot"
    touch "$dir/$i.uts" "$dir/$i.ipc" "$dir/$i.mnt"
    # unshare binds the namespace files here, in the machine's mount
    # namespace; the new mount namespace then joins the host's network.
    unshare --uts="$dir/$i.uts" --ipc="$dir/$i.ipc" --mount="$dir/$i.mnt" \
      --propagation private nsenter --net="/run/netns/oxh$id-$i" -- sh -c "
        hostname oxhnode$i
        mount -t tmpfs -o size=1g,mode=1777 tmpfs /dev/shm
        mount -t sysfs sysfs /sys
        mount --bind '$dir/$i.boot' /proc/sys/kernel/random/boot_id
        mount --bind '$dir/hosts' /etc/hosts"
  done
  cat > "$dir/agent" <<EOF
#!/usr/bin/env bash
# Runs a command in a pretend host: agent [OPTIONS] HOST CMD... (HOST is oxhnodeN).
set -e
# Options before the host (ssh's -x, -q, ...) are ignored.
while [ "\${1#-}" != "\$1" ]; do shift; done
h=\$1; shift
i=\${h#oxhnode}
exec nsenter -t \$(cat '$dir/anchor.pid') -m -n -u -i -- \\
  nsenter --net=/run/netns/oxh$id-\$i --uts='$dir'/\$i.uts --ipc='$dir'/\$i.ipc \\
  --mount='$dir'/\$i.mnt --wd="\$PWD" -- sh -c "\$*"
EOF
  chmod +x "$dir/agent"
  ;;
down)
  dir=$(realpath -m "$1")
  [ -f "$dir/id" ] || exit 0
  id=$(cat "$dir/id"); n=$(cat "$dir/n")
  for i in $(seq "$n"); do
    for f in uts ipc mnt; do umount "$dir/$i.$f" 2>/dev/null || true; done
    ip netns del "oxh$id-$i" 2>/dev/null || true
  done
  ip netns del "oxbr$id" 2>/dev/null || true
  kill "$(cat "$dir/anchor.pid")" 2>/dev/null || true
  umount "$dir" 2>/dev/null || true
  rm -rf "$dir"
  ;;
*)
  sed -n '2,12p' "$0"; exit 2 ;;
esac
