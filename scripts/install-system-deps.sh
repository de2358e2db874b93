#!/usr/bin/env bash
# Installs what tensorflow-ignite needs from the system: a JDK (17+), Maven and a
# C++ compiler; for the tests, gdb (a stuck test prints every thread's native
# stack: tests/conftest.py) and iproute2: ss (the loading benchmark counts the
# bytes sent to each node) and ip (the multi-host tests' network namespaces);
# and Chromium, in which the documentation site's test opens the built site
# (tests/unit/test_docs_site.py drives it through Playwright; no browser is downloaded).
# Does nothing when they are already there.
set -euo pipefail

need=()
if ! command -v java >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1 || ! command -v keytool >/dev/null 2>&1; then
  need+=(openjdk-17-jdk-headless)
fi
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v make >/dev/null 2>&1 || need+=(make)
command -v gdb >/dev/null 2>&1 || need+=(gdb)
command -v ss >/dev/null 2>&1 || need+=(iproute2)
command -v chromium >/dev/null 2>&1 || need+=(chromium)

if [ ${#need[@]} -eq 0 ]; then
  echo "system dependencies present: $(java -version 2>&1 | head -n1); $(mvn -v 2>/dev/null | head -n1)"
  exit 0
fi

echo "installing system packages: ${need[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "error: need root (or sudo) to install ${need[*]}; install them and re-run" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
