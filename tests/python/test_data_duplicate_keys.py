"""No key appears twice in one object of native/data: JSON readers keep the last copy silently, so a merge that
adds a node rule or model a second time would make the first one vanish without an error (it happened to
ResolutionSelector's rule in comfy_nodes.json)."""
import json

import pytest

from conftest import REPO

DATA = sorted((REPO / "native" / "data").glob("*.json"))


def refuse_duplicates(pairs):
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"key {key!r} appears twice in one object")
        seen.add(key)
    return dict(pairs)


@pytest.mark.parametrize("path", DATA, ids=[p.name for p in DATA])
def test_no_key_appears_twice(path):
    json.loads(path.read_text(), object_pairs_hook=refuse_duplicates)


def test_the_check_catches_a_duplicate():
    with pytest.raises(ValueError, match="'a' appears twice"):
        json.loads('{"x": {"a": 1, "a": 2}}', object_pairs_hook=refuse_duplicates)
