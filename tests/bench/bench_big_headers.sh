#!/usr/bin/env bash
# What one huge header costs, and what reading it again under other spellings costs (issue 27, item 5).
# usage: tests/bench/bench_big_headers.sh [BUILD_DIR]   (default: build)
# Writes, as sparse files:
#   many.safetensors  1,000,000 one-element F32 tensors (a ~40 MB header): over the reader's tensor limit
#   limit.safetensors 262,144 such tensors, the most the reader takes
#   limit.gguf        262,144 one-element F32 tensors, the most the GGUF reader takes
#   flux1-dev.safetensors  Flux dev's 780 bf16 tensors (20 GB of sparse data) plus 250,000 one-element
#                     ones: a recognised model with a dense ~15 MB header
# and reports wall time and peak memory (GNU time) of `headroom inspect` on each, then of `headroom plan
# --models` on an API workflow whose 10 UNETLoaders name flux1-dev.safetensors under 10 spellings
# (x, ./x, .//x, ...) and of one that names it once.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${1:-build}"
CLI="$BUILD/headroom"
[ -x "$CLI" ] || { echo "bench_big_headers: $CLI not found; build first" >&2; exit 2; }
DIR="$(mktemp -d "${TMPDIR:-/tmp}/headroom-bench-headers-XXXXXX")"
trap 'rm -rf "$DIR"' EXIT

python3 - "$DIR" <<'PY'
import json, struct, sys
d = sys.argv[1]

def safetensors(path, header, data_bytes):
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.truncate(8 + len(text) + data_bytes)

def tiny(n):
    return {f"t.{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(n)}, 4 * n

for name, n in (("many", 1_000_000), ("limit", 262_144)):
    h, data = tiny(n)
    safetensors(f"{d}/{name}.safetensors", h, data)

def s(x):
    x = x.encode()
    return struct.pack("<Q", len(x)) + x
n = 262_144
body = bytearray(b"GGUF" + struct.pack("<IQQ", 3, n, 1) + s("general.architecture") + struct.pack("<I", 8) + s("x"))
for i in range(n):
    body += s(f"t.{i}") + struct.pack("<I", 1) + struct.pack("<Q", 8) + struct.pack("<IQ", 0, 32 * i)
body += b"\0" * (-len(body) % 32)
with open(f"{d}/limit.gguf", "wb") as f:
    f.write(body)
    f.truncate(len(body) + 32 * n)

# Flux dev's key names and shapes (double_blocks/single_blocks), bf16: recognised as flux1-dev.
h, off = {}, 0
def add(k, shape):
    global off
    n = 1
    for x in shape:
        n *= x
    h[k] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + 2 * n]}
    off += 2 * n
add("img_in.weight", [3072, 64]); add("txt_in.weight", [3072, 4096]); add("guidance_in.in_layer.weight", [3072, 256])
add("time_in.in_layer.weight", [3072, 256]); add("vector_in.in_layer.weight", [3072, 768]); add("final_layer.linear.weight", [64, 3072])
for i in range(19):
    for p in ("img", "txt"):
        add(f"double_blocks.{i}.{p}_attn.qkv.weight", [9216, 3072]); add(f"double_blocks.{i}.{p}_attn.proj.weight", [3072, 3072])
        add(f"double_blocks.{i}.{p}_mlp.0.weight", [12288, 3072]); add(f"double_blocks.{i}.{p}_mlp.2.weight", [3072, 12288])
        add(f"double_blocks.{i}.{p}_mod.lin.weight", [18432, 3072])
for i in range(38):
    add(f"single_blocks.{i}.linear1.weight", [21504, 3072]); add(f"single_blocks.{i}.linear2.weight", [3072, 15360])
    add(f"single_blocks.{i}.modulation.lin.weight", [9216, 3072])
for i in range(250_000):
    add(f"extra.{i}", [1])
import os
os.makedirs(f"{d}/models/diffusion_models", exist_ok=True)
safetensors(f"{d}/models/diffusion_models/flux1-dev.safetensors", h, off)

def workflow(names):
    return {str(i + 1): {"class_type": "UNETLoader", "inputs": {"unet_name": n, "weight_dtype": "default"}}
            for i, n in enumerate(names)}
spellings = ["flux1-dev.safetensors", "./flux1-dev.safetensors", ".//flux1-dev.safetensors",
             "././flux1-dev.safetensors", ".///flux1-dev.safetensors", "./././flux1-dev.safetensors",
             ".//.//flux1-dev.safetensors", "././/flux1-dev.safetensors", ".//./flux1-dev.safetensors",
             "./././/flux1-dev.safetensors"]
json.dump(workflow(spellings), open(f"{d}/ten.json", "w"))
json.dump(workflow(spellings[:1]), open(f"{d}/one.json", "w"))
PY

measure() {  # label, command...: wall seconds and peak resident memory of one run
  local label="$1"
  shift
  /usr/bin/time -f "%e %M" -o "$DIR/time" "$@" >"$DIR/out" 2>&1 || true
  read -r secs kb < <(tail -1 "$DIR/time")  # GNU time puts "Command exited with non-zero status" first
  printf '%-44s %7.2f s %8d MB   %s\n' "$label" "$secs" "$((kb / 1024))" "$(grep -o '"error"[^,]*\|more than [0-9]* tensors[^"]*' "$DIR/out" | head -1)"
}
for f in many.safetensors limit.safetensors limit.gguf models/diffusion_models/flux1-dev.safetensors; do
  measure "inspect $(basename "$f")" "$CLI" inspect --json "$DIR/$f"
done
measure "plan --models, 1 loader" "$CLI" plan "$DIR/one.json" --vram 24 --models "$DIR/models" --json
measure "plan --models, 10 spellings of one file" "$CLI" plan "$DIR/ten.json" --vram 24 --models "$DIR/models" --json
