#!/usr/bin/env python3
"""How many of the official local ComfyUI templates Headroom estimates with their own models and shapes
(issue 26's first "Done when"), and why each of the rest is not.

  scripts/templates_coverage.py            print the count, the percentage and the rest grouped by reason
  scripts/templates_coverage.py --json     the same, machine-readable
  scripts/templates_coverage.py --write    also rewrite tests/data/templates/coverage.json (the floor that
                                           tests/python/test_templates_coverage.py holds the build to)

Which templates count (the corpus is the pinned comfyui-workflow-templates-json package, see
scripts/templates_table.py):

- **local**: every template file of the package that is not an API template (`api_*`, a paid service's
  node runs there, no local model) nor the index (`index*`). The index's `openSource` flag is not used:
  it is false for local templates that run an open model beside a partner node.
- **runs a diffusion model**: the template (UI format with its subgraphs, or API format) has a node that
  is not muted or bypassed (mode 2/4) and that loads a diffusion model: a node whose comfy_nodes.json rule
  loads role `diffusion` or `checkpoint`; or a node of any pack, known to Headroom or not, whose
  `properties.models` downloads into `diffusion_models`, `unet` or `checkpoints`; or whose type reads as
  a checkpoint/UNet/diffusion-model loader (`ImageOnlyCheckpointLoader`, `UnetLoaderGGUF`...) and that
  names a model file. Text-only LLM, upscaler, depth, background-removal and frame-interpolation
  templates load no diffusion model and are left out of the percentage (listed apart).
- **estimated with its own models and shapes**: `headroom plan <t> --vram 24 --json` answers with a
  verdict other than `unknown`, every loader of role `diffusion`/`checkpoint` it reads names a catalog
  model (a mixed workflow with one unknown diffusion model is not estimated), and the latent size is
  known (recorded in the template or set by a node Headroom reads), not assumed.

A template that crashes the CLI, answers no JSON or runs past the timeout counts as not estimated, with
that reason; it never stops the script. The binary is $HEADROOM_BUILD_DIR/headroom (build/headroom)."""
import argparse
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import templates_table as tt  # noqa: E402  (the corpus helpers: pinned package, its folder, the binary)

REPO = tt.REPO
COVERAGE = REPO / "tests" / "data" / "templates" / "coverage.json"
VRAM_GIB = 24
TIMEOUT_S = 120
DIFFUSION_ROLES = ("diffusion", "checkpoint")
DIFFUSION_DIRS = {"diffusion_models", "unet", "checkpoints"}
MODEL_FILE = re.compile(r"\.(safetensors|gguf|ckpt|pt|pth|bin|sft)$", re.IGNORECASE)
# Node types of other packs that load a diffusion model: a checkpoint, UNet or diffusion-model loader.
LOADER_TYPE = re.compile(r"checkpoint\w*loader|unet\w*loader|diffusion\w*loader|load\w*(checkpoint|unet|diffusion)",
                         re.IGNORECASE)
MUTED_MODES = (2, 4)
# Precision and format tokens cut from a file name to guess the family it belongs to (for grouping only).
PRECISION_TOKENS = re.compile(r"(fp8_e4m3fn|fp8_e5m2|fp8_scaled|fp8mixed|fp8|bf16|fp16|fp32|int8_convrot|int8|"
                              r"nvfp4|mxfp8|q\d_k(_[sml])?|q\d_\d|scaled|comfy)", re.IGNORECASE)


def diffusion_loader_types():
    nodes = json.loads((REPO / "native" / "data" / "comfy_nodes.json").read_text())["nodes"]
    return {t for t, n in nodes.items() if n.get("loads") in DIFFUSION_ROLES}


def template_nodes(workflow):
    """(type, mode, properties, widget values) of every node: the top level and each subgraph (UI format),
    or the prompt's entries (API format)."""
    if isinstance(workflow, dict) and isinstance(workflow.get("nodes"), list):
        scopes = [workflow["nodes"]] + [sg.get("nodes") or [] for sg in
                                        (workflow.get("definitions") or {}).get("subgraphs") or []]
        for scope in scopes:
            for n in scope:
                if isinstance(n, dict):
                    values = n.get("widgets_values")
                    values = list(values.values()) if isinstance(values, dict) else (values or [])
                    yield n.get("type") or "", n.get("mode") or 0, n.get("properties") or {}, values
    elif isinstance(workflow, dict):
        for n in workflow.values():
            if isinstance(n, dict) and "class_type" in n:
                yield n["class_type"], 0, {}, list((n.get("inputs") or {}).values())


def loads_diffusion_model(node_type, mode, properties, values, known_loaders):
    if mode in MUTED_MODES:
        return False
    if node_type in known_loaders:
        return True
    models = properties.get("models") if isinstance(properties, dict) else None
    if any(isinstance(m, dict) and m.get("directory") in DIFFUSION_DIRS for m in models or []):
        return True
    return bool(LOADER_TYPE.search(node_type)) and any(isinstance(v, str) and MODEL_FILE.search(v) for v in values)


def runs_diffusion_model(path, known_loaders):
    try:
        workflow = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return False
    return any(loads_diffusion_model(*n, known_loaders) for n in template_nodes(workflow))


def plan(binary, path):
    """(exit status, answer or None, error text)."""
    try:
        p = subprocess.run([str(binary), "plan", str(path), "--vram", str(VRAM_GIB), "--json"], capture_output=True,
                           text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, None, f"timed out after {TIMEOUT_S} s"
    except OSError as e:
        return None, None, f"could not run {binary}: {e}"
    try:
        answer = json.loads(p.stdout) if p.stdout.strip() else None
    except json.JSONDecodeError:
        answer = None
    error = p.stderr.strip().replace(str(path), Path(path).name)
    if answer is None and not error:
        error = f"exit {p.returncode} without a JSON answer"
    return p.returncode, answer, error


def family_guess(file_name):
    """The family a file name suggests, for grouping: its stem without precision tokens, first two parts."""
    stem = MODEL_FILE.sub("", Path(file_name or "").name).lower()
    stem = PRECISION_TOKENS.sub("", stem)
    parts = [p for p in re.split(r"[_\-\s]+", stem) if p]
    return "_".join(parts[:2]) or "(no file)"


def judge(rc, answer, error):
    """(estimated, reason, group): why a template that runs a diffusion model is or is not estimated."""
    if answer is None:
        reason = error or f"exit {rc}"
        return False, reason, "CLI gave no answer"
    wf = answer.get("workflow") or {}
    unknown = [l for l in wf.get("loaders") or [] if l.get("role") in DIFFUSION_ROLES and not l.get("model")]
    if unknown:
        names = sorted({l.get("file") or "?" for l in unknown})
        files = ", ".join(names)
        mixed = answer.get("verdict") != "unknown"
        return False, (f"diffusion model not in the catalog: {files}" +
                       (" (the verdict counts only the other models)" if mixed else "")), \
            "unknown diffusion model: " + family_guess(names[0])
    if answer.get("verdict") == "unknown":
        reason = answer.get("reason") or "verdict unknown"
        if "no diffusion model loader runs" in reason:
            group = "no loader Headroom reads runs (a loader of another pack)"
        elif "sampled latent" in reason:
            group = "latent size from a node Headroom cannot size"
        else:
            # The core says what withheld the verdict and at which node type: a group per cause, whole words.
            nc = answer.get("not_covered") or {}
            group = "verdict unknown: " + (f"{nc.get('kind', '?')} at {nc['node_type']}" if nc.get("node_type")
                                           else nc.get("kind") or reason)
        return False, reason, group
    if not wf.get("size_known"):
        return False, "latent size assumed, not read from the template", "latent size assumed"
    return True, None, None


def survey(binary=None, jobs=2):
    folder = tt.templates_dir()
    if folder is None:
        raise SystemExit(f"{tt.PACKAGE} is not installed (pip install -r requirements-dev.txt)")
    binary = binary or tt.headroom_binary()
    if not Path(binary).exists():
        raise SystemExit(f"no headroom binary at {binary} (build it, or set HEADROOM_BUILD_DIR)")
    known_loaders = diffusion_loader_types()
    local = tt.local_templates(folder)
    diffusion = [p for p in local if runs_diffusion_model(p, known_loaders)]
    with ThreadPoolExecutor(max(1, jobs)) as ex:
        answers = list(ex.map(lambda p: plan(binary, p), diffusion))
    estimated, rest = [], []
    for path, (rc, answer, error) in zip(diffusion, answers):
        ok, reason, group = judge(rc, answer, error)
        if ok:
            estimated.append(path.stem)
        else:
            rest.append({"template": path.stem, "group": group, "reason": reason})
    runs = len(diffusion)
    return {
        "package": tt.DISTRIBUTION, "package_version": tt.installed_version(), "vram_gib": VRAM_GIB,
        "local": len(local), "runs_diffusion_model": runs, "estimated": len(estimated),
        "percent": round(100.0 * len(estimated) / runs, 1) if runs else 0.0,
        "estimated_templates": estimated, "not_estimated": rest,
        "no_diffusion_model": sorted(p.stem for p in local if p not in diffusion),
    }


def print_text(result):
    print(f"{result['package']} {result['package_version']}: {result['local']} local templates, "
          f"{result['runs_diffusion_model']} run a diffusion model")
    print(f"estimated with their own models and shapes: {result['estimated']} of {result['runs_diffusion_model']} "
          f"({result['percent']} %)")
    groups = {}
    for r in result["not_estimated"]:
        groups.setdefault(r["group"], []).append(r)
    print(f"\nnot estimated: {len(result['not_estimated'])}")
    for group, rows in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
        print(f"\n  {group} ({len(rows)})")
        for r in rows:
            print(f"    {r['template']}: {r['reason']}")
    print(f"\nrun no diffusion model ({len(result['no_diffusion_model'])}): " + ", ".join(result["no_diffusion_model"]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--write", action="store_true", help=f"rewrite {COVERAGE.relative_to(REPO)} (the test's floor)")
    ap.add_argument("--jobs", type=int, default=2, help="templates planned at once (default 2)")
    args = ap.parse_args(argv)
    if tt.installed_version() != tt.pinned_version():
        print(f"warning: {tt.DISTRIBUTION} {tt.installed_version()} is installed, requirements-dev.txt pins "
              f"{tt.pinned_version()}", file=sys.stderr)
    result = survey(jobs=args.jobs)
    if args.write:
        COVERAGE.write_text(json.dumps({
            "_about": "written by scripts/templates_coverage.py --write: the templates of the pinned package that "
                      "Headroom estimates with their own models and shapes; tests/python/test_templates_coverage.py "
                      "fails when one of them is no longer estimated or the count falls",
            "package_version": result["package_version"], "local": result["local"],
            "runs_diffusion_model": result["runs_diffusion_model"], "estimated": result["estimated"],
            "estimated_templates": result["estimated_templates"]}, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print_text(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
