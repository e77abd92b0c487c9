#!/usr/bin/env bash
# `headroom inspect` on 20 GB sparse files: proves it reads only the header.
# usage: tests/bench/bench_inspect.sh [BUILD_DIR]   (default: build)
# Writes a ~20 GB .safetensors (1000 bf16 tensors, Flux-like names) and a 20 GB .gguf (Q8_0) as
# sparse files (no disk used), then reports the median wall time of 20 runs and, through strace,
# the bytes the process read from each file.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${1:-build}"
CLI="$BUILD/headroom"
[ -x "$CLI" ] || { echo "bench_inspect: $CLI not found; build first" >&2; exit 2; }
DIR="$(mktemp -d "${TMPDIR:-/tmp}/headroom-bench-inspect-XXXXXX")"
trap 'rm -rf "$DIR"' EXIT

python3 - "$DIR" <<'PY'
import json, struct, sys
d = sys.argv[1]
total = 20 * 10**9
# safetensors: 1000 bf16 tensors sharing the data evenly.
n = 1000
per = (total - 8 - 200_000) // n // 2 // 3072 * 3072  # elements per tensor, a multiple of 3072
h, off = {}, 0
for i in range(n):
    h[f"double_blocks.{i}.img_attn.qkv.weight"] = {"dtype": "BF16", "shape": [per // 3072, 3072], "data_offsets": [off, off + per * 2]}
    off += per * 2
text = json.dumps(h).encode()
text += b" " * (-(8 + len(text)) % 8)  # writers align the data section to 8 bytes
with open(f"{d}/big.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text)
    f.truncate(8 + len(text) + off)
# gguf v3: 1000 Q8_0 tensors (34 bytes per 32 weights).
def s(x): x = x.encode(); return struct.pack("<Q", len(x)) + x
blocks = (total - 200_000) // n // 34 // 96 * 96
body = b"GGUF" + struct.pack("<IQQ", 3, n, 1) + s("general.architecture") + struct.pack("<I", 8) + s("flux")
off = 0
for i in range(n):
    body += s(f"double_blocks.{i}.img_attn.qkv.weight") + struct.pack("<I", 2) + struct.pack("<QQ", 3072, blocks * 32 // 3072) + struct.pack("<IQ", 8, off)
    off += (blocks * 34 + 31) // 32 * 32
body += b"\0" * (-len(body) % 32)
with open(f"{d}/big.gguf", "wb") as f:
    f.write(body)
    f.truncate(len(body) + off)
PY

for f in "$DIR/big.safetensors" "$DIR/big.gguf"; do
  size=$(stat -c %s "$f")
  disk=$(du -k "$f" | cut -f1)
  times=()
  for i in $(seq 20); do
    s=$(date +%s%N); "$CLI" inspect --json "$f" >/dev/null; e=$(date +%s%N)
    times+=($(( (e - s) / 1000 )))
  done
  median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 10p)
  read_bytes="n/a (strace missing)"
  if command -v strace >/dev/null; then
    # Sum what read/pread64 returned on the descriptor that openat() gave for the model file.
    read_bytes=$(strace -f -e trace=openat,read,pread64 -o "$DIR/trace" "$CLI" inspect --json "$f" >/dev/null 2>&1; \
      awk -v f="$f" '
        index($0, "openat(") && index($0, "\"" f "\"") { split($0, a, "= "); fd = a[length(a)] + 0 }
        fd != "" && ($0 ~ "pread64\\(" fd "," || $0 ~ "read\\(" fd ",") { split($0, a, "= "); sum += a[length(a)] }
        END { print sum + 0 }' "$DIR/trace")
  fi
  header=$("$CLI" inspect --json "$f" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["header_bytes"])')
  echo "$(basename "$f"): file $size bytes ($disk KiB on disk), header $header bytes, median inspect wall time ${median} us over 20 runs, bytes read from the file: $read_bytes"
done
