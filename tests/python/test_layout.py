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


# Imported at the pack's load by ComfyUI (or outside it): these must be imported inside functions, so the
# pack loads without ComfyUI, without torch and before the server exists.
LAZY_ONLY = {"comfy", "comfy_extras", "comfy_aimdo", "folder_paths", "server", "execution", "torch"}


def import_time_imports(tree):
    """(line, module) of every import run when the module is imported: at module level and in class bodies,
    inside if/try/with, but not inside functions."""
    found, todo = [], list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, "." * node.level + (node.module or "")))
        for field in ("body", "orelse", "finalbody", "handlers"):
            todo += getattr(node, field, [])
    return found


def test_comfyui_torch_and_the_server_are_imported_lazily():
    found = []
    for path in sorted(NODES.rglob("*.py")):
        for line, module in import_time_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if module.split(".")[0] in LAZY_ONLY:
                found.append(f"{path.relative_to(REPO)}:{line} imports {module} at import time")
    assert found == [], "\n".join(found)


def test_native_imports_nothing_outside_itself():
    """install.py and the GPU bench mount nodes/ without running the pack and import nodes/native/ alone."""
    found = []
    for path in sorted((NODES / "native").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level > 1:
                found.append(f"{path.relative_to(REPO)}:{node.lineno} from {'.' * node.level}{node.module or ''}")
    assert found == [], "\n".join(found)


def test_the_import_walk_sees_what_runs_at_import():
    source = ("import os\ntry:\n    import torch\nexcept ImportError:\n    pass\n"
              "class C:\n    from server import PromptServer\n"
              "def f():\n    import comfy.model_management\n")
    assert sorted(m for _, m in import_time_imports(ast.parse(source))) == ["os", "server", "torch"]


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
