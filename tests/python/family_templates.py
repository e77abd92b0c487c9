"""Shared by the family tests of issue 26: the pinned template package's folder, the headroom binary,
the skip marks when either is missing, and `plan(template)`, the CLI's --json answer for one template."""
import importlib.util
import json
import subprocess

import pytest

from conftest import REPO

_spec = importlib.util.spec_from_file_location("templates_table", REPO / "scripts" / "templates_table.py")
table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(table)
FOLDER = table.templates_dir()
BINARY = table.headroom_binary()
SKIP = [pytest.mark.skipif(FOLDER is None, reason=f"{table.DISTRIBUTION} is not installed"),
        pytest.mark.skipif(not BINARY.is_file(), reason=f"{BINARY} is not built")]


def plan(name, vram=24):
    p = subprocess.run([str(BINARY), "plan", str(FOLDER / f"{name}.json"), "--vram", str(vram), "--json"],
                       capture_output=True, text=True, timeout=120)
    return json.loads(p.stdout)
