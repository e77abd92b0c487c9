#!/usr/bin/env python3
"""The official ComfyUI templates (PyPI comfyui-workflow-templates-json, pinned in requirements-dev.txt) as
a corpus: how `headroom plan` reads each local template (its models per loader, its shape, its verdict at
12 and 24 GB, or the exact reason it is not covered).

  scripts/templates_table.py            rewrite tests/data/templates/expected.json and docs/templates.md
  scripts/templates_table.py --check    compare with them; exit 1 and list the templates that read differently

tests/python/test_templates_corpus.py holds the binary to the table, so any change in how a template is
read shows up in review as a change of this table. The headroom binary is $HEADROOM_BUILD_DIR/headroom
(build/headroom by default)."""
import argparse
import copy
import importlib.metadata
import importlib.resources
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "comfyui_workflow_templates_json"
DISTRIBUTION = "comfyui-workflow-templates-json"
EXPECTED = REPO / "tests" / "data" / "templates" / "expected.json"
DOC = REPO / "docs" / "templates.md"
CARDS_GIB = (12, 24)
# The table of the doc: the families the issue is about, as the template's name or the index's model
# tags spell them (the index is the package's own account of which models a template runs).
FAMILY = re.compile(r"flux|wan", re.IGNORECASE)


def pinned_version():
    for line in (REPO / "requirements-dev.txt").read_text().splitlines():
        m = re.match(re.escape(DISTRIBUTION) + r"==(\S+)", line.strip())
        if m:
            return m.group(1)
    raise SystemExit(f"requirements-dev.txt pins no {DISTRIBUTION}==VERSION")


def templates_dir():
    """The installed package's templates folder; None when the package is not installed."""
    try:
        return Path(str(importlib.resources.files(PACKAGE) / "templates"))
    except ModuleNotFoundError:
        return None


def installed_version():
    return importlib.metadata.version(DISTRIBUTION)


def local_templates(folder):
    """Templates that run on the user's machine: API templates (api_*) call a paid service, index*
    files are the catalogue, not workflows."""
    return sorted(p for p in Path(folder).glob("*.json") if not p.name.startswith(("api_", "index")))


def model_tags(folder):
    tags = {}
    for category in json.loads((Path(folder) / "index.json").read_text()):
        for t in category.get("templates", []):
            tags[t["name"]] = t.get("models", [])
    return tags


def is_flux_or_wan(name, tags):
    return bool(FAMILY.search(name) or any(FAMILY.search(m) for m in tags.get(name, [])))


def headroom_binary():
    build = Path(os.environ.get("HEADROOM_BUILD_DIR", REPO / "build"))
    return build / ("headroom.exe" if os.name == "nt" else "headroom")


def plan(binary, path, vram_gib):
    """(exit status, the --json answer or None, stderr)."""
    p = subprocess.run([str(binary), "plan", str(path), "--vram", str(vram_gib), "--json"], capture_output=True,
                       text=True, timeout=120)
    try:
        answer = json.loads(p.stdout) if p.stdout.strip() else None
    except json.JSONDecodeError:
        answer = None
    # The table must not depend on where the checkout lies (CI clones elsewhere): the file's folder is cut.
    return p.returncode, answer, p.stderr.strip().replace(str(path), path.name)


def _component(c):
    if not c:
        return None
    name = c.get("model") or f"unknown ({c.get('file') or 'no file'})"
    return name + (f" {c['precision']}" if c.get("precision") else "")


def reading(rc, answer, stderr):
    """What a template's answer says about how it was read: no byte figures beyond the verdict's peak, so
    the table changes when the reading changes, not on every tuning of the memory model."""
    if answer is None:
        return {"exit": rc, "error": stderr}
    wf = answer.get("workflow") or {}
    job = answer.get("job") or {}
    row = {
        "exit": rc,
        "verdict": answer.get("verdict"),
        "loaders": [{"node": l["node_id"], "type": l["type"], "role": l["role"], "file": l["file"],
                     "model": l["model"], "precision": l["precision"]} for l in wf.get("loaders", [])],
        "latent_node": wf.get("latent_node"),
        "size_known": wf.get("size_known"),
    }
    if job:
        row["shape"] = {k: job[k] for k in ("width", "height", "frames", "batch")}
        row["job"] = {"diffusion": _component(job.get("diffusion")),
                      "text_encoders": [_component(t) for t in job.get("text_encoders", [])],
                      "vae": _component(job.get("vae")), "clip_vision": _component(job.get("clip_vision")),
                      "cfg": job.get("cfg"), "reference_images": job.get("reference_images"),
                      "decode_mode": job.get("decode_mode")}
    if answer.get("reason"):
        row["reason"] = answer["reason"]
    if answer.get("not_covered"):
        row["not_covered"] = answer["not_covered"]
    return row


def read_template(binary, path):
    """One template's row: its reading at the first card and the verdict at each card."""
    row, verdicts = None, {}
    for gib in CARDS_GIB:
        rc, answer, stderr = plan(binary, path, gib)
        if row is None:
            row = reading(rc, answer, stderr)
            row.pop("verdict", None)
        verdicts[f"{gib}GB"] = {"exit": rc, "verdict": answer.get("verdict") if answer else None,
                                "peak_bytes": answer.get("peak_bytes") if answer else None}
    row.pop("exit", None)
    row["at"] = verdicts
    return row


def _reroute_scope(scope, links_are_arrays):
    """Puts a Reroute node on every link between two nodes of one scope (the top level or a subgraph), as a
    user does to tidy a graph: ComfyUI's frontend drops Reroutes when it queues the prompt, so the run and
    its memory are the same."""
    nodes = scope.get("nodes") or []
    links = scope.get("links") or []
    by_id = {n.get("id"): n for n in nodes if isinstance(n, dict)}
    next_node = max([n for n in by_id if isinstance(n, int)] + [0]) + 1
    next_link = max([(l[0] if links_are_arrays else l.get("id")) for l in links
                     if isinstance(l[0] if links_are_arrays else l.get("id"), int)] + [0]) + 1
    added_nodes, added_links = [], []
    for link in links:
        lid, origin, target, target_slot, kind = ((link[0], link[1], link[3], link[4], link[5] if len(link) > 5 else "*")
                                                 if links_are_arrays else
                                                 (link["id"], link["origin_id"], link["target_id"],
                                                  link["target_slot"], link.get("type", "*")))
        # Links to the subgraph's input/output panels (-10/-20) bind the instance; they are not drawn edges.
        if origin not in by_id or target not in by_id:
            continue
        target_input = next((i for i in by_id[target].get("inputs") or [] if i.get("link") == lid), None)
        if target_input is None:
            continue
        reroute, out_link = next_node, next_link
        next_node += 1
        next_link += 1
        added_nodes.append({"id": reroute, "type": "Reroute", "pos": [0, 0], "size": [75, 26], "flags": {},
                            "order": 0, "mode": 0, "inputs": [{"name": "", "type": "*", "link": lid}],
                            "outputs": [{"name": "", "type": kind, "links": [out_link]}],
                            "properties": {"showOutputText": False, "horizontal": False}})
        if links_are_arrays:
            link[3], link[4] = reroute, 0
            added_links.append([out_link, reroute, 0, target, target_slot, kind])
        else:
            link["target_id"], link["target_slot"] = reroute, 0
            added_links.append({"id": out_link, "origin_id": reroute, "origin_slot": 0, "target_id": target,
                                "target_slot": target_slot, "type": kind})
        target_input["link"] = out_link
    nodes.extend(added_nodes)
    links.extend(added_links)
    return len(added_nodes)


def with_reroutes(workflow):
    """A copy of a UI-format workflow with a Reroute on each link, subgraphs included; (copy, count)."""
    wf = copy.deepcopy(workflow)
    count = 0
    if isinstance(wf.get("nodes"), list) and isinstance(wf.get("links"), list):
        count += _reroute_scope(wf, links_are_arrays=True)
    for sg in (wf.get("definitions") or {}).get("subgraphs") or []:
        if isinstance(sg.get("links"), list):
            count += _reroute_scope(sg, links_are_arrays=False)
    return wf, count


def latent_size_widgets():
    """comfy_nodes.json's latent nodes: type -> the widgets that give the size (width, height, length, batch)."""
    nodes = json.loads((REPO / "native" / "data" / "comfy_nodes.json").read_text())["nodes"]
    return {t: [w for w in n["latent"].values() if w] for t, n in nodes.items() if "latent" in n}


def _primitive_scope(scope, links_are_arrays, size_widgets):
    """Moves each size widget a latent node stores into a PrimitiveInt linked to it, as a user does to share
    one width between nodes: the value that runs is the same."""
    nodes = scope.get("nodes") or []
    links = scope.get("links") or []
    ids = [n.get("id") for n in nodes if isinstance(n, dict) and isinstance(n.get("id"), int)]
    next_node = max(ids + [0]) + 1
    next_link = max([(l[0] if links_are_arrays else l.get("id")) for l in links
                     if isinstance(l[0] if links_are_arrays else l.get("id"), int)] + [0]) + 1
    names = json.loads((REPO / "native" / "data" / "comfy_nodes.json").read_text())["nodes"]
    added = []
    for node in nodes:
        widgets = size_widgets.get(node.get("type"))
        values = node.get("widgets_values")
        if not widgets or not isinstance(values, list):
            continue
        order = names[node["type"]].get("widgets", [])
        inputs = node.setdefault("inputs", [])
        for w in widgets:
            if w not in order or order.index(w) >= len(values) or not isinstance(values[order.index(w)], int):
                continue
            existing = next((i for i in inputs if i.get("name") == w), None)
            if existing is not None and existing.get("link") is not None:
                continue  # already linked: the value comes from elsewhere
            link = next_link
            next_link += 1
            added.append({"id": next_node, "type": "PrimitiveInt", "pos": [0, 0], "size": [210, 82], "flags": {},
                          "order": 0, "mode": 0, "inputs": [],
                          "outputs": [{"name": "INT", "type": "INT", "links": [link]}],
                          "widgets_values": [values[order.index(w)], "fixed"]})
            slot = inputs.index(existing) if existing is not None else len(inputs)
            if links_are_arrays:
                links.append([link, next_node, 0, node["id"], slot, "INT"])
            else:
                links.append({"id": link, "origin_id": next_node, "origin_slot": 0, "target_id": node["id"],
                              "target_slot": slot, "type": "INT"})
            next_node += 1
            if existing is not None:
                existing["link"] = link
            else:
                inputs.append({"name": w, "type": "INT", "widget": {"name": w}, "link": link})
    nodes.extend(added)
    return len(added)


def with_primitives(workflow):
    """A copy of a UI-format workflow whose latent sizes come from PrimitiveInt nodes; (copy, count)."""
    wf = copy.deepcopy(workflow)
    widgets = latent_size_widgets()
    count = 0
    if isinstance(wf.get("nodes"), list) and isinstance(wf.get("links"), list):
        count += _primitive_scope(wf, True, widgets)
    for sg in (wf.get("definitions") or {}).get("subgraphs") or []:
        if isinstance(sg.get("links"), list):
            count += _primitive_scope(sg, False, widgets)
    return wf, count


def plan_changed(binary, path, vram_gib, change):
    """plan of the template and of change(template): (answer of the original, answer of the copy, count)."""
    workflow = json.loads(Path(path).read_text())
    changed, count = change(workflow)
    with tempfile.TemporaryDirectory() as tmp:
        copy_path = Path(tmp) / Path(path).name
        copy_path.write_text(json.dumps(changed))
        return plan(binary, path, vram_gib), plan(binary, copy_path, vram_gib), count


def table(binary, folder):
    return {p.stem: read_template(binary, p) for p in local_templates(folder)}


def _verdict_cell(v):
    if v["verdict"] is None:
        return f"error (exit {v['exit']})"
    # An unknown verdict's stages are for an assumed size: their peak is no answer, so it is not shown.
    if v["peak_bytes"] and v["verdict"] != "unknown":
        return f"{v['verdict']} ({v['peak_bytes'] / 2**30:.1f} GiB)"
    return v["verdict"]


def _loader_cell(loaders):
    parts = []
    for l in loaders:
        model = l["model"] or "unknown"
        parts.append(f"{l['role']}: {model}" + (f" {l['precision']}" if l["precision"] else "") + f" (`{l['file']}`)")
    return "<br>".join(parts) or "none"


def _shape_cell(row):
    s = row.get("shape")
    if not s:
        return "-"
    text = f"{s['width']}x{s['height']}" + (f", {s['frames']} frames" if s["frames"] > 1 else "") + \
        (f", batch {s['batch']}" if s["batch"] > 1 else "")
    return text if row.get("size_known") else f"unknown (assumed {text})"


def doc(rows, tags, version):
    cards = " | ".join(f"{g} GB" for g in CARDS_GIB)
    out = [
        "# The official Flux and Wan templates, as Headroom reads them",
        "",
        f"Generated by `scripts/templates_table.py` from {DISTRIBUTION} {version} (pinned in requirements-dev.txt);",
        "do not edit by hand. Every local template of the package is in tests/data/templates/expected.json, and",
        "tests/python/test_templates_corpus.py holds the build to it. A verdict of `unknown` comes with its reason",
        "(the last column); the figure after a verdict is the predicted peak VRAM.",
        "",
        f"| template | model per loader | shape | {cards} | why not covered |",
        "|---|---|---|" + "---|" * len(CARDS_GIB) + "---|",
    ]
    for name, row in rows.items():
        if not is_flux_or_wan(name, tags):
            continue
        verdicts = " | ".join(_verdict_cell(row["at"][f"{g}GB"]) for g in CARDS_GIB)
        reason = (row.get("reason") or row.get("error") or "").replace("|", "\\|")
        out.append(f"| {name} | {_loader_cell(row.get('loaders', []))} | {_shape_cell(row)} | {verdicts} | {reason} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the stored table instead of rewriting it")
    ap.add_argument("--templates", help="a templates folder (default: the installed package's)")
    args = ap.parse_args()
    folder = Path(args.templates) if args.templates else templates_dir()
    if folder is None:
        raise SystemExit(f"{DISTRIBUTION} is not installed: scripts/deps.sh installs the version requirements-dev.txt pins")
    version = pinned_version()
    if not args.templates and installed_version() != version:
        raise SystemExit(f"{DISTRIBUTION} {installed_version()} is installed, requirements-dev.txt pins {version}")
    binary = headroom_binary()
    if not binary.is_file():
        raise SystemExit(f"{binary} is not built (cmake --build build --target headroom)")
    rows = table(binary, folder)
    if args.check:
        stored = json.loads(EXPECTED.read_text())["templates"]
        changed = sorted(n for n in set(rows) | set(stored) if rows.get(n) != stored.get(n))
        for n in changed:
            print(f"{n}: reads differently from tests/data/templates/expected.json")
        return 1 if changed else 0
    EXPECTED.parent.mkdir(parents=True, exist_ok=True)
    EXPECTED.write_text(json.dumps({"package": f"{DISTRIBUTION}=={version}", "templates": rows}, indent=1) + "\n")
    DOC.write_text(doc(rows, model_tags(folder), version))
    print(f"{len(rows)} templates -> {EXPECTED.relative_to(REPO)}, {DOC.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
