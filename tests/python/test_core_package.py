"""The headroom_core package and the pack share one ctypes client (issue 25): the wheel installs the pack's
nodes/native/core_capi.py (and its library check, binary_check.py) beside the package's __init__.py,
which adds only `call`. Here the package is laid out as the wheel's CMake install rule lays it out (the
files that rule names, read from CMakeLists.txt) around this build's library, and run in another Python
the wheel supports, without the zig build test_core_wheel.py needs."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUILD_DIR, REPO, core_built

PYENV = Path.home() / ".pyenv" / "versions"


def installed_files():
    """The files CMakeLists.txt installs into the headroom_core package of the wheel."""
    text = (REPO / "CMakeLists.txt").read_text()
    rules = re.findall(r"install\(FILES(.*?)DESTINATION headroom_core\)", text, re.S)
    assert len(rules) == 1, rules
    return [REPO / p for p in re.findall(r"\$\{CMAKE_SOURCE_DIR\}/(\S+)", rules[0])]


def oldest_python():
    """The oldest Python the wheel supports (requires-python >= 3.8) found here, else this one."""
    for d in sorted(PYENV.glob("3.8.*")) + sorted(PYENV.glob("3.9.*")):
        if (d / "bin" / "python3").exists():
            return str(d / "bin" / "python3")
    return sys.executable


@pytest.fixture
def package(tmp_path):
    if not core_built():
        pytest.skip("the core library is not built")
    pkg = tmp_path / "site" / "headroom_core"
    pkg.mkdir(parents=True)
    for f in installed_files():
        shutil.copy(f, pkg / f.name)
    lib = next((BUILD_DIR / "capi").glob("libheadroom_core.so"))
    shutil.copy(lib, pkg / lib.name)
    return pkg


def run_in(package, code):
    r = subprocess.run([oldest_python(), "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=str(package.parent), env={"PATH": "/usr/bin:/bin"})
    return r


def test_the_wheel_installs_the_packs_client_and_no_second_one():
    names = [f.name for f in installed_files()]
    assert names[0] == "__init__.py" and "core_capi.py" in names and "binary_check.py" in names, names
    init = (REPO / "native" / "capi" / "python" / "headroom_core" / "__init__.py").read_text()
    # The package's own code loads no library itself: the client is core_capi's.
    assert "ctypes" not in init.split('"""', 2)[2] and "CDLL" not in init


def test_the_package_answers_through_the_packs_client(package):
    r = run_in(package, "import json, headroom_core\n"
                        "out = {'n': len(headroom_core.call('catalog')['models']), 'v': headroom_core.version(),\n"
                        "       'client': headroom_core.core_capi.__file__}\n"
                        "try:\n"
                        "    headroom_core.call('estimate', {'model': 'flux1-dev', 'width': -5})\n"
                        "except ValueError as e:\n"
                        "    out['error'] = [str(e), e.field, e.kind, type(e) is headroom_core.HeadroomInputError]\n"
                        "print(json.dumps(out))")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["n"] > 10 and got["v"]
    assert Path(got["client"]).parent == package
    message, field, kind, same_class = got["error"]
    assert field == "width" and kind == "input" and "width" in message and same_class


def test_a_library_cut_short_is_refused_not_mapped(package):
    """The wheel gets the pack's check: a truncated library raises, where mapping it would kill Python."""
    lib = package / "libheadroom_core.so"
    lib.write_bytes(lib.read_bytes()[:len(lib.read_bytes()) // 3])
    r = run_in(package, "import headroom_core\n"
                        "try:\n"
                        "    headroom_core.call('catalog')\n"
                        "except Exception as e:\n"
                        "    print(type(e).__name__, e)\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Damaged") and "past the file's end" in r.stdout, r.stdout
