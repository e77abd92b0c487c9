#!/usr/bin/env bash
# Configures and builds everything into build/ with the Python that will import the modules.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${HEADROOM_PYTHON:-/usr/bin/python3}"
LAUNCHER=()
# Relative paths in ccache's keys let a fresh clone elsewhere reuse earlier compilations.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$PY" "${LAUNCHER[@]}" "$@" >/dev/null
cmake --build build -j"$(nproc)"
