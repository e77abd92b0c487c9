"""The example workflows: UI format, links consistent, Preflight inline on every sampler's latent,
Headroom's decode in place of VAEDecode, and every node type from ComfyUI core or this pack."""
import json
from pathlib import Path

import pytest

from conftest import REPO, core_built, load_pack, native_core_or_none

PACK = load_pack()
WORKFLOWS = sorted((REPO / "workflows").glob("*.json"))
SAMPLERS = {"KSampler", "KSamplerAdvanced"}
# Frontend-only node types (no Python class, never sent to the backend).
FRONTEND_ONLY = {"Note", "MarkdownNote", "PrimitiveNode", "Reroute"}


def core_types(real_workflows: Path):
    """Node types of the official templates (all core ComfyUI nodes, ../shared/real-workflows/INDEX.md)."""
    types = set()
    for f in real_workflows.glob("*.json"):
        types |= {n["type"] for n in json.loads(f.read_text())["nodes"]}
    return types


def test_all_five_are_there():
    names = {p.name for p in WORKFLOWS}
    assert {"flux1_dev_fp8_text_to_image.json", "flux1_schnell_text_to_image.json", "wan2.1_t2v_1.3b.json",
            "wan2.2_ti2v_5b.json", "wan2.2_i2v_14b.json"} <= names


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_is_loadable(path, real_workflows):
    wf = json.loads(path.read_text())
    nodes = {n["id"]: n for n in wf["nodes"]}
    assert wf["last_node_id"] >= max(nodes) and wf["last_link_id"] >= max(l[0] for l in wf["links"])
    known = core_types(real_workflows) | set(PACK.NODE_CLASS_MAPPINGS) | FRONTEND_ONLY
    assert {n["type"] for n in wf["nodes"]} <= known
    assert "VAEDecode" not in {n["type"] for n in wf["nodes"]}
    for lid, o, oslot, t, tslot, typ in wf["links"]:
        assert lid in nodes[o]["outputs"][oslot]["links"], (path.name, lid)
        assert nodes[t]["inputs"][tslot]["link"] == lid, (path.name, lid)
    for n in wf["nodes"]:
        if n["type"] == "HeadroomPreflight":
            budget, action = n["widgets_values"]
            assert budget == "auto" and action in PACK.NODE_CLASS_MAPPINGS["HeadroomPreflight"].INPUT_TYPES()["required"]["action"][0]
            out_links = n["outputs"][0]["links"]
            assert out_links and all(nodes[l[3]]["type"] in SAMPLERS for l in wf["links"] if l[0] in out_links)
        if n["type"] == "HeadroomVAEDecode":
            assert n["widgets_values"][0] in PACK.NODE_CLASS_MAPPINGS["HeadroomVAEDecode"].INPUT_TYPES()["required"]["mode"][0]
    active = [n for n in wf["nodes"] if n.get("mode", 0) == 0]
    assert any(n["type"] == "HeadroomPreflight" for n in active)
    assert any(n["type"] == "HeadroomVAEDecode" for n in active)


@pytest.mark.skipif(not core_built(), reason="the core library is not built")
@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_real_core_plans_each_workflow(path):
    core = native_core_or_none()
    result = json.loads(core.plan(json.dumps({"workflow": json.loads(path.read_text()),
                                                        "vram_bytes": 24 * 2**30})))
    assert result["peak_bytes"] > 0 and result["stages"]
    assert "HeadroomPreflight" not in (result.get("unknown_nodes") or [])
    assert "HeadroomVAEDecode" not in (result.get("unknown_nodes") or [])


def _box(node):
    (x, y), (w, h) = node["pos"], node.get("size", [200, 100])
    return x, y - 30, x + w, y + h  # the frontend draws a ~30 px title bar above pos


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_headroom_nodes_do_not_cover_other_nodes(path):
    nodes = [n for n in json.loads(path.read_text())["nodes"] if isinstance(n.get("pos"), list)]
    for n in nodes:
        if not n["type"].startswith("Headroom"):
            continue
        a = _box(n)
        for m in nodes:
            b = _box(m)
            overlap = m is not n and a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
            assert not overlap, f"{n['type']} {n['id']} covers {m['type']} {m['id']}"
