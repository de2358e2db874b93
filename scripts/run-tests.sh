#!/usr/bin/env bash
# Runs the whole test suite against real Ignite nodes started by the fixtures.
# pytest's exit code 5 ("no tests collected") is a failure here: a suite that ran
# nothing proves nothing.
#
# Without test paths among the arguments, the suite runs as two pytest processes side by
# side: the integration tests spend much of their time waiting on nodes, failure detection
# and timeouts (a whole run kept 1.4 of the two cores busy on average).  The side process
# runs the unit tests (no node) and the integration modules in SIDE below: each starts every
# node it uses itself (no session fixture), so no node is started twice for the two
# processes.  Each process picks its nodes' ports from a range of its own
# ($TF_IGNITE_LOCAL_PORTS), so neither can take a port block the other has promised to nodes
# still starting.  The side run's output is printed when the main run ends.  With test
# paths, one pytest runs exactly what was asked.
set -uo pipefail
cd "$(dirname "$0")/.."
args=(-q -p no:cacheprovider)
if [ "${CI:-}" = "true" ]; then
  # One line per test with its duration, and the slowest at the end: a CI log
  # that is cut off still shows where the time went.
  args=(-p no:cacheprovider --color=no -v -o console_output_style=times --durations=30)
fi

check() {  # exit code of one pytest run, with "collected nothing" made a failure
  if [ "$1" -eq 5 ]; then
    echo "run-tests: pytest collected no tests ($2)" >&2
    return 1
  fi
  return "$1"
}

# Modules that start all their own nodes (or none), chosen so that both runs take about as
# long (per-module times in CI's "time by test file"): the wheel built and installed in a
# fresh virtualenv, the launcher's topology changes, Ignite 3 partition reads on three nodes,
# scoring on a cluster of its own, the soak's short form, the follow log's node kills, the
# README and docs session, the stock nodes with authentication the hostile-client tests
# start, the file store's node kills, a follow resumed in its first snapshot.
SIDE=(
  tests/integration/test_wheel.py
  tests/integration/test_launcher_faults.py
  tests/integration/test_ignite3_reads.py
  tests/integration/test_predict_cluster.py
  tests/integration/test_soak.py
  tests/integration/test_dataset_follow_log.py
  tests/integration/test_readme.py
  tests/integration/test_follow_log_stock.py
  tests/integration/test_launcher_hostile.py
  tests/integration/test_launcher_security.py
  tests/integration/test_fs_faults.py
  tests/integration/test_follow_snapshot_resume.py
  tests/integration/test_bench_smoke.py
  tests/integration/test_follow_hostile.py
)

paths=0
for a in "$@"; do
  case "$a" in -*) ;; *) paths=1 ;; esac
done

if [ $paths -eq 1 ]; then
  .venv/bin/python -m pytest "${args[@]}" "$@"
  check $? "$*"
  exit $?
fi

ignore=()
for f in "${SIDE[@]}"; do
  ignore+=(--ignore "$f")
done

# Two halves of $TF_IGNITE_LOCAL_PORTS, by default of 20000-32700 (below the kernel's
# ephemeral ports, 32768 and up on Linux by default).
range=${TF_IGNITE_LOCAL_PORTS:-20000-32700}
low=${range%-*}
high=${range#*-}
middle=$(( (low + high) / 2 ))
main_ports="$low-$middle"
side_ports="$middle-$high"

side_log=$(mktemp -t tfi-side-tests.XXXXXX)
TF_IGNITE_LOCAL_PORTS=$side_ports .venv/bin/python -m pytest "${args[@]}" "$@" tests/unit "${SIDE[@]}" >"$side_log" 2>&1 &
side_pid=$!
# Stop the side run too if this script is stopped (Ctrl+C, a CI runner's timeout).
trap 'kill -TERM $side_pid 2>/dev/null; wait $side_pid 2>/dev/null; rm -f "$side_log"; exit 130' INT TERM HUP

TF_IGNITE_LOCAL_PORTS=$main_ports .venv/bin/python -m pytest "${args[@]}" "$@" "${ignore[@]}" tests/integration
integration_rc=$?
wait $side_pid
side_rc=$?
trap - INT TERM HUP

echo
echo "======================== side run: unit tests and ${#SIDE[@]} integration modules (beside the main run) ========================"
cat "$side_log"
rm -f "$side_log"

rc=0
check $integration_rc "tests/integration" || rc=1
check $side_rc "tests/unit and ${SIDE[*]}" || rc=1
echo "run-tests: main run (integration) exit $integration_rc, side run (unit and ${#SIDE[@]} integration modules) exit $side_rc"
exit $rc
