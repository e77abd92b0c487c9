"""The nodes on the C library headroom_core (issue 12, item 1): answers through ctypes equal to the CLI's
for the same request, bad input a ValueError naming the field, a damaged library refused before it is
loaded. Each case runs in a fresh Python whose build folder holds only the C library."""
import json
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD_DIR
from test_pack_import import run

LIBRARY = BUILD_DIR / "capi" / "libheadroom_core.so"
pytestmark = pytest.mark.skipif(not LIBRARY.is_file() or not sys.platform.startswith("linux"),
                                reason="build/capi/libheadroom_core.so is not built")

REQUEST = {"model": "flux1-dev", "width": 1024, "height": 1024, "gpu": "4090"}


def only_the_c_library(tmp_path, data=None):
    """A build folder with the C library and the record its build wrote (of the whole file)."""
    (tmp_path / "capi").mkdir()
    target = tmp_path / "capi" / LIBRARY.name
    if data is None:
        shutil.copy(LIBRARY, target)
    else:
        target.write_bytes(data)
    shutil.copy(str(LIBRARY) + ".record", str(target) + ".record")
    return tmp_path


def test_the_nodes_answer_through_the_c_library(tmp_path):
    build = only_the_c_library(tmp_path)
    got = run(build_dir=build, timeout=120, code=f"""
        from headroom_pack.nodes.native import native_loader
        core = native_loader.core()
        est = json.loads(core.estimate(json.dumps({REQUEST!r})))
        try:
            core.estimate(json.dumps({{"model": "flux1-dev", "width": -3}}))
            bad = None
        except ValueError as e:
            bad = str(e)
        lines = [t for _, t in native_loader.startup_lines()]
        print(json.dumps({{"type": type(core).__name__, "est": est, "bad": bad, "lines": lines}}))
    """)
    assert got["type"] == "CapiCore"
    assert got["bad"] and got["bad"].startswith("width")
    assert any("estimator" in line and "loaded from" in line and "libheadroom_core" in line for line in got["lines"])
    cli = BUILD_DIR / "headroom"
    if cli.is_file():  # the same core behind both doors, with the same runtime defaults (no flag given)
        out = subprocess.run([str(cli), "estimate", "--model", REQUEST["model"], "--width", "1024", "--height", "1024",
                              "--gpu", REQUEST["gpu"], "--json"],
                             capture_output=True, text=True, timeout=60, check=True)
        assert got["est"] == json.loads(out.stdout)


def test_a_truncated_c_library_is_refused_not_loaded(tmp_path):
    data = LIBRARY.read_bytes()
    build = only_the_c_library(tmp_path, data[: len(data) // 2])
    got = run(build_dir=build, timeout=120, code="""
        from headroom_pack.nodes.native import native_loader
        try:
            native_loader.core(); cause = None
        except native_loader.NativeUnavailable as e:
            cause = str(e)
        print(json.dumps({"cause": cause}))
    """)
    assert got["cause"] and "libheadroom_core" in got["cause"] and "install.py" in got["cause"]


def test_request_text_reaches_the_core_whole_or_not_at_all():
    """The text is handed to the core as it is: a NUL (where the C string would end and the core would read
    a valid prefix) is refused first, a lone surrogate arrives as bytes the core's reader refuses by name,
    and a request that is not text is a TypeError, not a silent str()."""
    from conftest import native_core_or_none
    core = native_core_or_none()
    good = json.dumps(REQUEST)
    assert json.loads(core.estimate(good))["peak_bytes"] > 0
    with pytest.raises(ValueError, match="NUL"):
        core.estimate(good + "\x00 trailing")
    with pytest.raises(ValueError, match="^request: not valid JSON"):
        core.estimate('{"model": "flux1-dev", "note": "\udc80"}')
    with pytest.raises(TypeError, match="JSON text"):
        core.estimate(REQUEST)
