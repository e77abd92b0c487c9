#!/usr/bin/env python3
"""Plans every shared real workflow with the built CLI on several cards and both loaders, and counts
the plans whose advice does not hold together (issue 20):

  block_swap_dynamic    block swap offered under dynamic VRAM, which streams weights already
  worse_change          a listed change (or combined step) gives a worse verdict than the run before it
  stacked_formats       the combined list stacks two exclusive weight formats of the diffusion model
  smallest_card         the smallest card "that runs it" is bigger than the card this plan says runs it,
                        or smaller than one this plan says cannot run it
  same_saving           two different changes claim the same saving (measured on a stage neither touches)
  text_encoder_ignored  the text-encode stage does not fit or streams, and no text-encoder change is listed
  reserve_ignored       the advised --reserve-vram X, given back as --reserve-vram X, is advised again

usage: scripts/check_plans.py [--cli build/headroom] [--cards 8,12,16,24] [DIR ...]
Prints one line per failing plan and a count per class; exit status 1 when any count is not zero.
"""
import argparse
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_WORKFLOWS = REPO.parent / "shared" / "real-workflows"
GIB = 2 ** 30
CARDS_GIB = (8, 12, 16, 24)
LOADERS = ("dynamic", "legacy")
CLASSES = ("block_swap_dynamic", "worse_change", "stacked_formats", "smallest_card", "same_saving",
           "text_encoder_ignored", "reserve_ignored")
# Weight formats of the diffusion model a user picks one of: one file, one weight_dtype.
EXCLUSIVE_FORMATS = {"weights_fp8", "gguf_q8", "gguf_q5", "gguf_q4", "weights_nvfp4"}
RANK = {"fits": 0, "streams": 1, "tight": 1, "does not fit": 2}
RESERVE = re.compile(r"--reserve-vram ([0-9]+(?:\.[0-9]+)?)")


def workflows(dirs):
    """Every workflow JSON under the folders (INDEX files and the like are not workflows)."""
    out = []
    for d in dirs:
        out += [p for p in sorted(Path(d).rglob("*.json")) if p.is_file()]
    return out


def run_plan(cli, path, card_gib, loader, reserve_gb=None):
    cmd = [str(cli), "plan", str(path), "--json", "--vram", str(card_gib), "--runtime", loader]
    if reserve_gb is not None:
        cmd += ["--reserve-vram", str(reserve_gb)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode not in (0, 1, 3):
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def reserve_advice(plan):
    """The largest --reserve-vram value the plan's estimate asks for (one per stage), or None."""
    texts = list(plan.get("notes") or []) + [plan.get("verdict_reason") or "", plan.get("advice") or ""]
    for s in plan.get("stages") or []:
        texts += s.get("notes") or []
    asked = [float(m.group(1)) for t in texts for m in RESERVE.finditer(t)]
    return max(asked) if asked else None


def failures(plan, card_bytes, loader):
    """The classes (but reserve_ignored, which needs a second plan) this one plan fails."""
    verdict = plan.get("verdict")
    if verdict not in RANK:
        return set()  # not covered or no size: nothing is advised
    changes = plan.get("changes") or []
    steps = (plan.get("cumulative") or {}).get("steps") or []
    out = set()
    if loader == "dynamic" and any(c["kind"] == "block_swap" for c in changes + steps):
        out.add("block_swap_dynamic")
    worse = any(RANK[c["verdict"]] > RANK[verdict] for c in changes)
    prev = verdict
    for s in steps:
        worse = worse or RANK[s["verdict"]] > RANK[prev]
        prev = s["verdict"]
    if worse:
        out.add("worse_change")
    if len(EXCLUSIVE_FORMATS & {s["kind"] for s in steps}) > 1:
        out.add("stacked_formats")
    out |= smallest_card_failure(plan, card_bytes, verdict)
    savings = [c["saving_bytes"] for c in changes if c["saving_bytes"] > 0]
    if len(savings) != len(set(savings)):
        out.add("same_saving")
    te = next((s for s in plan.get("stages") or [] if s.get("name") == "text_encode"), None)
    if te and verdict != "fits" and te.get("mode") != "full" and \
            not any(c["kind"].startswith("text_encoder") for c in changes):
        out.add("text_encoder_ignored")
    return out


def smallest_card_failure(plan, card_bytes, verdict):
    """The smallest cards are whole and empty, as the --vram card is: the one that runs it unchanged is
    no bigger than a card this plan runs on and bigger than one it does not; the fully resident one is
    no bigger than a card this plan fits on. Plans before issue 20 had one card, said to run it."""
    new = "smallest_gpu_runs" in plan
    runs_card = plan["smallest_gpu_runs"] if new else plan.get("smallest_gpu")
    runs = verdict != "does not fit"
    if runs and (runs_card is None or runs_card["memory_bytes"] > card_bytes):
        return {"smallest_card"}
    if not runs and runs_card is not None and runs_card["memory_bytes"] <= card_bytes:
        return {"smallest_card"}
    resident = plan.get("smallest_gpu")
    if new and verdict == "fits" and (resident is None or resident["memory_bytes"] > card_bytes):
        return {"smallest_card"}
    return set()


def check(cli, dirs, cards=CARDS_GIB, loaders=LOADERS, jobs=2):
    """[(workflow, card GiB, loader, classes)] for every plan, and {class: count}."""
    cases = [(p, c, l) for p in workflows(dirs) for c in cards for l in loaders]

    def one(case):
        path, card, loader = case
        plan = run_plan(cli, path, card, loader)
        bad = failures(plan, card * GIB, loader)
        x = reserve_advice(plan)
        if x is not None and reserve_advice(run_plan(cli, path, card, loader, reserve_gb=x)) is not None:
            bad.add("reserve_ignored")
        return path, card, loader, bad

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, cases))
    counts = {k: sum(k in r[3] for r in results) for k in CLASSES}
    return results, counts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", default=[str(SHARED_WORKFLOWS / "2026")])
    ap.add_argument("--cli", default=str(REPO / "build" / "headroom"))
    ap.add_argument("--cards", default=",".join(map(str, CARDS_GIB)), help="card sizes in GiB")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    if not Path(a.cli).is_file():
        sys.exit(f"--cli: expected the built headroom CLI, got {a.cli} (build the 'headroom' target)")
    cards = [float(c) if "." in c else int(c) for c in a.cards.split(",")]
    results, counts = check(a.cli, a.dirs, cards, jobs=a.jobs)
    for path, card, loader, bad in results:
        if bad:
            print(f"{Path(path).name} {card} GiB {loader}: {', '.join(sorted(bad))}")
    print(f"{len(results)} plans: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 1 if any(counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
