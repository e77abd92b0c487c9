"""The nodes on the C library headroom_core when the pybind11 module is absent (issue 12, item 1): the
same answers through ctypes, bad input still a ValueError naming the field, a damaged library refused
before it is loaded. Each case runs in a fresh Python whose build folder holds only the C library."""
import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import BUILD_DIR, REPO, native_core_or_none
from test_pack_import import LOAD

LIBRARY = BUILD_DIR / "capi" / "libheadroom_core.so"
pytestmark = pytest.mark.skipif(not LIBRARY.is_file() or not sys.platform.startswith("linux"),
                                reason="build/capi/libheadroom_core.so is not built")

REQUEST = {"model": "flux1-dev", "width": 1024, "height": 1024, "gpu": "4090"}


def run_with_build(build, code):
    env = {"HEADROOM_BUILD_DIR": str(build), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", LOAD + textwrap.dedent(code)], env=env, capture_output=True,
                         text=True, timeout=120, cwd="/")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def only_the_c_library(tmp_path, data=None):
    (tmp_path / "capi").mkdir()
    target = tmp_path / "capi" / LIBRARY.name
    if data is None:
        shutil.copy(LIBRARY, target)
    else:
        target.write_bytes(data)
    return tmp_path


def test_the_nodes_answer_through_the_c_library(tmp_path):
    build = only_the_c_library(tmp_path)
    got = run_with_build(build, f"""
        from headroom_pack.nodes import native_loader
        core = native_loader.core()
        est = json.loads(core.estimate(json.dumps({REQUEST!r})))
        try:
            core.estimate(json.dumps({{"model": "flux1-dev", "width": -3}}))
            bad = None
        except ValueError as e:
            bad = str(e)
        lines = [t for _, t in native_loader.startup_lines()]
        print(json.dumps({{"type": type(core).__name__, "est": est, "bad": bad, "lines": lines,
                           "has_pybind": "_headroom_core" in sys.modules}}))
    """)
    assert got["type"] == "CapiCore" and not got["has_pybind"]
    assert got["bad"] and got["bad"].startswith("width")
    assert any("estimator" in line and "loaded from" in line and "libheadroom_core" in line for line in got["lines"])
    pybind = native_core_or_none()
    if pybind is not None:  # the same core behind both doors
        assert got["est"] == json.loads(pybind.estimate(json.dumps(REQUEST)))


def test_a_truncated_c_library_is_refused_not_loaded(tmp_path):
    data = LIBRARY.read_bytes()
    build = only_the_c_library(tmp_path, data[: len(data) // 2])
    got = run_with_build(build, """
        from headroom_pack.nodes import native_loader
        try:
            native_loader.core(); cause = None
        except native_loader.NativeUnavailable as e:
            cause = str(e)
        print(json.dumps({"cause": cause}))
    """)
    assert got["cause"] and "libheadroom_core" in got["cause"] and "install.py" in got["cause"]
