"""KJNodes' SetNode/GetNode and Easy-Use's pair carry a link by name; ComfyUI's frontend resolves them when it
queues, so a pair on every MODEL, CLIP, VAE, LATENT and CONDITIONING link of an official template changes
nothing in the estimate (issue 19, item 1). The pairs come from comfy_nodes.json's named_pass_throughs, so a
pack added there is tested too. A getter whose name no setter sets is a workflow the frontend cannot queue."""
import copy
import importlib.util
import json
import tempfile
from pathlib import Path

import pytest

from conftest import REPO

_spec = importlib.util.spec_from_file_location("templates_table", REPO / "scripts" / "templates_table.py")
table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(table)

FOLDER = table.templates_dir()
BINARY = table.headroom_binary()
pytestmark = [
    pytest.mark.skipif(FOLDER is None, reason=f"{table.DISTRIBUTION} is not installed"),
    pytest.mark.skipif(not BINARY.is_file(), reason=f"{BINARY} is not built"),
]
RULES = json.loads((REPO / "native" / "data" / "comfy_nodes.json").read_text())["named_pass_throughs"]
CARRIED = {"MODEL", "CLIP", "VAE", "LATENT", "CONDITIONING"}
# FLUX.1 dev, and Wan 2.2 14B text-to-video with its two samplers (high and low noise); both keep their
# pipeline in a subgraph, so the pairs sit inside one.
TEMPLATES = ["flux_dev_full_text_to_image", "video_wan2_2_14B_t2v"]


def _link_fields(link, arrays):
    """(id, origin, origin slot, target, target slot, type) of a top-level array link or a subgraph's object link."""
    if arrays:
        return link[0], link[1], link[2], link[3], link[4], link[5] if len(link) > 5 else "*"
    return (link["id"], link["origin_id"], link["origin_slot"], link["target_id"], link["target_slot"],
            link.get("type", "*"))


def _pair_scope(scope, arrays, rule):
    """Puts one setter on each output that feeds a carried link and a getter on each such link, as a user
    does to hide long wires; returns the types carried."""
    nodes, links = scope.get("nodes") or [], scope.get("links") or []
    by_id = {n.get("id"): n for n in nodes if isinstance(n, dict)}
    next_node = max([i for i in by_id if isinstance(i, int)] + [0]) + 1
    next_link = max([_link_fields(l, arrays)[0] for l in links] + [0]) + 1
    setters, carried = {}, set()
    for link in list(links):
        lid, origin, slot, target, _, kind = _link_fields(link, arrays)
        if kind not in CARRIED or origin not in by_id or target not in by_id:
            continue  # links from a subgraph's input panel (-10) bind the instance
        name = setters.get((origin, slot))
        if name is None:
            name = setters[(origin, slot)] = f"{kind.lower()}_{origin}_{slot}"
            feed = next_link
            next_link += 1
            nodes.append({"id": next_node, "type": rule["sets"], "mode": 0, "title": f"Set_{name}",
                          "inputs": [{"name": kind, "type": kind, "link": feed}], "outputs": [], "widgets_values": [name]})
            links.append([feed, origin, slot, next_node, 0, kind] if arrays else
                         {"id": feed, "origin_id": origin, "origin_slot": slot, "target_id": next_node, "target_slot": 0,
                          "type": kind})
            next_node += 1
        nodes.append({"id": next_node, "type": rule["gets"], "mode": 0, "title": f"Get_{name}", "inputs": [],
                      "outputs": [{"name": kind, "type": kind, "links": [lid]}], "widgets_values": [name]})
        if arrays:
            link[1], link[2] = next_node, 0
        else:
            link["origin_id"], link["origin_slot"] = next_node, 0
        next_node += 1
        carried.add(kind)
    return carried


def with_pairs(workflow, rule):
    """A copy of a UI-format workflow with a setter/getter pair of `rule` on every carried link; (copy, types)."""
    wf = copy.deepcopy(workflow)
    carried = _pair_scope(wf, True, rule)
    for sg in (wf.get("definitions") or {}).get("subgraphs") or []:
        carried |= _pair_scope(sg, False, rule)
    return wf, carried


def _plan(wf, vram):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "paired.json"
        path.write_text(json.dumps(wf))
        return table.plan(BINARY, path, vram)


def _template(name):
    return json.loads((FOLDER / f"{name}.json").read_text())


def _getters(wf, rule):
    return [n for sg in wf["definitions"]["subgraphs"] for n in sg["nodes"] if n["type"] == rule["gets"]]


@pytest.mark.parametrize("rule", RULES, ids=[r["sets"] for r in RULES])
@pytest.mark.parametrize("name", TEMPLATES)
def test_a_pair_on_every_carried_link_changes_nothing(name, rule):
    paired, carried = with_pairs(_template(name), rule)
    assert carried == CARRIED, f"{name}: no pair put on a {sorted(CARRIED - carried)} link"
    for vram in (12, 24):
        original = table.plan(BINARY, FOLDER / f"{name}.json", vram)
        rc, answer, err = _plan(paired, vram)
        assert original[0] == 0 and original[1]["stages"], f"{name}: the original has no estimate ({original[2]})"
        assert (rc, answer) == original[:2], f"{name} at {vram} GB: the pairs changed the answer ({err})"


def _local_templates():
    return [p.stem for p in table.local_templates(FOLDER)] if FOLDER else []


@pytest.mark.parametrize("name", _local_templates())
def test_a_kjnodes_pair_on_every_carried_link_of_any_template_changes_nothing(name):
    """Every local template, as the Reroute check of test_templates_corpus.py: within one graph both packs
    resolve alike, so the first rule stands for them."""
    workflow = _template(name)
    if not isinstance(workflow, dict) or "nodes" not in workflow:
        pytest.skip(f"{name} is not a UI-format workflow")
    paired, carried = with_pairs(workflow, RULES[0])
    if not carried:
        pytest.skip(f"{name} has no {sorted(CARRIED)} link between two nodes")
    original = table.plan(BINARY, FOLDER / f"{name}.json", 12)
    rc, answer, err = _plan(paired, 12)
    assert (rc, answer) == original[:2], f"{name}: the pairs changed the answer ({err})"


@pytest.mark.parametrize("rule", RULES, ids=[r["sets"] for r in RULES])
def test_a_getter_whose_name_no_setter_sets_is_bad_input_naming_it(rule):
    paired, _ = with_pairs(_template(TEMPLATES[1]), rule)
    getter = next(g for g in _getters(paired, rule) if g["outputs"][0]["type"] == "VAE")
    getter["widgets_values"] = ["vae_renamed"]
    rc, answer, err = _plan(paired, 24)
    assert rc == 2 and answer is None
    assert f"{rule['gets']} #" in err and f":{getter['id']} ('{getter['title']}')" in err, err
    assert f"gets the name 'vae_renamed', which no {rule['sets']} sets" in err, err


@pytest.mark.parametrize("rule", RULES, ids=[r["sets"] for r in RULES])
def test_an_unread_getter_of_a_missing_name_changes_nothing(rule):
    paired, _ = with_pairs(_template(TEMPLATES[0]), rule)
    sg = paired["definitions"]["subgraphs"][0]
    sg["nodes"].append({"id": 9999, "type": rule["gets"], "mode": 0, "title": "Get_nothing", "inputs": [],
                        "outputs": [{"name": "*", "type": "*", "links": []}], "widgets_values": ["nothing"]})
    assert _plan(paired, 24)[:2] == table.plan(BINARY, FOLDER / f"{TEMPLATES[0]}.json", 24)[:2]
