"""Every source-like string in native/data cites a public source (a URL, a paper, a GitHub issue or PR,
our own measurement), never the project's private notes under ../shared or a "facts §x" pointer into them:
the data ships inside the binary, where those notes do not exist."""
import json
import re
from pathlib import Path

import pytest

DATA_DIR = Path(__file__).resolve().parents[2] / "native" / "data"
DATA_FILES = sorted(DATA_DIR.glob("*.json"))

# "facts §" also covers a JSON "\u00a7" escape: the test reads decoded values.
PRIVATE_REFERENCE = re.compile(r"\.\./shared|shared/facts/|facts §|\(facts ")


def private_references(value, path="$"):
    """(JSON path, string) for every string value under `value` that points into the private notes."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from private_references(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from private_references(item, f"{path}[{index}]")
    elif isinstance(value, str) and PRIVATE_REFERENCE.search(value):
        yield path, value


def test_the_data_files_are_found():
    names = {path.name for path in DATA_FILES}
    assert {"models.json", "gpus.json", "llms.json", "presets.json"} <= names, names


@pytest.mark.parametrize("path", DATA_FILES, ids=lambda path: path.name)
def test_no_data_string_points_into_the_private_notes(path):
    offenders = list(private_references(json.loads(path.read_text(encoding="utf-8"))))
    report = "\n".join(f"{path.name} {where}: {text[:160]}" for where, text in offenders)
    assert not offenders, f"cite the public source instead of the notes:\n{report}"


def test_the_check_finds_each_kind_of_private_reference_and_names_its_place():
    doc = {
        "models": [
            {"name": "a", "source": "[C] ../shared/facts/vram.md §1"},
            {"name": "b", "arch": {"source": "[E] facts §1.2; blog"}},
            {"name": "c", "params_source": "[C] code (facts comfyui-internals §3.4)"},
        ],
        "runtime": {"x": {"source": json.loads('"facts \\u00a73.3"')}},
        "fine": "https://github.com/Comfy-Org/ComfyUI/blob/v0.3.64/comfy/sd.py; shared modulation",
    }
    assert [where for where, _ in private_references(doc)] == [
        "$.models[0].source",
        "$.models[1].arch.source",
        "$.models[2].params_source",
        "$.runtime.x.source",
    ]
