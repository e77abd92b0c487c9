"""scripts/pe_check.py, the import/export check that test_windows.sh runs on the MinGW build and the release
workflow runs on the MSVC build: it must pass a DLL that imports only system DLLs and exports the C
interface, and fail, naming the problem, on a C++ runtime import, an extra export or a cut file. The DLLs
here are tiny ones built with Debian's MinGW for the purpose."""
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
import capi_exports  # noqa: E402
import pe_check  # noqa: E402

CXX = shutil.which("x86_64-w64-mingw32-g++-posix") or shutil.which("x86_64-w64-mingw32-g++")
pytestmark = pytest.mark.skipif(CXX is None, reason="MinGW-w64 is not installed (scripts/deps.sh installs it)")

SOURCE = """
#include <string>
extern "C" __declspec(dllexport) char* headroom_call(const char*, const char*) { return nullptr; }
extern "C" __declspec(dllexport) void headroom_free(char*) {}
extern "C" __declspec(dllexport) const char* headroom_version(void) { static std::string v("0"); return v.c_str(); }
extern "C" __declspec(dllexport) int headroom_abi_version(void) { return 1; }
"""


def build_dll(tmp_path, name, static, extra=""):
    src = tmp_path / f"{name}.cpp"
    src.write_text(SOURCE + extra)
    out = tmp_path / f"{name}.dll"
    flags = ["-static"] if static else []
    subprocess.run([CXX, "-shared", "-O1", str(src), "-o", str(out), *flags], check=True, timeout=120)
    return out


def test_a_static_dll_with_the_c_interface_passes(tmp_path):
    dll = build_dll(tmp_path, "good", static=True)
    summary = pe_check.check(str(dll), pe_check.SYSTEM_DLLS, capi_exports.declared())
    assert "kernel32.dll" in summary and "exports headroom_abi_version headroom_call headroom_free headroom_version" in summary


def test_a_dll_that_needs_the_cpp_runtime_fails_by_name(tmp_path):
    dll = build_dll(tmp_path, "shared_runtime", static=False)
    with pytest.raises(pe_check.PEError, match=r"imports .*libstdc\+\+-6\.dll.*which a user's Windows does not have"):
        pe_check.check(str(dll), pe_check.SYSTEM_DLLS, None)


def test_an_extra_or_missing_export_fails(tmp_path):
    dll = build_dll(tmp_path, "extra", static=True, extra='extern "C" __declspec(dllexport) int leaked(void) { return 2; }\n')
    with pytest.raises(pe_check.PEError, match="exports 1 names beyond the C interface, e.g. leaked"):
        pe_check.check(str(dll), pe_check.SYSTEM_DLLS, capi_exports.declared())
    with pytest.raises(pe_check.PEError, match="does not export headroom_extra"):
        pe_check.check(str(dll), pe_check.SYSTEM_DLLS, capi_exports.declared() + ["headroom_extra", "leaked"])


def test_a_cut_or_foreign_file_is_an_error_not_a_crash(tmp_path):
    data = build_dll(tmp_path, "whole", static=True).read_bytes()
    for cut in (0, 2, 0x40, 0x100, len(data) // 2):
        target = tmp_path / f"cut{cut}.dll"
        target.write_bytes(data[:cut])
        assert pe_check.main([str(target)]) == 1
    elf = tmp_path / "elf.dll"
    elf.write_bytes(b"\x7fELF" + bytes(200))
    assert pe_check.main([str(elf)]) == 1


def test_the_header_declares_the_functions_the_loader_binds():
    """The nodes' ctypes wrapper binds these names; the checkers take them from the header."""
    names = capi_exports.declared()
    text = (REPO / "nodes" / "native" / "core_capi.py").read_text()
    assert names and all(f"lib.{name}" in text for name in names), names
