#!/usr/bin/env bash
# Builds the decoder wheel headroom_torch-<ver>+torch<X.Y>.<cpu|cuNN>-cpXY-cpXY-<platform>.whl (the module
# _headroom_torch, native/python/pyproject.toml) against the torch of .venv or of $HEADROOM_PYTHON, and prints
# its decoder_wheels.json entry (JSON) as the last thing on stdout.
# usage: scripts/build_decoder_wheel.sh [OUT_DIR]   (default dist/)
# Extra CMake settings go in CMAKE_ARGS (read by scikit-build-core), e.g. the CUDA architectures or a vcpkg
# toolchain on Windows. A CUDA torch needs the CUDA Toolkit of the same major (HEADROOM_TORCH=ON stops otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="$(realpath -m "${1:-dist}")"
if [ -n "${HEADROOM_PYTHON:-}" ]; then PY="$HEADROOM_PYTHON"
elif [ -x .venv/bin/python ]; then PY="$PWD/.venv/bin/python"
else PY="$PWD/.venv/Scripts/python.exe"; fi
WORK="$PWD/build-decoder-wheel"
mkdir -p "$WORK" "$OUT"

# A copy of the pyproject whose version carries the running torch's X.Y and CUDA major, pointing at this tree.
"$PY" scripts/decoder_wheel_meta.py pyproject "$WORK/project"
VERSION="$("$PY" scripts/decoder_wheel_meta.py version)"
TAG="$("$PY" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')"  # OUT may hold other Pythons' wheels
echo "building headroom_torch $VERSION with $PY" >&2

rm -f "$OUT"/headroom_torch-"$VERSION"-"$TAG"-"$TAG"-*.whl
if command -v ninja >/dev/null 2>&1; then export CMAKE_GENERATOR="${CMAKE_GENERATOR:-Ninja}"; fi
# The build folder is per torch label and Python, so builds for several torches do not reuse each other's objects.
"$PY" -m pip wheel --no-build-isolation --no-deps -q -w "$OUT" \
  -C build-dir="$WORK/skbuild/{wheel_tag}-$VERSION" "$WORK/project" >&2
WHEEL="$(ls "$OUT"/headroom_torch-"$VERSION"-"$TAG"-"$TAG"-*.whl)"
echo "built $WHEEL" >&2
"$PY" scripts/decoder_wheel_meta.py entry "$WHEEL"
