#!/usr/bin/env bash
# The main job: install what is missing, build, then plan the example Flux and Wan workflows
# in workflows/ for a 24 GB and a 12 GB card and print the result.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh run
# The CLI alone, in a folder of its own: no torch, no tests, and the test build's options stay as they are.
BUILD="${HEADROOM_RUN_BUILD_DIR:-build-cli}"
LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHEADROOM_TORCH=OFF -DHEADROOM_CUDA=OFF \
  -DHEADROOM_PYTHON=OFF -DHEADROOM_TESTS=OFF -DHEADROOM_CAPI=OFF "${LAUNCHER[@]}" >/dev/null
cmake --build "$BUILD" --target headroom -j"$(nproc)"
shopt -s nullglob
workflows=(workflows/*.json)
if ((${#workflows[@]} == 0)); then
  echo "no workflows in workflows/" >&2
  exit 1
fi
status=0
for wf in "${workflows[@]}"; do
  for gpu in "RTX 4090 24GB" "RTX 3060 12GB"; do
    echo
    echo "================ $wf on $gpu ================"
    # Exit code 1 means "does not fit" (the plan says what to change): not a failure of the job.
    "$BUILD/headroom" plan "$wf" --gpu "$gpu" || { rc=$?; [ "$rc" -eq 1 ] || status=$rc; }
  done
done
exit $status
