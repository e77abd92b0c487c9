"""Importing the pack: no torch/ComfyUI at import, and a missing, broken or mismatched native build
leaves the pack loadable with nodes that name the cause and the fix. Each case runs in a fresh Python
so nothing imported by other tests hides a problem."""
import json
import subprocess
import sys
import textwrap

from conftest import REPO

LOAD = textwrap.dedent(f"""
    import importlib.util, json, sys
    spec = importlib.util.spec_from_file_location("headroom_pack", {str(REPO / '__init__.py')!r},
                                                  submodule_search_locations=[{str(REPO)!r}])
    pack = importlib.util.module_from_spec(spec); sys.modules["headroom_pack"] = pack
    spec.loader.exec_module(pack)
""")


def run(code, build_dir, extra_path=None, timeout=60, python=sys.executable):
    """Loads the pack in a fresh `python` with HEADROOM_BUILD_DIR=build_dir, runs `code`, returns the JSON
    of its last printed line."""
    env = {"HEADROOM_BUILD_DIR": str(build_dir), "PATH": "/usr/bin:/bin"}
    if extra_path:
        env["PYTHONPATH"] = str(extra_path)
    out = subprocess.run([str(python), "-c", LOAD + textwrap.dedent(code)], env=env, capture_output=True,
                         text=True, timeout=timeout, cwd="/")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_pulls_in_no_torch_comfy_or_native(tmp_path):
    result = run("""
        heavy = [m for m in sys.modules if m.split('.')[0] in ('torch', 'comfy', 'server', 'folder_paths',
                                                                 'nodes', 'headroom_core', '_headroom_torch', 'aiohttp')]
        from headroom_pack.nodes.native import native_loader
        print(json.dumps({"heavy": heavy, "nodes": sorted(pack.NODE_CLASS_MAPPINGS), "web": pack.WEB_DIRECTORY,
                          "loaded": sorted(native_loader._cache)}))
    """, tmp_path)
    assert result["heavy"] == [] and result["loaded"] == []
    assert "HeadroomPreflight" in result["nodes"] and result["web"] == "./web"


NODE_REPORT = """
    sys.modules["headroom_core"] = None  # also hide a headroom_core wheel installed in this Python
    import torch
    latent = {"samples": torch.zeros(1, 16, 4, 4)}
    pre = pack.NODE_CLASS_MAPPINGS["HeadroomPreflight"]().run(latent, budget="12", action="stop",
                                                               prompt={"1": {"class_type": "X", "inputs": {}}})
    from headroom_pack.nodes.native import native_loader
    print(json.dumps({"passthrough": pre["result"][0] is latent, "report": pre["result"][1],
                      "status": native_loader.status()}))
"""


def test_native_missing_pack_loads_and_nodes_explain(tmp_path):
    result = run(NODE_REPORT, tmp_path / "no-build")
    assert result["passthrough"]
    report = result["report"]
    assert "is not installed" in report and "install.py" in report and "torch" in report and "Python" in report
    assert result["status"]["core"]["available"] is False


def test_native_failing_to_import_is_explained(tmp_path):
    """A decoder module that raises at import keeps the import's own words."""
    python = tmp_path / "build" / "python"
    python.mkdir(parents=True)
    (python / "_headroom_torch.py").write_text(
        "raise ImportError('undefined symbol: _ZN3c104cuda9SetDeviceEi')\n")
    result = run("""
        from headroom_pack.nodes.native import native_loader
        try:
            native_loader.torch_ops(); message = None
        except native_loader.NativeUnavailable as e:
            message = str(e)
        print(json.dumps({"message": message, "status": native_loader.status()}))
    """, tmp_path / "build")
    assert "failed to import" in result["message"] and "undefined symbol" in result["message"]
    assert result["status"]["torch"]["available"] is False


def test_native_built_against_other_torch_is_refused(tmp_path):
    python = tmp_path / "build" / "python"
    python.mkdir(parents=True)
    (python / "_headroom_torch.py").write_text("def built_torch_version():\n    return '0.0.1+cu999'\n")
    result = run("""
        import torch
        from headroom_pack.nodes.native import native_loader
        try:
            native_loader.torch_ops(); message = None
        except native_loader.NativeUnavailable as e:
            message = str(e)
        print(json.dumps({"message": message, "torch": torch.__version__}))
    """, tmp_path / "build")
    assert "built against torch 0.0.1+cu999" in result["message"]
    assert f"runs torch {result['torch']}" in result["message"] and "install.py" in result["message"]


def test_registers_routes_and_prompt_handler_with_comfy_server(tmp_path):
    server_dir = tmp_path / "fake_server"
    server_dir.mkdir()
    (server_dir / "server.py").write_text(textwrap.dedent("""
        from aiohttp import web
        class PromptServer:
            instance = None
            def __init__(self):
                self.routes = web.RouteTableDef(); self.handlers = []; PromptServer.instance = self
            def add_on_prompt_handler(self, h):
                self.handlers.append(h)
        PromptServer()
    """))
    result = run("""
        from server import PromptServer
        paths = sorted({r.path for r in PromptServer.instance.routes})
        print(json.dumps({"paths": paths, "handlers": len(PromptServer.instance.handlers)}))
    """, tmp_path / "no-build", extra_path=server_dir)
    assert "/headroom/vram" in result["paths"] and "/headroom/apply-preset" in result["paths"]
    assert result["handlers"] == 1
