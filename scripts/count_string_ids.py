#!/usr/bin/env python3
"""Counts the comparisons of identifier vocabularies as strings in native/ (issue 25: at most 40 outside
the parse at the boundary): `x == "word"`, `"word" != x` and `== spelling(Verdict::...)` where word is
one of the vocabularies below (roles, stage and decode modes, devices, loaders, decoder families,
verdicts). Prints the total and the count per file; --list prints each site."""
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VOCAB = {
    # roles
    "diffusion", "diffusion_model", "text_encoder", "clip_vision", "vae", "checkpoint", "lora", "style_model",
    # stage and decode modes
    "full", "partial", "tiled", "tiled_fallback", "does_not_fit", "headroom", "exact", "fast", "blend", "auto",
    # devices and systems
    "cpu", "cuda", "mps", "rocm", "xpu", "windows", "linux", "macos",
    # loaders and verdicts
    "dynamic", "legacy", "fits", "tight", "streams", "does not fit", "unknown",
    # decoder families and precision kinds
    "kl", "flux2", "wan21", "wan22", "t5_encoder", "float", "gguf",
}
WORD = r'"([A-Za-z0-9_ ]+)"'
PATTERN = re.compile(r'(?:==|!=)\s*' + WORD + r'|' + WORD + r'\s*(?:==|!=)|(?:==|!=)\s*spelling\(|spelling\([^)]*\)\s*(?:==|!=)')


def sites():
    for path in sorted((REPO / "native").rglob("*")):
        if path.suffix not in {".cpp", ".hpp", ".cu", ".h"}:
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for m in PATTERN.finditer(line):
                word = m.group(1) or m.group(2)
                if word is None or word in VOCAB:
                    yield path.relative_to(REPO), n, line.strip()


def main():
    found = list(sites())
    if "--list" in sys.argv:
        for path, n, line in found:
            print(f"{path}:{n}: {line}")
    per_file = {}
    for path, _, _ in found:
        per_file[path] = per_file.get(path, 0) + 1
    for path, count in sorted(per_file.items(), key=lambda kv: -kv[1]):
        print(f"{count:4d} {path}")
    print(f"total {len(found)}")


if __name__ == "__main__":
    main()
