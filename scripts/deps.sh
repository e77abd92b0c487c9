#!/usr/bin/env bash
# Installs what building and testing Headroom needs on Debian 12, and nothing that is already there.
# Everything comes from Debian's archive and npm (no PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  nlohmann-json3-dev catch2 libbenchmark-dev pybind11-dev python3-pybind11
  python3 python3-dev python3-torch libtorch-dev zlib1g-dev python3-numpy python3-pytest python3-aiohttp
  python3-pil
  clang libclang-rt-14-dev
  chromium
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from elsewhere than Debian (with npm bundled): ask for the commands, not the packages.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Browser-test driver: playwright-core only (it drives Debian's chromium; no browser download).
if [ -f tests/web/package.json ] && [ ! -d tests/web/node_modules/playwright-core ]; then
  (cd tests/web && npm ci --no-audit --no-fund --loglevel=error)
fi
