#!/usr/bin/env bash
# Installs fusec the two ways a user would without a checkout, `pip install .`
# and a wheel from `python -m build`, in a fresh venv, and runs
# tests/wheel_smoke.py against each from outside the checkout (CI: .ci/run).
#
#     tests/check_wheel.sh        # torch==$FUSEC_WHEEL_TORCH (default 2.13.0)
#
# Both install from a copy of the checkout without build outputs: setuptools
# reuses a stale build/lib, which could hold a module the packages list lost.
# The `cuda` extra is left out: every module must import without it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
torch_version=${FUSEC_WHEEL_TORCH:-2.13.0}
work=$(mktemp -d "${TMPDIR:-/tmp}/fusec-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT

tar -C "$root" -c --exclude=.git --exclude=.venv --exclude=venv --exclude=build \
    --exclude=dist --exclude='*.egg-info' --exclude=__pycache__ --exclude=Output . |
    (mkdir "$work/src" && tar -C "$work/src" -x)
"$python" -m venv "$work/venv"
# shellcheck disable=SC1091
. "$work/venv/bin/activate"
pip() { python -m pip -q --disable-pip-version-check "$@"; }
say() { echo "check_wheel [${SECONDS}s]: $*"; }
# torch first and pinned: an unpinned torch on Linux is the multi-GB CUDA build.
say "torch==$torch_version"
pip install "torch==$torch_version"
mkdir "$work/run"
cp "$root/tests/wheel_smoke.py" "$work/run/"
smoke() {
    # From outside the checkout, with a cache of its own: nothing but the
    # installed package can be imported as fusec.
    (cd "$work/run" && FUSEC_CACHE_DIR="$work/cache-$1" python wheel_smoke.py --source "$root")
}

say "pip install . (not editable)"
pip install "$work/src"
smoke pip

say "python -m build, then the wheel"
pip uninstall -y fusec
pip install build
python -m build --outdir "$work/dist" "$work/src" >"$work/build.log" 2>&1 ||
    { cat "$work/build.log"; exit 1; }
ls "$work/dist"/fusec-*.tar.gz >/dev/null
pip install "$work/dist"/fusec-*.whl
smoke wheel
say ok
