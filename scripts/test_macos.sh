#!/usr/bin/env bash
# Cross-compiles the estimator core for macOS 11+ on Linux with zig c++ (PyPI's ziglang, in .venv; it
# carries macOS's libc headers and links Mach-O): the C library libheadroom_core.dylib, the headroom CLI
# and the Catch2 tests for Apple silicon (arm64); the library and the CLI for Intel Macs (x86_64: the
# tests' sources are the same for both CPUs, and a second copy would add minutes to a cold build).
# Nothing here can run a Mac binary: the tests are compiled and linked only, to prove that they build.
# scripts/macho_check.py then reads each file's load commands: the CPU, macOS 11.0 as the minimum, only
# libSystem as a dependency (zig links its libc++ statically, so a user's Mac needs nothing else), a code
# signature on arm64, and the dylib exporting what native/capi/headroom_capi.h declares.
# usage: scripts/test_macos.sh   (build folders: build-macos-arm64/ and build-macos-x86_64/, or
#   $HEADROOM_MACOS_BUILD_DIR and $HEADROOM_MACOS_X86_64_BUILD_DIR; HEADROOM_MACOS_ARCHS=arm64 for one;
#   HEADROOM_MACOS_TESTS=0 leaves out the arm64 Catch2 tests)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/header_only_deps.sh
PY="${HEADROOM_PYTHON:-$PWD/.venv/bin/python}"
if ! ZIG_VERSION=$("$PY" -m ziglang version 2>/dev/null); then
  echo "test_macos: zig missing for $PY (pip install -r requirements-dev.txt installs ziglang)" >&2
  exit 2
fi
build_one() {  # arch (arm64 | x86_64), build folder
  local arch=$1 build=$2 target targets=(headroom_capi headroom) programs=("$2/headroom")
  if [ "$arch" = arm64 ] && [ "${HEADROOM_MACOS_TESTS:-1}" = 1 ]; then
    targets+=(headroom_tests)
    programs+=("$build/tests/native/headroom_tests")
  fi
  target="$([ "$arch" = arm64 ] && echo aarch64 || echo x86_64)-macos.11.0"
  mkdir -p "$build/deps/include"
  # zig as compiler, archiver and ranlib (Debian's binutils know no Mach-O). A wrapper is rewritten only
  # when it changes, and ccache keys on zig's version and the target rather than on the wrapper's mtime.
  local tool flags want
  for tool in c++ cc ar ranlib; do
    flags=""
    case "$tool" in c++|cc) flags=" -target $target" ;; esac
    want=$(printf '#!/bin/sh\nexec "%s" -m ziglang %s%s "$@"' "$PY" "$tool" "$flags")
    if [ "$(cat "$build/deps/zig-$tool" 2>/dev/null)" != "$want" ]; then
      echo "$want" > "$build/deps/zig-$tool"
      chmod +x "$build/deps/zig-$tool"
    fi
  done
  header_only_deps "$build/deps"
  # CMAKE_OSX_* stay empty: zig's -target already names the CPU and the minimum macOS, and there is no SDK
  # to point -isysroot at (zig brings its own headers and libSystem stubs).
  cat > "$build/deps/toolchain.cmake" <<CM
set(CMAKE_SYSTEM_NAME Darwin)
set(CMAKE_SYSTEM_PROCESSOR $arch)
set(CMAKE_C_COMPILER "$build/deps/zig-cc")
set(CMAKE_CXX_COMPILER "$build/deps/zig-c++")
set(CMAKE_AR "$build/deps/zig-ar" CACHE FILEPATH "")
set(CMAKE_RANLIB "$build/deps/zig-ranlib" CACHE FILEPATH "")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
CM
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  CCACHE_COMPILERCHECK="string:zig $ZIG_VERSION $target" CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" \
    cmake -S . -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$build/deps/toolchain.cmake" -DCMAKE_BUILD_TYPE=Release \
    -DHEADROOM_TORCH=OFF -DHEADROOM_CUDA=OFF -DHEADROOM_PYTHON=OFF -DHEADROOM_TESTS=ON \
    -Dnlohmann_json_DIR="$build/deps/nlohmann_json" -DCatch2_DIR="$build/deps/Catch2" "${launcher[@]}" >/dev/null
  CCACHE_COMPILERCHECK="string:zig $ZIG_VERSION $target" CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" \
    cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"

  "$PY" scripts/macho_check.py --cpu "$arch" --min-macos 11.0 --capi-exports "$build/capi/libheadroom_core.dylib"
  "$PY" scripts/macho_check.py --cpu "$arch" --min-macos 11.0 "${programs[@]}"
}

for arch in ${HEADROOM_MACOS_ARCHS:-arm64 x86_64}; do
  case "$arch" in
    arm64) dir="${HEADROOM_MACOS_BUILD_DIR:-build-macos-arm64}" ;;
    x86_64) dir="${HEADROOM_MACOS_X86_64_BUILD_DIR:-build-macos-x86_64}" ;;
    *) echo "test_macos: HEADROOM_MACOS_ARCHS: expected arm64 and/or x86_64, got '$arch'" >&2; exit 2 ;;
  esac
  echo "== macOS $arch build of the core (zig $ZIG_VERSION; compiled and linked, not run)"
  build_one "$arch" "$(realpath -m "$dir")"
done
