#!/usr/bin/env bash
# Install the wheel of one CPython into a fresh virtualenv outside the checkout, with
# no C/C++ compiler (nor javac/Maven) on PATH, and use it as a person would:
#
#   bash scripts/wheel-smoke.sh 3.11        (the wheel comes from dist/, `make wheel`)
#
#   ignite-tf --version; ignite-tf node start; write + IgniteDataset through the
#   prebuilt op + ignite:// through tf.io.gfile and a checkpoint (scripts/wheel_smoke.py); ignite-tf demo and
#   ignite-tf demo --distributed (a launcher job) against that node; ignite-tf node stop;
#   then checks that nothing was compiled or written into the installation, and that
#   `pip uninstall` leaves no file behind.
#
# WHEEL_SMOKE_KEEP=1 keeps the temporary directory; WHEEL_SMOKE_EXTRAS picks the extras
# installed (default tf,demo; the CI test uses tf-cpu,demo, a third of the download).
# Prints "wheel smoke: N passed, 0 failed".
set -euo pipefail

ver=${1:?usage: wheel-smoke.sh 3.11|3.12|3.13}
root=$(cd "$(dirname "$0")/.." && pwd)
tag="cp${ver/./}"
started=$(date +%s)
checks=0
pass() { checks=$((checks + 1)); echo "wheel smoke [$tag] ok: $*"; }
fail() { echo "wheel smoke [$tag] FAILED: $*" >&2; echo "wheel smoke: $checks passed, 1 failed"; exit 1; }

wheel=$(ls "$root"/dist/tensorflow_ignite-*-"$tag"-"$tag"-manylinux*_x86_64.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || fail "no $tag wheel in dist/: run \`bash scripts/build-wheel.sh $ver\` (or \`make wheel\`)"

pyenv_root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
python=$(ls -d "$pyenv_root"/versions/"$ver".*/bin/python"$ver" 2>/dev/null | sort -V | tail -1)
[ -n "$python" ] || python=$(command -v "python$ver") || fail "no Python $ver"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tf-ignite-wheel-smoke.XXXXXX")
workdir="$tmp/nodes"
venv="$tmp/venv"
cleanup() {
    if [ -x "$venv/bin/ignite-tf" ] && [ -d "$workdir" ]; then
        PATH="$venv/bin:$tmp/bin" "$venv/bin/ignite-tf" node stop --work-dir "$workdir" >/dev/null 2>&1 || true
    fi
    [ "${WHEEL_SMOKE_KEEP:-0}" = 1 ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT

# PATH without compilers: every command of /usr/local/bin, /usr/bin and /bin except
# C/C++ compilers, the JDK's compiler and Maven (java, the runtime, stays).
mkdir -p "$tmp/bin"
for dir in /usr/local/bin /usr/bin /bin; do
    for cmd in "$dir"/*; do
        name=${cmd##*/}
        case "$name" in
            cc|c++|cpp|gcc|g++|clang*|*-gcc|*-g++|*-gcc-[0-9]*|*-g++-[0-9]*|gcc-[0-9]*|g++-[0-9]*|cpp-[0-9]*|tcc|javac|mvn|mvnDebug|jar) continue ;;
        esac
        [ -e "$tmp/bin/$name" ] || ln -s "$cmd" "$tmp/bin/$name"
    done
done
export PATH="$venv/bin:$tmp/bin"
unset CXX CC JAVA_HOME PYTHONPATH VIRTUAL_ENV TF_IGNITE_JAVA_DIR
export TF_IGNITE_CACHE_DIR="$tmp/user-cache" TF_CPP_MIN_LOG_LEVEL=2 IGNITE_TF_HOME="$tmp/home"
for compiler in cc c++ gcc g++ javac mvn; do
    ! command -v "$compiler" >/dev/null || fail "$compiler is on PATH"
done
cd "$tmp"   # outside the checkout: nothing of it is importable from here

"$python" -m venv "$venv"
pip_started=$(date +%s)
extras=${WHEEL_SMOKE_EXTRAS:-tf,demo}
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel[$extras]" ||
    fail "pip install $(basename "$wheel")[$extras]"
pass "pip install $(basename "$wheel")[$extras] ($(( $(date +%s) - pip_started )) s)"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
[ -d "$site/tensorflow_ignite" ] || fail "tensorflow_ignite is not in $site"
(cd "$site/tensorflow_ignite" && find . | sort) > "$tmp/installed.txt"

ignite-tf --version | tee "$tmp/version.txt"
grep -q "^tensorflow-ignite " "$tmp/version.txt" && grep -q "^TensorFlow 2\.21\..*built for TensorFlow 2.21.x" "$tmp/version.txt" &&
    grep -q "^thin-client protocol 1\.7\.0" "$tmp/version.txt" || fail "ignite-tf --version"
pass "ignite-tf --version"

port=$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ignite-tf node start --work-dir "$workdir" --client-port "$port" --heap-mb 512 --region-mb 256 ||
    fail "ignite-tf node start"
pass "ignite-tf node start (port $port, Java runtime only)"

python "$root/scripts/wheel_smoke.py" "$port" 2>&1 | grep -v "oneDNN\|absl::InitializeLog\|cpu_feature_guard\|rebuild TensorFlow\|cuda" ||
    fail "write / IgniteDataset / ignite:// (scripts/wheel_smoke.py)"
[ "${PIPESTATUS[0]}" = 0 ] || fail "write / IgniteDataset / ignite:// (scripts/wheel_smoke.py)"
pass "write, IgniteDataset through the prebuilt op, ignite:// through tf.io.gfile and a checkpoint"

ignite-tf demo --host 127.0.0.1 --port "$port" --epochs 1 --no-progress --out-dir "$tmp/demo" > "$tmp/demo.log" 2>&1 ||
    { tail -30 "$tmp/demo.log"; fail "ignite-tf demo"; }
grep "Held-out accuracy" "$tmp/demo.log"
pass "ignite-tf demo"

ignite-tf demo --host 127.0.0.1 --port "$port" --distributed --epochs 1 --no-progress --out-dir "$tmp/demo" > "$tmp/demo-distributed.log" 2>&1 ||
    { tail -30 "$tmp/demo-distributed.log"; fail "ignite-tf demo --distributed"; }
grep "SUCCEEDED" "$tmp/demo-distributed.log" | tail -1
pass "ignite-tf demo --distributed (a launcher job from the packaged job directory)"

ignite-tf node stop --work-dir "$workdir" || fail "ignite-tf node stop"
pass "ignite-tf node stop"

# Nothing compiled, nothing written into the installation.
(cd "$site/tensorflow_ignite" && find . | sort) > "$tmp/after.txt"
diff "$tmp/installed.txt" "$tmp/after.txt" || fail "files appeared in or vanished from $site/tensorflow_ignite"
[ ! -e "$TF_IGNITE_CACHE_DIR" ] || fail "something was built into the user cache: $(find "$TF_IGNITE_CACHE_DIR" -type f | head -3)"
pass "nothing compiled, nothing written into site-packages"

pip uninstall --quiet --yes tensorflow-ignite || fail "pip uninstall"
left=$(find "$site" "$venv/bin" -iname '*tensorflow_ignite*' -o -name 'ignite-tf' | head -5)
[ -z "$left" ] || fail "pip uninstall left: $left"
pass "pip uninstall left no file behind"

echo "wheel smoke [$tag]: $(basename "$wheel") $(du -h "$wheel" | cut -f1), $(( $(date +%s) - started )) s"
echo "wheel smoke: $checks passed, 0 failed"
