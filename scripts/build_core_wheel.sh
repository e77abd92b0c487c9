#!/usr/bin/env bash
# Builds the headroom_core wheel (the C library + its ctypes loader) into dist/ and checks it.
# usage: scripts/build_core_wheel.sh [OUT_DIR]   (default dist/)
# On Linux the library is compiled with zig c++ (PyPI's ziglang, in .venv) for glibc 2.28, so the one
# wheel loads on every manylinux_2_28 system; auditwheel then names its real platform tag.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="$(realpath -m "${1:-dist}")"
PY="${HEADROOM_PYTHON:-$PWD/.venv/bin/python}"
WORK="$PWD/build-wheel"
mkdir -p "$WORK" "$OUT"
GLIBC=2.28

# zig as the C and C++ compiler, for an old glibc; its own libc++ is linked statically.
cat > "$WORK/zig-c++" <<SH
#!/bin/sh
exec "$PY" -m ziglang c++ -target x86_64-linux-gnu.$GLIBC "\$@"
SH
cat > "$WORK/zig-cc" <<SH
#!/bin/sh
exec "$PY" -m ziglang cc -target x86_64-linux-gnu.$GLIBC "\$@"
SH
chmod +x "$WORK/zig-c++" "$WORK/zig-cc"

# Debian's nlohmann_json config adds /usr/include, whose glibc 2.36 headers must not meet zig's 2.28
# ones: a config of our own points at the nlohmann folder alone.
NJ="$WORK/nlohmann_json"
mkdir -p "$NJ/include"
ln -sfn /usr/include/nlohmann "$NJ/include/nlohmann"
cat > "$NJ/nlohmann_jsonConfig.cmake" <<CM
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
set_target_properties(nlohmann_json::nlohmann_json PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "$NJ/include")
CM
# Debian 12's package is 3.11.2 (scripts/deps.sh installs it); the core needs 3.9 or newer.
cat > "$NJ/nlohmann_jsonConfigVersion.cmake" <<CM
set(PACKAGE_VERSION "3.11.2")
set(PACKAGE_VERSION_COMPATIBLE TRUE)
CM

rm -f "$OUT"/headroom_core-*.whl
CC="$WORK/zig-cc" CXX="$WORK/zig-c++" CMAKE_GENERATOR=Ninja \
  "$PY" -m pip wheel --no-build-isolation --no-deps -q -w "$OUT" \
  -C build-dir="$WORK/skbuild" -C cmake.define.nlohmann_json_DIR="$NJ" native/capi
RAW="$(ls "$OUT"/headroom_core-*-linux_x86_64.whl)"
"$PY" -m auditwheel show "$RAW"
# Retag for manylinux_2_28 (auditwheel checks every symbol against it; nothing needs grafting).
PATH="$(dirname "$PY"):$PATH" "$PY" -m auditwheel repair --plat manylinux_2_28_x86_64 -w "$OUT" "$RAW" >/dev/null
rm -f "$RAW"
echo "built $(ls "$OUT"/headroom_core-*.whl)"
