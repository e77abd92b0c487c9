#!/usr/bin/env bash
# The decoder module built and tested against a second torch release beside the pinned one of .venv:
# torch 2.14.1, what a new ComfyUI install gets today (requirements-torch-2.14.txt). install.py builds
# the pack into build-torch-2.14/ with that venv's Python, as in a user's ComfyUI; the KL, FLUX.2 and Wan
# decoder tests then run under that torch.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${HEADROOM_SECOND_TORCH_VENV:-.venv-torch-2.14}"
BUILD="${HEADROOM_SECOND_TORCH_BUILD:-build-torch-2.14}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "deps: creating $VENV for the second torch release"
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements-torch-2.14.txt
# What a user's ComfyUI runs: install.py with that venv's Python (a CUDA torch: the kernels build too).
HEADROOM_BUILD_DIR="$BUILD" "$VENV/bin/python" install.py
PYTHONPATH="$BUILD/python" "$VENV/bin/python" -c '
import torch, _headroom_torch as ht
assert ht.built_torch_version() == torch.__version__, (ht.built_torch_version(), torch.__version__)
print(f"_headroom_torch built against torch {ht.built_torch_version()}, running under torch {torch.__version__}")'
HEADROOM_BUILD_DIR="$BUILD" "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
  tests/python/test_kl_decode.py tests/python/test_flux2_decode.py tests/python/test_wan_decode.py
