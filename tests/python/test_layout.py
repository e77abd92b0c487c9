"""The layout of nodes/ (issue 25): packages by role with few entries at the top, and no Python function
longer than 80 lines or class longer than 200 anywhere under it. Measured with `ast` on the source, so a
long function fails here, naming its file, line and length."""
import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NODES = REPO / "nodes"
MAX_TOP_ENTRIES = 10
MAX_FUNCTION_LINES = 80
MAX_CLASS_LINES = 200
ROLE_PACKAGES = ("graph", "server", "comfyui", "native", "recorder", "report")


def top_entries(folder: Path):
    return sorted(p.name for p in folder.iterdir() if p.name != "__pycache__")


def too_long(source: str, where: str):
    """`where:line name (N lines)` for each function over MAX_FUNCTION_LINES and class over MAX_CLASS_LINES
    (decorators included: they are part of what a reader reads)."""
    found = []
    for node in ast.walk(ast.parse(source, filename=where)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            lines = node.end_lineno - first + 1
            limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
            if lines > limit:
                found.append(f"{where}:{node.lineno} {node.name} ({lines} lines, at most {limit})")
    return found


def test_nodes_top_has_at_most_ten_entries():
    entries = top_entries(NODES)
    assert len(entries) <= MAX_TOP_ENTRIES, f"nodes/ has {len(entries)} entries at its top: {entries}"


def test_nodes_is_split_into_its_role_packages():
    for name in ROLE_PACKAGES:
        assert (NODES / name / "__init__.py").is_file(), f"nodes/{name}/ is not a package"
    loose = [p.name for p in NODES.glob("*.py") if p.name != "__init__.py"]
    assert loose == [], f"modules at nodes/' top belong in a role package: {loose}"


def test_no_function_or_class_under_nodes_is_too_long():
    found = []
    for path in sorted(NODES.rglob("*.py")):
        found += too_long(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    assert found == [], "\n".join(found)


# The measure itself, on made-up sources: one line over each limit fails, the limit itself passes.
def _function(lines: int, decorated=False) -> str:
    head = "@staticmethod\n" if decorated else ""
    return head + "def f():\n" + "    x = 1\n" * (lines - 1 - decorated)


def _class(lines: int) -> str:
    return "class C:\n" + "    x = 1\n" * (lines - 1)


@pytest.mark.parametrize("source,fails", [
    (_function(MAX_FUNCTION_LINES), False),
    (_function(MAX_FUNCTION_LINES + 1), True),
    (_function(MAX_FUNCTION_LINES + 1, decorated=True), True),
    (_class(MAX_CLASS_LINES), False),
    (_class(MAX_CLASS_LINES + 1), True),
    ("class C:\n" + "    " + _function(MAX_FUNCTION_LINES + 1).replace("\n    ", "\n        "), True),
])
def test_the_measure_counts_lines_as_a_reader_does(source, fails):
    assert bool(too_long(source, "x.py")) == fails, too_long(source, "x.py")


def test_too_many_entries_are_counted(tmp_path):
    for i in range(MAX_TOP_ENTRIES + 1):
        (tmp_path / f"m{i}.py").write_text("")
    (tmp_path / "__pycache__").mkdir()
    assert len(top_entries(tmp_path)) == MAX_TOP_ENTRIES + 1
