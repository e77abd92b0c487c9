"""install.py and ComfyUI's start-up (issue 13, item 18): the build uses every CPU the RAM allows, the
sources it compiles print no warnings, and the start-up log says whether the native parts loaded."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import BUILD_DIR, BUILD_PYTHON, REPO, install_module

GIB = 1024 ** 3


@pytest.mark.parametrize("cpus,ram,jobs", [(2, 8 * GIB, 2), (1, 8 * GIB, 1), (16, 8 * GIB, 4), (16, 64 * GIB, 16),
                                           (8, 1 * GIB, 1)])
def test_build_jobs_use_every_cpu_the_ram_allows(cpus, ram, jobs, monkeypatch):
    monkeypatch.delenv("HEADROOM_BUILD_JOBS", raising=False)
    assert install_module().build_jobs(cpus=cpus, ram=ram) == jobs


def test_build_jobs_override(monkeypatch):
    monkeypatch.setenv("HEADROOM_BUILD_JOBS", "3")
    assert install_module().build_jobs(cpus=2, ram=8 * GIB) == 3


def test_this_machine_builds_with_more_than_one_job_when_it_can(monkeypatch):
    monkeypatch.delenv("HEADROOM_BUILD_JOBS", raising=False)
    install = install_module()
    if install.usable_cpus() < 2 or (install.ram_bytes() or 0) < 4 * GIB:
        pytest.skip("one CPU or little RAM here")
    assert install.build_jobs() >= 2


def _compiler():
    return shutil.which("g++") or shutil.which("clang++")


def _nlohmann_include():
    for candidate in ("/usr/include", "/usr/local/include"):
        if os.path.exists(os.path.join(candidate, "nlohmann", "json.hpp")):
            return candidate
    return None


@pytest.mark.skipif(_compiler() is None or _nlohmann_include() is None, reason="no C++ compiler or nlohmann_json")
def test_oom_sources_compile_without_warnings():
    """install.py printed 54 -Wmissing-field-initializers warnings, all from native/core/oom/oom_diagnose.cpp;
    the core's own flags (-Wall -Wextra) must give none."""
    sources = sorted((REPO / "native" / "core" / "oom").glob("*.cpp"))
    assert sources, "no OOM sources under native/core/oom"
    out = subprocess.run([_compiler(), "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-I", str(REPO / "native"),
                          "-I", _nlohmann_include(), *map(str, sources)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "warning:" not in out.stderr, out.stderr[-3000:]


STARTUP = textwrap.dedent(f"""
    import importlib.util, logging, sys
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stdout)
    from server import PromptServer
    spec = importlib.util.spec_from_file_location("headroom_pack", {str(REPO / '__init__.py')!r},
                                                  submodule_search_locations=[{str(REPO)!r}])
    pack = importlib.util.module_from_spec(spec); sys.modules["headroom_pack"] = pack
    spec.loader.exec_module(pack)
""")


def start_comfy_like(tmp_path, build_dir):
    server_dir = tmp_path / "fake_server"
    server_dir.mkdir(exist_ok=True)
    (server_dir / "server.py").write_text(textwrap.dedent("""
        from aiohttp import web
        class PromptServer:
            instance = None
            def __init__(self):
                self.routes = web.RouteTableDef(); PromptServer.instance = self
            def add_on_prompt_handler(self, h):
                pass
        PromptServer()
    """))
    env = {**os.environ, "HEADROOM_BUILD_DIR": str(build_dir), "PYTHONPATH": str(server_dir)}
    out = subprocess.run([sys.executable, "-c", STARTUP], env=env, capture_output=True, text=True, timeout=120,
                         cwd="/")
    assert out.returncode == 0, out.stderr[-2000:]
    return [line for line in out.stdout.splitlines() if "Headroom:" in line]


def test_startup_log_says_when_native_parts_are_missing(tmp_path):
    lines = start_comfy_like(tmp_path, tmp_path / "no-build")
    core = [line for line in lines if "native core" in line]
    decoders = [line for line in lines if "native decoders" in line]
    assert core and core[0].startswith("WARNING") and "not loaded" in core[0] and "install.py" in core[0]
    assert decoders and "not loaded" in decoders[0]


@pytest.mark.skipif(not (BUILD_DIR / "capi" / "libheadroom_core.so").is_file(), reason="the core library is not built")
def test_startup_log_says_where_the_native_parts_loaded_from(tmp_path):
    build = tmp_path / "build" / "python"
    capi = tmp_path / "build" / "capi"
    build.mkdir(parents=True)
    capi.mkdir()
    for module in BUILD_PYTHON.glob("_headroom_*"):
        shutil.copy(module, build / module.name)
    for name in ("libheadroom_core.so", "libheadroom_core.so.record"):
        shutil.copy(BUILD_DIR / "capi" / name, capi)
    lines = start_comfy_like(tmp_path, tmp_path / "build")
    core = [line for line in lines if "native core" in line]
    assert core and core[0].startswith("INFO") and "loaded from" in core[0] and str(capi) in core[0]
    assert "version " in core[0]
    if list(BUILD_PYTHON.glob("_headroom_torch.*")):
        decoders = [line for line in lines if "native decoders" in line]
        assert decoders and decoders[0].startswith("INFO") and "loaded from" in decoders[0]
