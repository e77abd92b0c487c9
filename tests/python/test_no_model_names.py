"""Model knowledge lives in native/data only: no catalog model name is spelt as a string literal in the
native code, the Python nodes or the web extension (issue: "model knowledge in one place"). A name in a
comment is allowed; a name between quotes is code deciding something from a name."""
import json
import re
import subprocess

from conftest import REPO

CODE = re.compile(r"\.(cpp|hpp|h|cu|cuh|py|js)$")


def _names():
    catalog = json.loads((REPO / "native" / "data" / "models.json").read_text())
    return [m["name"] for m in catalog["models"]]


def _files():
    out = subprocess.run(["git", "ls-files", "native", "nodes", "web"], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout.split()
    return [f for f in out if CODE.search(f) and not f.startswith("native/data/")]


def test_no_catalog_model_name_is_a_string_literal_in_code():
    names = _names()
    assert len(names) > 20
    quoted = re.compile(r"[\"'`](" + "|".join(re.escape(n) for n in names) + r")[\"'`\s,)]")
    hits = []
    for f in _files():
        for i, line in enumerate((REPO / f).read_text(errors="replace").splitlines(), 1):
            code = line.split("//")[0] if not f.endswith(".py") else line.split("#")[0]
            if quoted.search(code):
                hits.append(f"{f}:{i}: {line.strip()[:100]}")
    assert hits == []


def test_the_check_finds_a_name_when_there_is_one(tmp_path):
    names = _names()
    quoted = re.compile(r"[\"'`](" + "|".join(re.escape(n) for n in names) + r")[\"'`\s,)]")
    assert quoted.search(f'if (vae.name == "{names[0]}") {{')
    assert not quoted.search("// e.g. " + names[0])
