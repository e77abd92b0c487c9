"""Hostile data, round 2 (issue 27, items 1 and 4), as a sweep: hundreds of single changes to the data files
(a number negated or made a billion times larger, a value of the wrong type, an entry copied), each under
HEADROOM_DATA_DIR in a fresh process that loads the source-built C library and asks it what ComfyUI's nodes
ask (catalog, estimates, a plan, presets, LLM and training, an OOM explanation). Every answer must be the
unchanged answer or an error naming the data file; the process must live. An answer that changed without an
error is a bad value accepted silently. The sweep is sampled with a fixed seed; HEADROOM_MUTATIONS=N widens it, 0 runs every one (scripts/fuzz.sh)."""
import copy
import json
import os
import random
import subprocess
import sys
import textwrap

import pytest

from conftest import BUILD_DIR, REPO, SHARED

LIBRARY = BUILD_DIR / "capi" / "libheadroom_core.so"
pytestmark = pytest.mark.skipif(not LIBRARY.is_file() or not sys.platform.startswith("linux"),
                                reason="build/capi/libheadroom_core.so is not built")

DATA = REPO / "native" / "data"
FILES = ["models.json", "gpus.json", "presets.json", "llms.json", "comfy_nodes.json", "oom_fixes.json"]
SAMPLES = int(os.environ.get("HEADROOM_MUTATIONS", "600")) or None  # 0: every mutation


def requests():
    flux = json.loads((SHARED / "real-workflows" / "flux_schnell.json").read_text())
    wan = json.loads((SHARED / "real-workflows" / "image_to_video_wan.json").read_text())
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
           "of 23.64 GiB of which 1.12 GiB is free. Of the allocated memory 20.1 GiB is allocated by PyTorch")
    return [
        ("catalog", {}),
        ("estimate", {"model": "flux1-dev", "width": 1024, "height": 1024, "gpu": "4090"}),
        ("estimate", {"model": "wan2.2-i2v-a14b", "width": 832, "height": 480, "frames": 81, "vram": "24GB",
                      "runtime": "dynamic"}),
        ("plan", {"workflow": flux, "vram": "8GB"}),
        ("plan", {"workflow": wan, "vram": "12GB", "runtime": "legacy"}),
        ("apply_preset", {"workflow": flux, "preset": "fit 8 GB", "vram": "8GB"}),
        ("llm", {"model": "llama-3.1-8b", "context": 8192, "vram": "24GB"}),
        ("train", {"model": "llama-3.1-8b", "method": "lora", "vram": "24GB"}),
        ("explain", {"text": oom}),
    ]


# One process per mutation: forked from a driver that has not loaded the library, so each child parses
# its own data. A child killed by a signal is a crash of the host process that loaded the library.
DRIVER = textwrap.dedent("""
    import ctypes, json, os, sys
    library, calls, dirs = sys.argv[1], json.loads(open(sys.argv[2]).read()), json.loads(open(sys.argv[3]).read())
    results = []
    for d in dirs:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            if d: os.environ["HEADROOM_DATA_DIR"] = d
            lib = ctypes.CDLL(library)
            lib.headroom_call.restype = ctypes.c_void_p
            lib.headroom_free.argtypes = [ctypes.c_void_p]
            answers = []
            for function, request in calls:
                p = lib.headroom_call(function.encode(), json.dumps(request).encode())
                answers.append(json.loads(ctypes.string_at(p).decode()))
                lib.headroom_free(p)
            with os.fdopen(w, "w") as out: json.dump(answers, out)
            os._exit(0)
        os.close(w)
        with os.fdopen(r) as inp: text = inp.read()
        _, status = os.waitpid(pid, 0)
        results.append({"signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0,
                        "answers": json.loads(text) if text else None})
    print(json.dumps(results))
""")


def leaves(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, path + (i,))
    else:
        yield path, value


def lists(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from lists(v, path + (k,))
    elif isinstance(value, list):
        if value and all(isinstance(v, dict) and "name" in v for v in value):
            yield path
        for i, v in enumerate(value):
            yield from lists(v, path + (i,))


def at(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def mutations(rng):
    """(label, file, changed document, whether the change must be refused when it changes an answer)."""
    out = []
    for name in FILES:
        doc = json.loads((DATA / name).read_text())
        for path, value in leaves(doc):
            if path and isinstance(path[-1], str) and path[-1].startswith("_"):
                continue  # comments
            kinds = []
            if isinstance(value, bool):
                kinds = ["type"]
            elif isinstance(value, (int, float)):
                kinds = ["negate", "huge", "type"] if value else ["huge", "type"]
            elif isinstance(value, str):
                kinds = ["type"]
            for kind in kinds:
                out.append((name, path, kind))
        for path in lists(doc):
            out.append((name, path, "duplicate"))
    rng.shuffle(out)
    picked = []
    for name, path, kind in out[:SAMPLES]:
        doc = json.loads((DATA / name).read_text())
        if kind == "duplicate":
            at(doc, path).append(copy.deepcopy(at(doc, path)[0]))
        else:
            parent, key = at(doc, path[:-1]), path[-1]
            v = parent[key]
            parent[key] = {"negate": lambda: -v, "huge": lambda: v * 1e9,
                           "type": lambda: ("x" if not isinstance(v, str) else 7)}[kind]()
        picked.append((f"{name}:{'.'.join(map(str, path))}:{kind}", name, doc))
    return picked


def run_driver(tmp_path, dirs):
    calls = tmp_path / "calls.json"
    calls.write_text(json.dumps(requests()))
    listing = tmp_path / "dirs.json"
    listing.write_text(json.dumps(dirs))
    out = subprocess.run([sys.executable, "-c", DRIVER, str(LIBRARY.resolve()), str(calls), str(listing)],
                         capture_output=True, text=True, timeout=1500, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def test_every_altered_data_file_is_an_error_naming_it_or_changes_nothing(tmp_path):
    rng = random.Random(27)
    picked = mutations(rng)
    dirs = []
    for i, (_, name, doc) in enumerate(picked):
        d = tmp_path / f"m{i}"
        d.mkdir()
        (d / name).write_text(json.dumps(doc))
        dirs.append(str(d))
    results = run_driver(tmp_path, [""] + dirs)
    baseline = results[0]["answers"]
    assert all("ok" in a for a in baseline), [a for a in baseline if "ok" not in a]
    crashed, silent, unnamed, refused = [], [], [], 0
    for (label, name, _), d, result in zip(picked, dirs, results[1:]):
        if result["signal"] or result["answers"] is None:
            crashed.append((label, result["signal"]))
            continue
        changed = False
        for base, answer in zip(baseline, result["answers"]):
            if answer == base:
                continue
            changed = True
            if "error" not in answer:
                silent.append(label)
            elif os.path.join(d, name) not in answer["error"]["message"]:
                unnamed.append((label, answer["error"]["message"][:200]))
        refused += changed
    print(f"{len(picked)} altered data sets: {refused} refused naming the file, "
          f"{len(picked) - refused - len(crashed)} changed no answer")
    assert not crashed, crashed
    assert not unnamed, unnamed[:10]
    assert not silent, sorted(set(silent))[:40]
