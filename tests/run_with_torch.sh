#!/usr/bin/env bash
# Runs the test suite against another torch version in a fresh venv, so one
# checkout can be tested on the version CI pins (2.13) and on newer releases:
#
#     tests/run_with_torch.sh 2.14.1                  # the whole suite
#     tests/run_with_torch.sh 2.14.1 tests/test_compile.py -x
#
# The venv lives under ${FUSEC_VENV_ROOT:-/tmp}/fusec-torch-VERSION and is reused
# by later runs with the same version (torch is only installed when missing).
# torch is installed first and pinned: an unpinned `pip install torch` on Linux
# fetches the multi-GB CUDA build.
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 TORCH_VERSION [pytest args...]" >&2
    exit 2
fi
version=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${FUSEC_VENV_ROOT:-/tmp}/fusec-torch-$version
python=${PYTHON:-python3}
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
# shellcheck disable=SC1091
. "$venv/bin/activate"
if ! python -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$version')" 2>/dev/null; then
    python -m pip install -q "torch==$version"
fi
python -m pip install -q -e "$root[dev,cuda,zoo]"
python -c "import torch; print('torch', torch.__version__)"
cd "$root"
# Without arguments: the README's test command; with them: what they name.
exec python -m pytest -q -p no:cacheprovider "$@"
