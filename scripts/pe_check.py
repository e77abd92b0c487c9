"""Checks a 64-bit Windows PE file (DLL or EXE) the same way wherever it was built: MinGW on Linux, where
no dumpbin runs, and MSVC on a release runner. It reads the import tables (the DLLs the loader must find
on the user's machine, delay-loaded ones included) and, for a DLL, the export table (what ctypes sees).
Prints one summary per file; exits 1 naming what is wrong.

usage: pe_check.py [--allow DLL ...] [--exports a,b,c | --capi-exports] FILE...
"""

import argparse
import fnmatch
import struct
import sys

# DLLs every Windows 10/11 has. The C++ runtime (msvcp140, vcruntime140, libstdc++-6, libwinpthread-1) is
# not among them: a ComfyUI portable Python ships vcruntime140 but not msvcp140, so the core links the
# C++ runtime statically and must not import it.
SYSTEM_DLLS = ("kernel32.dll", "msvcrt.dll", "advapi32.dll", "user32.dll", "ws2_32.dll", "bcrypt.dll",
               "ucrtbase.dll", "ntdll.dll", "shell32.dll", "ole32.dll", "api-ms-win-*.dll")
PE32_PLUS = 0x20B
MACHINE_AMD64 = 0x8664
MACHINE_ARM64 = 0xAA64


class PEError(Exception):
    pass


class PE:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = f.read()
        self.path = path
        d = self.data
        if len(d) < 0x40 or d[:2] != b"MZ":
            raise PEError("not a PE file (no MZ header)")
        pe = struct.unpack_from("<I", d, 0x3C)[0]
        if pe + 24 > len(d) or d[pe:pe + 4] != b"PE\0\0":
            raise PEError("no PE signature where the DOS header points")
        self.machine, sections, _, _, _, optional_size, self.characteristics = struct.unpack_from("<HHIIIHH", d, pe + 4)
        optional = pe + 24
        if struct.unpack_from("<H", d, optional)[0] != PE32_PLUS:
            raise PEError("not a 64-bit (PE32+) image")
        count = struct.unpack_from("<I", d, optional + 108)[0]
        self.directories = [struct.unpack_from("<II", d, optional + 112 + 8 * i) for i in range(min(count, 16))]
        table = optional + optional_size
        self.sections = []
        for i in range(sections):
            name, vsize, vaddr, rsize, raddr = struct.unpack_from("<8sIIII", d, table + 40 * i)
            if raddr + rsize > len(d):  # what an interrupted copy leaves
                raise PEError(f"section {name.rstrip(bytes(1)).decode('ascii', 'replace')} ends at byte "
                              f"{raddr + rsize}, past the file's end ({len(d)} bytes)")
            self.sections.append((vaddr, max(vsize, rsize), raddr))

    def offset(self, rva):
        for vaddr, size, raddr in self.sections:
            if vaddr <= rva < vaddr + size:
                return rva - vaddr + raddr
        raise PEError(f"address {rva:#x} lies in no section")

    def cstring(self, rva):
        start = self.offset(rva)
        end = self.data.find(b"\0", start)
        if end < 0:
            raise PEError(f"unterminated name at {rva:#x}")
        return self.data[start:end].decode("ascii", "replace")

    def imports(self):
        """DLL names of the import table (directory 1) and the delay-load table (directory 13)."""
        names = []
        for index, entry_size, name_field in ((1, 20, 12), (13, 32, 4)):
            if index >= len(self.directories) or self.directories[index][0] == 0:
                continue
            at = self.offset(self.directories[index][0])
            while at + entry_size <= len(self.data):
                entry = self.data[at:at + entry_size]
                if entry == bytes(entry_size):
                    break
                names.append(self.cstring(struct.unpack_from("<I", entry, name_field)[0]))
                at += entry_size
        return names

    def exports(self):
        if not self.directories or self.directories[0][0] == 0:
            return []
        at = self.offset(self.directories[0][0])
        count, names_rva = struct.unpack_from("<II", self.data, at + 24)[0], struct.unpack_from("<I", self.data, at + 32)[0]
        table = self.offset(names_rva)
        return [self.cstring(struct.unpack_from("<I", self.data, table + 4 * i)[0]) for i in range(count)]


def check(path, allowed, exports):
    pe = PE(path)
    problems = []
    if pe.machine not in (MACHINE_AMD64, MACHINE_ARM64):
        problems.append(f"machine {pe.machine:#x} is neither x86-64 nor ARM64")
    imports = pe.imports()
    foreign = [dll for dll in imports if not any(fnmatch.fnmatch(dll.lower(), pattern) for pattern in allowed)]
    if foreign:
        problems.append(f"imports {', '.join(foreign)}, which a user's Windows does not have")
    exported = pe.exports()
    if exports is not None:
        missing = sorted(set(exports) - set(exported))
        extra = sorted(set(exported) - set(exports))
        if missing:
            problems.append(f"does not export {', '.join(missing)}")
        if extra:
            problems.append(f"exports {len(extra)} names beyond the C interface, e.g. {', '.join(extra[:5])}")
    if problems:
        raise PEError("; ".join(problems))
    summary = f"imports {' '.join(sorted(set(d.lower() for d in imports)))}"
    if exports is not None:
        summary += f"; exports {' '.join(sorted(exported))}"
    return summary


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--allow", action="append", default=None, help="a DLL name (or pattern) allowed as well")
    parser.add_argument("--capi-exports", action="store_true",
                        help="the file must export what native/capi/headroom_capi.h declares (scripts/capi_exports.py)")
    parser.add_argument("--exports", help="comma-separated names the file must export, and nothing else")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    allowed = list(SYSTEM_DLLS) + [a.lower() for a in (args.allow or [])]
    exports = [e for e in args.exports.split(",") if e] if args.exports else None
    if args.capi_exports:
        import capi_exports
        exports = capi_exports.declared()
    failed = False
    for path in args.files:
        try:
            print(f"pe_check: {path}: {check(path, allowed, exports)}")
        except (OSError, PEError, struct.error) as e:
            print(f"pe_check: {path}: {e}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
