#!/usr/bin/env bash
# Builds Headroom and runs every test: Catch2 (ctest), the MinGW build of the core with its tests under
# Wine, the macOS builds of the core (cross-compiled with zig; their Mach-O files checked, not run), the
# decoder module built and tested against a second torch (scripts/test_torch_release.sh), then pytest
# over the Python tests (the core wheel and the GPU script's CPU dry run among them) and the browser
# tests (Python playwright driving Debian's chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
BUILD="${HEADROOM_BUILD_DIR:-build}"
PY="${HEADROOM_PYTHON:-$PWD/.venv/bin/python}"
echo "== decoder module"
PYTHONPATH="$BUILD/python" "$PY" -c '
import torch
try:
    import _headroom_torch as ht
except ImportError as e:
    print(f"_headroom_torch not built ({e}); torch {torch.__version__}")
else:
    print(f"_headroom_torch built against torch {ht.built_torch_version()}, running under torch {torch.__version__}")'
echo "== native tests (ctest)"
ctest --test-dir "$BUILD" --output-on-failure
echo "== Windows build of the core (MinGW), its tests under Wine"
bash scripts/test_windows.sh
echo "== Windows build of the core with PyPI's zig (as install.py builds it without a compiler), its tests under Wine"
HEADROOM_WINDOWS_TOOLCHAIN=zig HEADROOM_PYTHON="$PY" bash scripts/test_windows.sh
echo "== macOS build of the core (zig, cross-compiled; checked, not run)"
# The library and the CLI for Apple silicon: a cold build of both CPUs with the tests takes 14 minutes on
# two cores, so the full set (scripts/test_macos.sh alone) is run by hand before a release.
HEADROOM_MACOS_ARCHS=arm64 HEADROOM_MACOS_TESTS=0 bash scripts/test_macos.sh
echo "== the decoder module against the torch new ComfyUI installs get (2.14.1, its own venv)"
bash scripts/test_torch_release.sh
echo "== python tests (pytest)"
HEADROOM_BUILD_DIR="$BUILD" "$PY" -m pytest tests/python -q -p no:cacheprovider
echo "== browser tests (pytest, playwright)"
# A process of their own: playwright leaves an event loop running that the aiohttp tests' asyncio.run()
# would then refuse.
HEADROOM_BUILD_DIR="$BUILD" "$PY" -m pytest tests/web -q -p no:cacheprovider
