"""Hostile request texts into the real `_headroom_core` (issue 13, items 2, 4 and 10): what the routes
hand the core after their own checks. Each must be a ValueError naming the problem, quickly, never a
crash or an internal error. Before: a workflow string with a deep id segfaulted the process, 1e400
raised the core's internal error, and a 7 kB fan-out workflow ran for minutes."""
import json
import time

import pytest

from conftest import core_built, native_core_or_none

pytestmark = pytest.mark.skipif(not core_built(), reason="_headroom_core is not built")
TIME_LIMIT_S = 5


def fan_out(depth):
    sgs = []
    for k in range(depth):
        t = f"sg{k + 1}" if k + 1 < depth else "UNETLoader"
        sgs.append({"id": f"sg{k}", "links": [],
                    "nodes": [{"id": i + 1, "type": t, "widgets_values": ["flux1-dev.safetensors", "default"]}
                              for i in range(10)]})
    return {"nodes": [{"id": 1, "type": "sg0"}], "links": [], "definitions": {"subgraphs": sgs}}


CASES = {
    "deep request": '{"workflow": ' + "[" * 100000 + "]" * 100000 + "}",
    "deep id in a workflow string": json.dumps(
        {"workflow": '{"nodes":[{"id":' + "[" * 100000 + "]" * 100000 + ',"type":"X"}]}', "gpu": "4090"}),
    "1e400 in the request": '{"workflow": {"nodes": []}, "vram_bytes": 1e400}',
    "Infinity in the request": '{"workflow": {"nodes": []}, "vram_bytes": Infinity}',
    "1e400 in a workflow string": json.dumps({"workflow": '{"nodes":[{"id":1e400,"type":"X"}]}'}),
    "fan-out to 10^7 nodes": json.dumps({"workflow": fan_out(7), "gpu": "4090"}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_request_is_a_clean_input_error(name):
    core = native_core_or_none()
    start = time.monotonic()
    with pytest.raises(ValueError) as e:
        core.plan(CASES[name])
    assert time.monotonic() - start < TIME_LIMIT_S
    text = str(e.value)
    assert "internal" not in text.lower()
    assert any(s in text for s in ("nests deeper", "not valid JSON", "more than 20000 nodes")), text
