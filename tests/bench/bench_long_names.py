"""Issue 27, item 6: what long names cost the core. Prints, for requests with names of 1 kB to 15 MB in
each name field (and as an unknown key), the median time of the C library's answer and its length,
against the same request with a short unknown name measured in the same run. Not a test: run by hand,
figures go to BENCHMARKS.md.  usage: .venv/bin/python tests/bench/bench_long_names.py [build]"""
import ctypes
import json
import statistics
import sys
import time
from pathlib import Path

build = Path(sys.argv[1] if len(sys.argv) > 1 else "build")
lib = ctypes.CDLL(str(build / "capi" / "libheadroom_core.so"))
lib.headroom_call.restype = ctypes.c_void_p
lib.headroom_free.argtypes = [ctypes.c_void_p]


def call(function, request):
    text = json.dumps(request).encode()
    times, answer = [], None
    for _ in range(5):
        t0 = time.perf_counter()
        p = lib.headroom_call(function.encode(), text)
        times.append(time.perf_counter() - t0)
        answer = ctypes.string_at(p)
        lib.headroom_free(p)
    return statistics.median(times) * 1e3, len(answer)


base_ms, base_len = call("estimate", {"model": "flux1-dex"})
print(f"baseline: unknown model 'flux1-dex': {base_ms:.2f} ms, answer {base_len} bytes")
for size in (1 << 10, 30 << 10, 1 << 20, 15 << 20):
    name = "flux1-dex" + "q" * (size - 9)
    for field in ("model", "gpu", "precision"):
        request = {"model": "flux1-dev", field: name} if field != "model" else {"model": name}
        ms, n = call("estimate", request)
        print(f"{field:10s} {size:>9,d} bytes: {ms:8.2f} ms ({ms / base_ms:5.1f}x baseline), answer {n} bytes")
    ms, n = call("estimate", {"model": "flux1-dev", name: 1})
    print(f"{'key':10s} {size:>9,d} bytes: {ms:8.2f} ms ({ms / base_ms:5.1f}x baseline), answer {n} bytes")
