#!/usr/bin/env bash
# Fuzzes the model-header parsers and the OOM-message parser with libFuzzer (clang, ASan + UBSan).
# usage: scripts/fuzz.sh [SECONDS]   (default 600 = ten minutes per parser, one parser after the other)
# Builds build-fuzz/, writes a seed corpus of valid files to build-fuzz/seeds/<target>, keeps the
# growing corpus in build-fuzz/corpus/<target> and any crash in build-fuzz/crashes/<target>/.
# Exits non-zero when a target finds a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-600}"
case "$SECONDS_PER_TARGET" in ''|*[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS]" >&2; exit 2;; esac
BUILD=build-fuzz
CLANGXX="$(command -v clang++ || command -v clang++-14 || true)"
CLANGC="$(command -v clang || command -v clang-14 || true)"
if [ -z "$CLANGXX" ]; then echo "fuzz.sh: clang++ not found (apt-get install clang)" >&2; exit 2; fi

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$CLANGXX" -DCMAKE_C_COMPILER="$CLANGC" \
  -DHEADROOM_FUZZ=ON -DHEADROOM_TESTS=OFF -DHEADROOM_PYTHON=OFF -DHEADROOM_TORCH=OFF -DHEADROOM_CUDA=OFF >/dev/null
cmake --build "$BUILD" -j2 --target fuzz_safetensors fuzz_gguf fuzz_image fuzz_oom

# Seeds: small valid files exercising every dtype, GGUF value type, array, alignment and version.
"${HEADROOM_PYTHON:-python3}" - "$BUILD" <<'PY'
import json, os, struct, sys
out = sys.argv[1]
def put(target, name, data):
    d = os.path.join(out, "seeds", target); os.makedirs(d, exist_ok=True)
    open(os.path.join(d, name), "wb").write(data)

sizes = {"F64":8,"F32":4,"F16":2,"BF16":2,"F8_E4M3":1,"F8_E5M2":1,"F8_E8M0":1,"I64":8,"I32":4,"I16":2,"I8":1,
         "U64":8,"U32":4,"U16":2,"U8":1,"BOOL":1}
def st(tensors, meta=None, pad=0):
    h, off = {}, 0
    for name, dt, shape in tensors:
        n = sizes[dt]
        for s in shape: n *= s
        h[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}; off += n
    if meta is not None: h["__metadata__"] = meta
    text = json.dumps(h).encode() + b" " * pad
    return struct.pack("<Q", len(text)) + text + b"\0" * off
put("fuzz_safetensors", "bf16", st([("a.weight","BF16",[2,2]),("b","BF16",[3])], {"format":"pt"}))
put("fuzz_safetensors", "alldtypes", st([(f"t{i}", d, [2]) for i, d in enumerate(sizes)]))
put("fuzz_safetensors", "fp8scaled", st([("w.weight","F8_E4M3",[4,4]),("w.scale_weight","F32",[1]),("scaled_fp8","F8_E4M3",[0])]))
put("fuzz_safetensors", "bundle", st([("model.diffusion_model.a.weight","F16",[2,2]),("first_stage_model.w","F32",[4]),
                                      ("text_encoders.clip_l.w","BF16",[4]),("model.diffusion_model.b","F16",[1])]))
put("fuzz_safetensors", "padded", st([("x","U8",[0]),("y","U8",[5])], pad=7))
put("fuzz_safetensors", "lora", st([("lora_unet_x.lora_down.weight","BF16",[2,2])]))

def gstr(s): s = s.encode() if isinstance(s, str) else s; return struct.pack("<Q", len(s)) + s
def gguf(version=3, kvs=(), tensors=(), alignment=32):
    b = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for k, t, v in kvs: b += gstr(k) + struct.pack("<I", t) + v
    off, data = 0, 0
    for name, ne, typ, nbytes in tensors:
        b += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", typ, off)
        data = off + nbytes; off += (nbytes + alignment - 1) // alignment * alignment
    b += b"\0" * (-len(b) % alignment)
    return b + b"\0" * data
scalars = [("u8",0,struct.pack("<B",7)),("i8",1,struct.pack("<b",-7)),("u16",2,struct.pack("<H",7)),("i16",3,struct.pack("<h",-7)),
           ("u32",4,struct.pack("<I",7)),("i32",5,struct.pack("<i",-7)),("f32",6,struct.pack("<f",0.5)),("bool",7,b"\1"),
           ("str",8,gstr("hello")),("u64",10,struct.pack("<Q",7)),("i64",11,struct.pack("<q",-7)),("f64",12,struct.pack("<d",0.25))]
arr_str = struct.pack("<IQ", 8, 3) + gstr("a") + gstr("bb") + gstr("ccc")
arr_u32 = struct.pack("<IQ", 4, 20) + b"\1\0\0\0" * 20
arr_nested = struct.pack("<IQ", 9, 1) + struct.pack("<IQ", 4, 2) + b"\1\0\0\0\2\0\0\0"
kvs = [("general.architecture", 8, gstr("flux"))] + scalars + [("arr.s", 9, arr_str), ("arr.u", 9, arr_u32), ("arr.n", 9, arr_nested)]
# (ggml type id, weights per block, bytes per block): ggml-common.h
types = [(0,1,4),(1,1,2),(30,1,2),(8,32,34),(2,32,18),(3,32,20),(6,32,22),(7,32,24),(10,256,84),(11,256,110),(12,256,144),(13,256,176),(14,256,210),(16,256,66)]
put("fuzz_gguf", "v3_types", gguf(3, kvs, [(f"blk.{i}.weight", [256, 2], t, 2 * 256 // blk * nb) for i, (t, blk, nb) in enumerate(types)]))
put("fuzz_gguf", "v2", gguf(2, kvs[:3], [("img_in.weight", [32, 4], 8, 4 * 34), ("img_in.bias", [4], 0, 16)]))
put("fuzz_gguf", "align64", gguf(3, [("general.alignment", 4, struct.pack("<I", 64))], [("a", [32], 8, 34), ("b", [32], 8, 34)], alignment=64))
put("fuzz_gguf", "empty", gguf(3))
# Images: one of each format LoadImage reads (Pillow writes them, as ComfyUI's own library), animated too.
try:
    import io
    from PIL import Image
    for fmt, kw in (("PNG", {}), ("JPEG", {}), ("WEBP", {"lossless": True}), ("WEBP", {"quality": 50}),
                    ("GIF", {}), ("BMP", {})):
        buf = io.BytesIO()
        Image.new("RGB", (48, 32)).save(buf, fmt, **kw)
        put("fuzz_image", f"{fmt.lower()}{len(kw) and list(kw)[0]}", buf.getvalue())
    frames = [Image.new("RGB", (16, 16), c) for c in ("red", "blue")]
    for fmt in ("PNG", "GIF", "WEBP"):
        buf = io.BytesIO()
        frames[0].save(buf, fmt, save_all=True, append_images=frames[1:])
        put("fuzz_image", f"animated_{fmt.lower()}", buf.getvalue())
except ImportError:
    put("fuzz_image", "png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x02\x00\x00\x00")
# OOM messages: the real ones collected in shared/facts when that folder is beside the clone.
facts = os.path.join(os.path.dirname(os.path.abspath(out)), "..", "shared", "facts", "oom-examples.json")
if os.path.exists(facts):
    for i, rec in enumerate(json.load(open(facts))):
        text = rec.get("text") or ""
        if text: put("fuzz_oom", "real%03d" % i, text.encode())
put("fuzz_oom", "pytorch", b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
    b"capacity of 23.65 GiB of which 5.06 MiB is free. Process 12345 has 23.63 GiB memory in use. Of the allocated "
    b"memory 22.90 GiB is allocated by PyTorch, and 280.90 MiB is reserved by PyTorch but unallocated.")
put("fuzz_oom", "legacy", b"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total capacity; "
    b"21.66 GiB already allocated; 12.25 MiB free; 22.11 GiB reserved in total by PyTorch)")
for target, words in (("fuzz_safetensors", ['"dtype"','"shape"','"data_offsets"','"__metadata__"','"BF16"','"F16"','"F32"',
                       '"F8_E4M3"','"F8_E5M2"','"U8"','"scaled_fp8"','".scale_weight"','"model.diffusion_model."',
                       '"first_stage_model."','"text_encoders."','"lora_up"','"{"','"}"','"["','"]"','":"','","']),
                      ("fuzz_gguf", ['"GGUF"','"\\x03\\x00\\x00\\x00"','"\\x02\\x00\\x00\\x00"','"general.alignment"',
                       '"\\x08\\x00\\x00\\x00"','"\\x09\\x00\\x00\\x00"','"\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00"'])):
    with open(os.path.join(out, target + ".dict"), "w") as f:
        for i, w in enumerate(words): f.write(f"kw{i}={w}\n")
PY

status=0
for target in fuzz_safetensors fuzz_gguf fuzz_image fuzz_oom; do
  mkdir -p "$BUILD/corpus/$target" "$BUILD/crashes/$target"
  echo "== $target: ${SECONDS_PER_TARGET}s"
  # -malloc_limit_mb makes any oversized allocation a reported bug; -max_len keeps inputs header-sized.
  dict=()
  [ -f "$BUILD/$target.dict" ] && dict=(-dict="$BUILD/$target.dict")
  if ! nice -n 10 "$BUILD/$target" "$BUILD/corpus/$target" "$BUILD/seeds/$target" \
      "${dict[@]}" -max_total_time="$SECONDS_PER_TARGET" -max_len=8192 \
      -malloc_limit_mb=256 -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 \
      -artifact_prefix="$BUILD/crashes/$target/" 2>"$BUILD/$target.log"; then
    echo "!! $target found a crash: see $BUILD/crashes/$target/ and $BUILD/$target.log" >&2
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb" "$BUILD/$target.log" || true
done
exit $status
