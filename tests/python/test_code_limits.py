"""Issue 25's size limits, on every language: no function longer than 80 lines (lizard's `length`, from the
signature to the closing brace) in native/ (C++ and CUDA), nodes/ (Python) and web/ (JavaScript), and no C++
class or struct body longer than 200 lines. Lizard does not measure classes, so the C++ class check counts
braces after blanking comments and literals. There is no allowlist: a long unit is split, not excused."""
import re
import subprocess

import lizard
import pytest

from conftest import REPO

MAX_FUNCTION_LINES = 80
MAX_CLASS_LINES = 200

# which tree holds which language, and the file endings lizard should read there
TREES = {"native": (".cpp", ".hpp", ".h", ".cu", ".cuh"), "nodes": (".py",), "web": (".js",)}
CPP_ENDINGS = TREES["native"]


def _files(tree, endings):
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", tree], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout.split()
    return [f for f in out if f.endswith(endings) and (REPO / f).is_file()]


def long_functions(paths, limit=MAX_FUNCTION_LINES):
    """Each function over `limit` lines as 'path:line name (N lines)', by lizard's own measure."""
    found = []
    for rel in paths:
        info = lizard.analyze_file(str(REPO / rel) if not str(rel).startswith("/") else str(rel))
        for fn in info.function_list:
            if fn.length > limit:
                found.append(f"{rel}:{fn.start_line} {fn.name} ({fn.length} lines)")
    return found


# A comment, a raw string R"tag( ... )tag", a string or a char literal: blanked (newlines kept) so that braces
# inside them are not counted and line numbers stay true.
_NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|R"([^(\s]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
# `class Name ... {` or `struct Name ... {` (a base list may sit between); a forward declaration ends in ';'
_CLASS_HEAD = re.compile(r"\b(class|struct)\s+(?:alignas\([^)]*\)\s*)?([A-Za-z_]\w*)[^;{}()]*\{")


def _blank(text):
    return _NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def long_classes(paths, limit=MAX_CLASS_LINES):
    """Each C++ class/struct whose body (head line to closing brace) spans over `limit` lines."""
    found = []
    for rel in paths:
        path = rel if str(rel).startswith("/") else REPO / rel
        code = _blank(open(path, encoding="utf-8", errors="replace").read())
        for head in _CLASS_HEAD.finditer(code):
            if re.search(r"\benum\s*$", code[max(0, head.start() - 12):head.start()]):
                continue  # `enum class X {` is a list of names, not a class
            depth, end = 0, None
            for i in range(head.end() - 1, len(code)):
                depth += {"{": 1, "}": -1}.get(code[i], 0)
                if depth == 0:
                    end = i
                    break
            if end is None:
                continue
            first = code.count("\n", 0, head.start()) + 1
            lines = code.count("\n", head.start(), end) + 1
            if lines > limit:
                found.append(f"{rel}:{first} {head.group(1)} {head.group(2)} ({lines} lines)")
    return found


def _report(kind, found, limit):
    return (f"{len(found)} {kind} over {limit} lines (issue 25: split each into named steps with one job):\n  "
            + "\n  ".join(found))


@pytest.mark.parametrize("tree", sorted(TREES))
def test_no_function_is_longer_than_80_lines(tree):
    paths = _files(tree, TREES[tree])
    assert paths, f"no {TREES[tree]} files found under {tree}/"
    found = long_functions(paths)
    assert not found, _report("functions", found, MAX_FUNCTION_LINES)


def test_no_cpp_class_is_longer_than_200_lines():
    paths = _files("native", CPP_ENDINGS)
    found = long_classes(paths)
    assert not found, _report("classes", found, MAX_CLASS_LINES)


def test_the_function_check_finds_a_long_function(tmp_path):
    body = "\n".join(f"    x += {i};" for i in range(MAX_FUNCTION_LINES))
    src = tmp_path / "long.cpp"
    src.write_text(f"int long_one(int x) {{\n{body}\n    return x;\n}}\nint short_one() {{ return 1; }}\n")
    py = tmp_path / "long.py"
    py.write_text("def long_one(x):\n" + "\n".join(f"    x += {i}" for i in range(MAX_FUNCTION_LINES)) + "\n")
    found = long_functions([str(src), str(py)])
    assert len(found) == 2 and "long_one" in found[0] and "long_one" in found[1]
    assert long_functions([str(src)], limit=MAX_FUNCTION_LINES + 3) == []


def test_the_class_check_counts_braces_not_comments_or_strings(tmp_path):
    members = "\n".join(f"    int m{i} = {i};" for i in range(MAX_CLASS_LINES))
    src = tmp_path / "big.hpp"
    src.write_text("class Forward;\nenum class Kind { a, b };\n"
                   f"struct Big : Base {{\n    // a }} in a comment\n    const char* s = \"}}\";\n{members}\n}};\n"
                   "struct Small { int a; };\n")
    found = long_classes([str(src)])
    assert len(found) == 1 and "struct Big" in found[0] and ":3 " in found[0]
    assert long_classes([str(src)], limit=MAX_CLASS_LINES + 5) == []
