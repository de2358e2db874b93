#!/usr/bin/env bash
# Runs the whole test suite against real Ignite nodes started by the fixtures.
# pytest's exit code 5 ("no tests collected") is a failure here: a suite that ran
# nothing proves nothing.
set -uo pipefail
cd "$(dirname "$0")/.."
args=(-q -p no:cacheprovider)
if [ "${CI:-}" = "true" ]; then
  # One line per test with its duration, and the slowest at the end: a CI log
  # that is cut off still shows where the time went.
  args=(-p no:cacheprovider --color=no -v -o console_output_style=times --durations=30)
fi
.venv/bin/python -m pytest "${args[@]}" "$@"
rc=$?
if [ $rc -eq 5 ]; then
  echo "run-tests: pytest collected no tests" >&2
  exit 1
fi
exit $rc
