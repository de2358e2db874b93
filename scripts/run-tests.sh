#!/usr/bin/env bash
# Runs the whole test suite against real Ignite nodes started by the fixtures.
# pytest's exit code 5 ("no tests collected") is a failure here: a suite that ran
# nothing proves nothing.
#
# Without test paths among the arguments, the unit tests (tests/unit) run in a second
# pytest process beside the integration tests: the integration tests spend much of their
# time waiting on nodes, failure detection and timeouts (about 0.8 of the two cores busy),
# and the unit tests need no node.  The unit run's output is printed when the integration
# run ends.  With test paths, one pytest runs exactly what was asked.
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

paths=0
for a in "$@"; do
  case "$a" in -*) ;; *) paths=1 ;; esac
done

if [ $paths -eq 1 ]; then
  .venv/bin/python -m pytest "${args[@]}" "$@"
  check $? "$*"
  exit $?
fi

unit_log=$(mktemp -t tfi-unit-tests.XXXXXX)
.venv/bin/python -m pytest "${args[@]}" "$@" tests/unit >"$unit_log" 2>&1 &
unit_pid=$!
# Stop the unit run too if this script is stopped (Ctrl+C, a CI runner's timeout).
trap 'kill -TERM $unit_pid 2>/dev/null; wait $unit_pid 2>/dev/null; rm -f "$unit_log"; exit 130' INT TERM HUP

.venv/bin/python -m pytest "${args[@]}" "$@" tests/integration
integration_rc=$?
wait $unit_pid
unit_rc=$?
trap - INT TERM HUP

echo
echo "================================ unit tests (run beside the integration tests) ================================"
cat "$unit_log"
rm -f "$unit_log"

rc=0
check $integration_rc "tests/integration" || rc=1
check $unit_rc "tests/unit" || rc=1
echo "run-tests: integration tests exit $integration_rc, unit tests exit $unit_rc"
exit $rc
