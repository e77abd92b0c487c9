"""One catalog cache (issue 25): the core's catalog is parsed once per loaded core by native_loader.catalog()
and every reader of it (routes, auto-fix, the verdict table, the reserve) asks that accessor (the decode
node's GPU sizes come from the core's own GPU lookup, recognise, instead); a new core (a rebuild, a reset) is parsed again."""
import json

import fakes
from conftest import load_pack, natives_installed

load_pack()
from headroom_pack.nodes.comfyui import budget  # noqa: E402
from headroom_pack.nodes.native import native_loader  # noqa: E402
from headroom_pack.nodes.report import verdicts  # noqa: E402
from headroom_pack.nodes.server import autofix, routes  # noqa: E402

GIB = 2**30


class CountingCatalogCore(fakes.FakeCore):
    def __init__(self):
        super().__init__(presets=[{"name": "fit it", "target": "request"}])
        self.catalog_calls = 0

    def catalog(self):
        self.catalog_calls += 1
        out = json.loads(super().catalog())
        out["runtime"] = {budget.RESERVE_CONSTANT: {"value": 5 * 2**20}}
        return json.dumps(out)


def read_everything():
    return (autofix.fit_preset_name(), routes._preset_needs_card("fit it"), budget.core_reserve_bytes(),
            sorted(verdicts.table()))


def test_every_reader_shares_one_parse(monkeypatch):
    monkeypatch.setattr(budget, "_comfy_mm", lambda: None)
    core = CountingCatalogCore()
    with natives_installed(core):
        first = read_everything()
        assert first[:3] == ("fit it", True, 5 * 2**20) and first[3], first
        assert read_everything() == first
        assert core.catalog_calls == 1
        assert native_loader.catalog() is native_loader.catalog()


def test_another_core_is_parsed_again():
    one, two = CountingCatalogCore(), CountingCatalogCore()
    with natives_installed(one):
        native_loader.catalog()
    with natives_installed(two):
        native_loader.catalog()
        native_loader.catalog()
    assert (one.catalog_calls, two.catalog_calls) == (1, 1)


def test_no_core_is_unavailable_and_the_readers_say_unknown(monkeypatch):
    monkeypatch.setattr(budget, "_comfy_mm", lambda: None)
    with natives_installed(core_cause="headroom_core is not installed (test)"):
        try:
            native_loader.catalog()
        except native_loader.NativeUnavailable as e:
            assert "not installed (test)" in str(e)
        else:
            raise AssertionError("catalog() without a core")
        assert budget.gpu_memory_bytes("3060") is None and budget.core_reserve_bytes() == 0
        assert verdicts.table() == {}
