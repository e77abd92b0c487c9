#!/usr/bin/env bash
# Configures and builds everything into build/ (or $HEADROOM_BUILD_DIR) with the Python that will import
# the modules: by default the venv scripts/deps.sh made, whose torch and pybind11 the modules are built against.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${HEADROOM_PYTHON:-$PWD/.venv/bin/python}"
BUILD="${HEADROOM_BUILD_DIR:-build}"
LAUNCHER=()
# Relative paths in ccache's keys let a fresh clone elsewhere (or a second build folder) reuse compilations.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$PY" "${LAUNCHER[@]}" "$@" >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
