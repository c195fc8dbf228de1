#!/usr/bin/env bash
# mpirun's command line as users type it: MPMD blocks (':'), each with its
# own -n, -x and -wdir, MPI_APPNUM following the block; --help on stdout
# with exit 0; clear errors with exit 2 for a bad or missing -n and a bare
# mpirun; the flags users pass by habit (-wdir, --bind-to socket|numa|
# hwthread, --report-bindings, --output-filename, --allow-run-as-root,
# --mca with a warning); the abort summary quoting the error as it was.
# Every job runs under timeout and --timeout.
# Usage: mpirun_cli.sh PREFIX
set -uo pipefail
prefix=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$here/../build/tests/mpirun_cli" && mkdir -p "$here/../build/tests/mpirun_cli"
out=$(cd "$here/../build/tests/mpirun_cli" && pwd)
bin=$prefix/bin
fail=0
# name, expected exit status, text stdout must hold ('' for none), text stderr must hold ('' for none), command...
expect() {
  local name=$1 rc=$2 want_out=$3 want_err=$4; shift 4
  timeout 60 "$@" >"$out/o" 2>"$out/e"
  local got=$?
  if [ "$got" = "$rc" ] && { [ -z "$want_out" ] || grep -q -- "$want_out" "$out/o"; } \
     && { [ -z "$want_err" ] || grep -q -- "$want_err" "$out/e"; }; then
    echo "ok   $name"
  else
    echo "FAIL $name: exit $got (want $rc)"; echo "--- stdout"; tail -5 "$out/o"; echo "--- stderr"; tail -5 "$out/e"; fail=1
  fi
}
M="$bin/mpirun --timeout 30"
"$bin/mpicc" -I"$here" "$here/mpmd.c" -o "$out/mpmd" || { echo "FAIL build mpmd.c"; exit 1; }
"$bin/mpicc" -I"$here" "$here/stubs.c" -o "$out/stubs" || { echo "FAIL build stubs.c"; exit 1; }

# ---- MPMD
expect "MPMD: echo A : echo B" 0 "" "" $M -n 1 echo A : -n 1 echo B
if [ "$(sort "$out/o" | tr '\n' ' ')" = "A B " ]; then echo "ok   MPMD: each block runs its own program"; else echo "FAIL MPMD output: $(cat "$out/o")"; fail=1; fi
mkdir -p "$out/wd"
expect "MPMD: blocks with their own -n, -x, -wdir; MPI_APPNUM per block" 0 "mpmd: 6 ranks, sum of appnums 5, argv\[1\]=first" "" \
  $M -n 2 -x TEST_APPNUM=0 -x TEST_FIRST=0 "$out/mpmd" first \
   : -n 3 -x TEST_APPNUM=1 -x TEST_FIRST=2 -wdir "$out/wd" -x TEST_WDIR="$out/wd" "$out/mpmd" \
   : -np 1 -env TEST_APPNUM 2 -x TEST_FIRST=5 "$out/mpmd"
expect "MPMD: -genv reaches every block" 0 "mpmd: 3 ranks, sum of appnums 1" "" \
  $M -genv TEST_FIRST 0 -n 2 -x TEST_APPNUM=0 "$out/mpmd" : -n 1 -x TEST_APPNUM=1 "$out/mpmd"
expect "MPMD: a ':' with no program after it" 2 "" "no program after it" $M -n 1 true :
expect "MPMD: a ':' with no program before it" 2 "" "no program before it" $M : -n 1 true

# ---- help and errors
expect "--help: usage on stdout, exit 0" 0 "Usage: mpirun" "" "$bin/mpirun" --help
grep -q -- "--output-filename" "$out/o" && grep -q "OXMPI_TIMEOUT" "$out/o" && grep -q -- "-wdir" "$out/o" \
  && echo "ok   --help lists the options and the environment" || { echo "FAIL --help is missing options"; fail=1; }
expect "-h" 0 "Usage: mpirun" "" "$bin/mpirun" -h
expect "-n 0" 2 "" "a job needs at least one rank" "$bin/mpirun" -n 0 true
expect "-n foo" 2 "" "-n foo: not a number of ranks" "$bin/mpirun" -n foo true
expect "bare mpirun" 2 "" "no program to run" "$bin/mpirun"
expect "unknown option" 2 "" "unknown option --frobnicate" "$bin/mpirun" --frobnicate -n 1 true
expect "-n without a value" 2 "" "-n needs a number of ranks" "$bin/mpirun" -n

# ---- habitual flags
expect "-wdir" 0 "$out/wd" "" $M -n 1 -wdir "$out/wd" pwd
expect "--wdir" 0 "$out/wd" "" $M --wdir "$out/wd" -n 1 pwd
expect "--allow-run-as-root" 0 "x" "" $M --allow-run-as-root -n 1 echo x
expect "--mca: a warning, then it runs" 0 "x" "warning: --mca btl self ignored" $M --mca btl self -n 1 echo x
for b in core hwthread socket numa none; do
  expect "--bind-to $b --report-bindings" 0 "" "rank 1 (pid [0-9]*)" $M --bind-to $b --report-bindings -n 2 true
done
expect "--bind-to core: one CPU each" 0 "" "rank 0 (pid [0-9]*) bound to CPUs [0-9]*$" $M --bind-to core --report-bindings -n 1 true
expect "--bind-to none: not bound" 0 "" "rank 0 (pid [0-9]*): not bound" $M --bind-to none --report-bindings -n 1 true
expect "--bind-to bogus" 2 "" "--bind-to bogus: use core" "$bin/mpirun" --bind-to bogus -n 1 true
expect "--output-filename" 0 "" "" $M --output-filename "$out/of" -n 2 sh -c 'echo out-$PMI_RANK; echo err-$PMI_RANK >&2'
if [ "$(cat "$out/of/1/rank.1/stdout")" = "out-1" ] && [ "$(cat "$out/of/1/rank.0/stderr")" = "err-0" ] && [ ! -s "$out/o" ]; then
  echo "ok   --output-filename: DIR/1/rank.R/stdout and stderr, nothing on the terminal"
else
  echo "FAIL --output-filename: $(ls -R "$out/of" 2>&1 | tr '\n' ' ')"; fail=1
fi

# ---- host lists naming only this host run here, without ssh
expect "--host localhost:2 runs 2 ranks here" 0 "2 ranks" "" $M --host localhost:2 sh -c 'echo $PMI_SIZE ranks'
expect "--host with this host's name" 0 "local 1/2" "" $M --host "$(hostname):2" sh -c '[ $PMI_RANK = 1 ] && echo local $MPI_LOCALRANKID/$MPI_LOCALNRANKS; true'
printf 'localhost slots=3\n' > "$out/hf"
expect "--hostfile with localhost slots=3, -n from the slots" 0 "3 ranks" "" $M --hostfile "$out/hf" sh -c '[ $PMI_RANK = 0 ] && echo $PMI_SIZE ranks; true'
expect "more ranks than slots" 2 "" "4 ranks but only 3 slots on the host (localhost:3)" "$bin/mpirun" -n 4 --hostfile "$out/hf" true
expect "--oversubscribe allows them" 0 "" "" $M -n 4 --oversubscribe --hostfile "$out/hf" true
expect "a bad host list" 2 "" "'x' is not a number of slots" "$bin/mpirun" --host a:x true
expect "a missing hostfile" 2 "" "--hostfile /nonexistent: cannot read it" "$bin/mpirun" --hostfile /nonexistent true
expect "-ppn without hosts" 2 "" "-ppn / --map-by ppr needs hosts" "$bin/mpirun" -ppn 2 true
expect "--map-by bogus" 2 "" "--map-by bogus: use slot, core, node or ppr:N:node" "$bin/mpirun" --map-by bogus true

# ---- the abort summary quotes the error as it was (underscores kept)
expect "abort summary keeps MPI_ names" 44 "" "called MPI_Abort with error code 44 (MPI_Close_port: not implemented: MPI_Close_port" \
  env OXMPI_TEST_FATAL=1 $M -n 2 "$out/stubs"

left=$(ls /dev/shm | grep '^oxmpi-' || true)
[ -z "$left" ] || { echo "FAIL: left in /dev/shm: $left"; fail=1; }
exit $fail
