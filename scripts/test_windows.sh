#!/usr/bin/env bash
# Cross-compiles the estimator core for Windows with Debian's MinGW-w64 (the C library headroom_core.dll,
# the headroom.exe CLI and the Catch2 tests that need no POSIX process tools) and runs the tests under
# Debian's Wine. Checks that the DLL and the CLI import only system DLLs.
# usage: scripts/test_windows.sh   (build folder: build-mingw/, or $HEADROOM_MINGW_BUILD_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="$(realpath -m "${HEADROOM_MINGW_BUILD_DIR:-build-mingw}")"
CXX=x86_64-w64-mingw32-g++-posix
if ! command -v "$CXX" >/dev/null || ! command -v wine >/dev/null; then
  echo "test_windows: $CXX or wine missing (apt-get install mingw-w64 wine wine64)" >&2
  exit 2
fi
source scripts/header_only_deps.sh
header_only_deps "$BUILD/deps"
cat > "$BUILD/deps/toolchain.cmake" <<CM
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER $CXX)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
CM
LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$BUILD/deps/toolchain.cmake" -DCMAKE_BUILD_TYPE=Release \
  -DHEADROOM_TORCH=OFF -DHEADROOM_CUDA=OFF -DHEADROOM_PYTHON=OFF -DHEADROOM_TESTS=ON \
  -Dnlohmann_json_DIR="$BUILD/deps/nlohmann_json" -DCatch2_DIR="$BUILD/deps/Catch2" "${LAUNCHER[@]}" >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target headroom_capi headroom headroom_tests

# Only system DLLs (a user's Windows has no MinGW runtime to lend), and the DLL exports the C interface
# alone: the same check the release workflow runs on the MSVC build (scripts/pe_check.py).
"${HEADROOM_PYTHON:-python3}" scripts/pe_check.py --capi-exports "$BUILD/capi/headroom_core.dll"
"${HEADROOM_PYTHON:-python3}" scripts/pe_check.py "$BUILD/headroom.exe"

export WINEPREFIX="${WINEPREFIX:-$BUILD/wineprefix}" WINEDEBUG=-all
echo "== native tests under Wine (MinGW build)"
wine "$BUILD/tests/native/headroom_tests.exe" --order rand
