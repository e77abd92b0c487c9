#!/usr/bin/env bash
# Builds Headroom and runs every test: Catch2 (ctest), pytest, browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
echo "== native tests (ctest)"
ctest --test-dir build --output-on-failure
echo "== web tests (node --test, headless chromium)"
if [ -d tests/web ] && ls tests/web/*.test.mjs >/dev/null 2>&1; then
  node --test tests/web/
fi
echo "== python tests (pytest)"
/usr/bin/python3 -m pytest tests/python -q -p no:cacheprovider
