"""docs/api.md and docs/request.schema.json are `headroom schema`'s output (the core's field tables): a field
added, renamed or re-ranged without regenerating them fails here. Regenerate with
  build/headroom schema --markdown > docs/api.md && build/headroom schema > docs/request.schema.json"""
import json
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / os.environ.get("HEADROOM_BUILD_DIR", "build") / "headroom"


def schema_output(*flags):
    return subprocess.run([str(CLI), "schema", *flags], capture_output=True, text=True, check=True).stdout


def test_api_md_is_generated_from_the_tables():
    assert (REPO / "docs" / "api.md").read_text() == schema_output("--markdown")


def test_request_schema_is_generated_from_the_tables():
    committed = json.loads((REPO / "docs" / "request.schema.json").read_text())
    assert committed == json.loads(schema_output())
    # Every estimate field is documented with its meaning and its command-line form.
    estimate = committed["$defs"]["estimate"]
    assert estimate["required"] == ["model"]
    for key, prop in estimate["properties"].items():
        assert prop["description"], key
        assert prop.get("x-flags"), key
