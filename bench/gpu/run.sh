#!/usr/bin/env bash
# The one GPU run: measures what Headroom promises, in one go, inside 8 minutes on an H200.
#
#   bash bench/gpu/run.sh [--dry-run] [OUT]          (OUT: the folder given, else $OUT)
#
# Steps, each with its time budget (seconds, H200) and a watchdog (`timeout`): a step that overruns is stopped
# and recorded, what it wrote so far stays, and the summary is still written.
#
#   step      budget  what                                                              writes
#   build       130   headroom_core library + _headroom_torch (python3/torch/CUDA) (WORK/build.env)
#                     (sm_90; scripts/build.sh's configuration, the two modules only), the kernels shim
#   versions     15   Python, torch, CUDA, cuDNN, GPU, driver, what was built          versions.json
#   kernels      20   CUDA kernels vs their ATen twins (error, time)                   kernels.csv
#   peaks        60   DiT blocks, text encoders, VAE decode/encode peaks               peaks.csv
#   promise      85   15 settings x 4 budgets (8/12/16/24 GiB): estimate vs run        promise.csv
#   decoders    140   KL 1024/2048/4096^2, FLUX.2 VAE 2048^2, Wan 2.1 1280x720x81,     decoders.csv
#                     Wan 2.2 1280x704x121 (shortened to fit), bf16+fp32: full,
#                     exact at 1/2 and 1/4 of full's peak, blend, eager reference
#   summary      10   summary.json + summary.md (printed at the end)                   summary.json, summary.md
#   total       460   = 7 min 40 s (the budgets are hard limits; each Python step also shortens or skips its
#                     own cases as its budget runs out, 8 s before the limit)
#
# Everything else goes to OUT/run.log (8 files in all, the most the device tool brings back). Working files
# (build folder, step records, the kernels shim) live in $HEADROOM_GPU_WORK (default: a fresh /tmp folder).
#
# --dry-run: the same steps on the CPU at tiny sizes (eager stages at real sizes on the `meta` device, see
# common.py), reusing the build in $HEADROOM_BUILD_DIR (default build/) instead of building; well under 2 min.
# The README's test command runs it (tests/python/test_gpu_bench_dry_run.py).
#
# Before a GPU run, on the development machine: bash bench/gpu/stage_deps.sh (copies nlohmann/json.hpp and
# zlib.h into the git-ignored bench/gpu/.deps), then carry bench/gpu/.deps with the device tool:
#   run(command="bash bench/gpu/run.sh $OUT", carry=["bench/gpu/.deps"], timeout_s=560)
set -uo pipefail
DRY=""
OUTARG=""
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY=1 ;;
    -h|--help) sed -n 2,35p "$0"; exit 0 ;;
    *) OUTARG="$arg" ;;
  esac
done
OUT="${OUTARG:-${OUT:-}}"
[ -n "$OUT" ] || { echo "usage: bench/gpu/run.sh [--dry-run] OUT (or set OUT)" >&2; exit 2; }
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
export HEADROOM_GPU_WORK="${HEADROOM_GPU_WORK:-$(mktemp -d /tmp/headroom-gpu.XXXXXX)}"
mkdir -p "$HEADROOM_GPU_WORK"
: >"$HEADROOM_GPU_WORK/steps.tsv"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
LOG="$OUT/run.log"
: >"$LOG"

if [ -n "$DRY" ]; then
  export HEADROOM_GPU_DRY_RUN=1
  BUILD="${HEADROOM_BUILD_DIR:-$REPO/build}"
  if [ -z "${HEADROOM_PYTHON:-}" ]; then
    if [ -x "$REPO/.venv/bin/python" ]; then HEADROOM_PYTHON="$REPO/.venv/bin/python"; else HEADROOM_PYTHON="$(command -v python3)"; fi
  fi
  # RSS then follows live tensors (see tests/bench/bench_wan_decode.py); 1 thread: the machine is shared
  export MALLOC_MMAP_THRESHOLD_=65536 MALLOC_TRIM_THRESHOLD_=0 OMP_NUM_THREADS=1
  declare -A BUDGET=([build]=40 [versions]=20 [kernels]=20 [peaks]=40 [promise]=50 [decoders]=45 [summary]=10)
  PYFLAGS=(--dry-run)
else
  export HEADROOM_GPU_DRY_RUN=0
  BUILD="${HEADROOM_BUILD_DIR:-$HEADROOM_GPU_WORK/build}"
  HEADROOM_PYTHON="${HEADROOM_PYTHON:-$(command -v python3)}"
  declare -A BUDGET=([build]=130 [versions]=15 [kernels]=20 [peaks]=60 [promise]=85 [decoders]=140 [summary]=10)
  PYFLAGS=()
fi
export HEADROOM_PYTHON HEADROOM_BUILD_DIR="$BUILD" HEADROOM_KERNELS_SHIM="$HEADROOM_GPU_WORK/kernels_shim.so"
PY="$HEADROOM_PYTHON"

step() {  # step NAME CMD... : runs CMD under the NAME's budget, logs, records rc and seconds
  local name="$1"; shift
  local budget="${BUDGET[$name]}" t0 t1 rc
  echo "== $name (budget ${budget} s)" | tee -a "$LOG"
  t0=$(date +%s.%N)
  timeout -k 5 "$budget" "$@" >>"$LOG" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  local sec
  sec=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$sec" "$budget" >>"$HEADROOM_GPU_WORK/steps.tsv"
  echo "   rc $rc, ${sec} s$([ "$rc" = 124 ] || [ "$rc" = 137 ] && echo ' (STOPPED: over budget)')" | tee -a "$LOG"
}

pystep() {  # pystep NAME SCRIPT: a Python step with the time left of its budget passed on
  local name="$1" script="$2"
  step "$name" "$PY" "$HERE/$script" --out "$OUT" --build-dir "$BUILD" --budget-s "$(( ${BUDGET[$name]} - 8 ))" "${PYFLAGS[@]}"
}

step build bash "$HERE/build.sh" "$BUILD" "$HEADROOM_GPU_WORK" ${DRY:+--dry-run}
pystep versions versions.py
pystep kernels kernels.py
pystep peaks peaks.py
pystep promise promise.py
pystep decoders decoders.py
step summary "$PY" "$HERE/summary.py" "$OUT"
echo
cat "$OUT/summary.md" 2>/dev/null || echo "no summary (see $LOG)"
