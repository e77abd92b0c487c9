#!/usr/bin/env bash
# Installs what building and testing Headroom needs on Debian 12, and nothing that is already there:
# the toolchain and C++ libraries from Debian's archive, the Python side (torch 2.13, pytest, playwright, ...)
# pinned in requirements-dev.txt into a virtual environment .venv/ inside the checkout (ignored by git).
# usage: scripts/deps.sh        everything the tests need (scripts/test.sh)
#        scripts/deps.sh run    only what building the CLI needs (scripts/run.sh): a compiler, CMake, Ninja
#                               and nlohmann_json; no Wine, MinGW, Chromium, clang or Python packages
set -euo pipefail
cd "$(dirname "$0")/.."
MODE="${1:-test}"

# The Python the venv is made from: the machine's python3 (pyenv's 3.11 on the project's machines,
# Debian's 3.11 on a bare Debian 12).
BASE_PY="${HEADROOM_BASE_PYTHON:-$(command -v python3 || true)}"

if [ "$MODE" = run ]; then
  PACKAGES=(build-essential cmake ninja-build nlohmann-json3-dev)
else
  PACKAGES=(
    build-essential cmake ninja-build ccache pkg-config
    nlohmann-json3-dev catch2 libbenchmark-dev zlib1g-dev
    clang libclang-rt-14-dev
    chromium
    mingw-w64 wine wine64
  )
fi
[ -n "$BASE_PY" ] || [ "$MODE" = run ] || PACKAGES+=(python3)
# Debian's own python3 needs its venv and header packages; pyenv's builds carry both.
if [ "$MODE" != run ] && { [ -z "$BASE_PY" ] || [ "$(readlink -f "$BASE_PY")" = "$(readlink -f /usr/bin/python3 2>/dev/null)" ]; }; then
  PACKAGES+=(python3-venv python3-dev)
fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]} (Debian)"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ "$MODE" = run ] && exit 0  # the CLI needs no Python
BASE_PY="${HEADROOM_BASE_PYTHON:-$(command -v python3)}"

# The venv is remade when it is missing or its interpreter no longer runs (a moved checkout, a removed
# base Python); packages are installed again only when requirements-dev.txt changed since the last install.
VENV=.venv
if ! "$VENV/bin/python" -c "import sys" >/dev/null 2>&1; then
  echo "deps: creating $VENV from $BASE_PY ($("$BASE_PY" --version 2>&1))"
  rm -rf "$VENV"
  "$BASE_PY" -m venv "$VENV"
fi
want="$(sha256sum requirements-dev.txt | cut -d' ' -f1)"
have="$(cat "$VENV/.requirements.sha256" 2>/dev/null || true)"
if [ "$want" != "$have" ]; then
  echo "deps: installing requirements-dev.txt into $VENV (PyPI)"
  # (pip's warnings about find-links folders a machine's pip.conf names but lacks are only noise)
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements-dev.txt \
    2> >(grep -v "is neither a file nor a directory" >&2)
  echo "$want" > "$VENV/.requirements.sha256"
fi
