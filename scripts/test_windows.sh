#!/usr/bin/env bash
# Cross-compiles the estimator core for Windows (the C library headroom_core.dll, the headroom.exe CLI and
# the Catch2 tests that need no POSIX process tools) and runs the tests under Debian's Wine. Checks that
# the DLL and the CLI import only system DLLs.
#   HEADROOM_WINDOWS_TOOLCHAIN=mingw (default): Debian's MinGW-w64 g++.
#   HEADROOM_WINDOWS_TOOLCHAIN=zig: PyPI's zig c++ for x86_64-windows-gnu with no static archive, the way
#     install.py builds the core on a Windows machine without a compiler (nodes/native/pypi_toolchain.py).
# usage: scripts/test_windows.sh   (build folder: build-mingw/ or build-zig-windows/, or $HEADROOM_MINGW_BUILD_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLCHAIN="${HEADROOM_WINDOWS_TOOLCHAIN:-mingw}"
PY="${HEADROOM_PYTHON:-$PWD/.venv/bin/python}"
[ -x "$PY" ] || PY=python3
if [ "$TOOLCHAIN" = zig ]; then
  BUILD="$(realpath -m "${HEADROOM_MINGW_BUILD_DIR:-build-zig-windows}")"
  ZIG="$("$PY" -c 'import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))' 2>/dev/null || true)"
  if [ ! -x "$ZIG" ] || ! command -v wine >/dev/null; then
    echo "test_windows: zig (pip install ziglang into $PY) or wine missing" >&2
    exit 2
  fi
else
  BUILD="$(realpath -m "${HEADROOM_MINGW_BUILD_DIR:-build-mingw}")"
  CXX=x86_64-w64-mingw32-g++-posix
  if ! command -v "$CXX" >/dev/null || ! command -v wine >/dev/null; then
    echo "test_windows: $CXX or wine missing (apt-get install mingw-w64 wine wine64)" >&2
    exit 2
  fi
fi
source scripts/header_only_deps.sh
header_only_deps "$BUILD/deps"
EXTRA=()
if [ "$TOOLCHAIN" = zig ]; then
  cat > "$BUILD/deps/toolchain.cmake" <<CM
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR AMD64)
set(CMAKE_C_COMPILER "$ZIG" cc -target x86_64-windows-gnu)
set(CMAKE_CXX_COMPILER "$ZIG" c++ -target x86_64-windows-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
CM
  EXTRA=(-DHEADROOM_CORE_ARCHIVE=OFF)
  # ccache keys on zig's version and target, not the compiler path's mtime.
  export CCACHE_COMPILERCHECK="string:zig $("$ZIG" version) x86_64-windows-gnu"
else
  cat > "$BUILD/deps/toolchain.cmake" <<CM
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER $CXX)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
CM
fi
LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$BUILD/deps/toolchain.cmake" -DCMAKE_BUILD_TYPE=Release \
  -DHEADROOM_TORCH=OFF -DHEADROOM_CUDA=OFF -DHEADROOM_PYTHON=OFF -DHEADROOM_TESTS=ON "${EXTRA[@]}" \
  -Dnlohmann_json_DIR="$BUILD/deps/nlohmann_json" -DCatch2_DIR="$BUILD/deps/Catch2" "${LAUNCHER[@]}" >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target headroom_capi headroom headroom_tests

# Only system DLLs (a user's Windows has no MinGW runtime to lend), and the DLL exports the C interface
# alone: the same check the release workflow runs on the MSVC build (scripts/pe_check.py).
"$PY" scripts/pe_check.py --capi-exports "$BUILD/capi/headroom_core.dll"
"$PY" scripts/pe_check.py "$BUILD/headroom.exe"

export WINEPREFIX="${WINEPREFIX:-$BUILD/wineprefix}" WINEDEBUG=-all
echo "== native tests under Wine ($TOOLCHAIN build)"
# A crash under Wine starts its debugger and can still exit 0: only Catch2's own summary says every test ran
# and passed.
LOG="$BUILD/wine_tests.log"
wine "$BUILD/tests/native/headroom_tests.exe" --order rand 2>&1 | tee "$LOG"
if ! grep -q "^All tests passed" "$LOG"; then
  echo "test_windows: the tests under Wine did not all pass (no 'All tests passed' in $LOG)" >&2
  exit 1
fi
