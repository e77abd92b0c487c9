"""How long Headroom's queue-time handler holds ComfyUI's event loop (issue 27, item 5).

ComfyUI calls on_prompt synchronously on its event loop, so the time the call takes is the time every
websocket and request of every user waits. This builds API-format prompts of 100, 2,000 and 20,000 nodes
from the real node types of workflows/ (the Wan 2.2 TI2V 5B and FLUX.1 dev templates, repeated with fresh
node ids), with and without a Preflight node, and prints for pass, warn and block the time on_prompt holds
its caller (median and max over the repeats) against json.dumps of the same dict, measured in the same
run. The estimate of pass and warn runs on the worker thread after the call returns; it is timed too
(until the worker is idle), and so is the longest the calling thread was kept from running meanwhile
(the GIL), which is what the event loop would feel.

Uses the built core (build/capi, or $HEADROOM_BUILD_DIR). Run from the repository root:
    .venv/bin/python tests/bench/bench_prompt_handler.py [--repeats N]
"""
import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "python"))

from conftest import core_built, load_pack  # noqa: E402

load_pack()
from headroom_pack.nodes.native import native_loader  # noqa: E402
from headroom_pack.nodes.server import prompt_handler, settings  # noqa: E402
from headroom_pack.nodes.server.queue_gate import gate_of  # noqa: E402

# Widget names in the order of each node's widgets_values (None: a frontend-only widget such as
# control_after_generate, which the API format does not carry). UI-only nodes (notes) are left out, as
# the frontend leaves them out of the prompt it queues.
WIDGETS = {
    "CLIPTextEncode": ["text"],
    "HeadroomVAEDecode": ["mode", "budget"],
    "HeadroomPreflight": ["budget", "action"],
    "SaveImage": ["filename_prefix"],
    "EmptySD3LatentImage": ["width", "height", "batch_size"],
    "CheckpointLoaderSimple": ["ckpt_name"],
    "KSampler": ["seed", None, "steps", "cfg", "sampler_name", "scheduler", "denoise"],
    "FluxGuidance": ["guidance"],
    "UNETLoader": ["unet_name", "weight_dtype"],
    "CLIPLoader": ["clip_name", "type", "device"],
    "VAELoader": ["vae_name"],
    "CreateVideo": ["fps"],
    "SaveVideo": ["filename_prefix", "format", "codec"],
    "Wan22ImageToVideoLatent": ["width", "height", "length", "batch_size"],
    "LoadImage": ["image", None],
    "ModelSamplingSD3": ["shift"],
}
UI_ONLY = {"Note", "MarkdownNote"}
# FLUX first: its Preflight is then the one in the prompt. (With the Wan template's Preflight first, the core
# refuses the whole prompt: "frames: flux1-dev is an image model; frames must be 1, got 121".)
TEMPLATES = ("flux1_dev_fp8_text_to_image.json", "wan2.2_ti2v_5b.json")


def api_prompt(ui: dict, keep_preflight: bool) -> dict:
    """A UI-format workflow as the API-format prompt the frontend queues (links as [node id, slot])."""
    links = {link[0]: link for link in ui["links"]}
    out = {}
    for node in ui["nodes"]:
        kind = node["type"]
        if kind in UI_ONLY or (kind == "HeadroomPreflight" and not keep_preflight):
            continue
        inputs = {}
        for name, value in zip(WIDGETS[kind], node.get("widgets_values") or []):
            if name is not None:
                inputs[name] = value
        for slot in node.get("inputs") or []:
            link = links.get(slot.get("link"))
            if link is not None:
                inputs[slot["name"]] = [str(link[1]), link[2]]
        out[str(node["id"])] = {"class_type": kind, "inputs": inputs}
    return out


def repeated(templates, nodes: int, with_preflight: bool) -> dict:
    """`nodes` nodes: the templates taken in turn, each copy with its own ids; a Preflight node only in the
    first copy when asked for (the rest are other pipelines of the same prompt)."""
    prompt, copy_index = {}, 0
    while len(prompt) < nodes:
        template = templates[with_preflight and copy_index == 0][copy_index % 2]
        offset = copy_index * 1000
        for key, node in template.items():
            if len(prompt) >= nodes:
                break
            node = copy.deepcopy(node)
            for name, value in node["inputs"].items():
                if isinstance(value, list) and len(value) == 2 and isinstance(value[1], int):
                    node["inputs"][name] = [str(int(value[0]) + offset), value[1]]
            prompt[str(int(key) + offset)] = node
        copy_index += 1
    return prompt


def hold(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def background(limit_s=120.0):
    """(seconds until the worker is idle, the longest this thread waited to run meanwhile)."""
    start = time.perf_counter()
    stall = 0.0
    while not prompt_handler.wait_idle(0):
        before = time.perf_counter()
        time.sleep(0.0005)
        stall = max(stall, time.perf_counter() - before - 0.0005)
        if before - start > limit_s:
            raise SystemExit(f"the worker was still busy after {limit_s:g} s")
    return time.perf_counter() - start, stall


def ms(seconds):
    return f"{seconds * 1e3:8.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--sizes", default="100,2000,20000")
    args = parser.parse_args()
    if not core_built():
        raise SystemExit("the core library is not built (build/capi); run scripts/run.sh first")
    native_loader.reset()
    native_loader.core()  # loaded (and its file checked) once, before anything is timed
    sent = []
    prompt_handler.send = lambda event, data, sid: sent.append(data)
    uis = [json.loads((REPO / "workflows" / name).read_text()) for name in TEMPLATES]
    templates = ([api_prompt(ui, False) for ui in uis], [api_prompt(ui, True) for ui in uis])

    print(f"on_prompt hold on the caller (ms; median / max of {args.repeats}); json.dumps of the same dict as "
          "the baseline; the worker's time after the call returns; the longest the caller's thread waited "
          "to run while the worker ran (GIL)")
    print(f"{'nodes':>6} {'preflight':>9} {'mode':>6} {'json.dumps':>19} {'hold':>19} {'worker':>19} "
          f"{'stall max':>9}  outcome")
    for size in (int(s) for s in args.sizes.split(",")):
        for with_preflight in (False, True):
            prompt = repeated(templates, size, with_preflight)
            for mode in ("pass", "warn", "block"):
                settings.update({"queue_action": mode, "budget": "24"})
                dumps, holds, workers, stalls, outcome = [], [], [], [], "?"
                for _ in range(args.repeats):
                    data = {"prompt": copy.deepcopy(prompt), "client_id": "bench", "extra_data": {}}
                    dumps.append(hold(json.dumps, data)[0])
                    sent.clear()
                    seconds, out = hold(prompt_handler.on_prompt, data)
                    holds.append(seconds)
                    worker_s, stall_s = background()
                    workers.append(worker_s)
                    stalls.append(stall_s)
                    last = sent[-1] if sent else {}
                    outcome = ("blocked" if gate_of(out["prompt"])[1] is not None else
                               f"error: {last['error'][:60]}" if "error" in last else
                               f"toast: {last.get('verdict')}" if last else "no toast")
                print(f"{len(prompt):>6} {('yes' if with_preflight else 'no'):>9} {mode:>6} "
                      f"{ms(statistics.median(dumps))} /{ms(max(dumps))} "
                      f"{ms(statistics.median(holds))} /{ms(max(holds))} "
                      f"{ms(statistics.median(workers))} /{ms(max(workers))} {ms(max(stalls))}  {outcome}")
    settings.reset()


if __name__ == "__main__":
    main()
