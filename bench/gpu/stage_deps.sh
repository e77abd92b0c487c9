#!/usr/bin/env bash
# Copies the header-only build dependencies the GPU machine may lack (nlohmann/json.hpp, zlib.h, zconf.h) from
# this machine's system headers (Debian: nlohmann-json3-dev, zlib1g-dev) into bench/gpu/.deps/include, which
# is git-ignored. Run it here before the GPU run and name bench/gpu/.deps in the device tool's `carry`:
# bench/gpu/build.sh looks there when the GPU machine has no copy of its own. Nothing is added to the repository.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
DST="$HERE/.deps/include"
mkdir -p "$DST"
[ -d /usr/include/nlohmann ] && cp -r /usr/include/nlohmann "$DST/" || echo "no /usr/include/nlohmann (apt-get install nlohmann-json3-dev)"
for h in zlib.h zconf.h; do [ -f "/usr/include/$h" ] && cp "/usr/include/$h" "$DST/"; done
du -sh "$HERE/.deps"
