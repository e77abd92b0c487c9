"""Checks a 64-bit Mach-O binary built on Linux for macOS, where no otool runs: its CPU type, the minimum
macOS in LC_BUILD_VERSION, the libraries it loads and, for a library, the symbols dyld exports from it
(the export trie, what dlsym and ctypes see). Prints one summary per file; exits 1 naming what is wrong.

usage: macho_check.py --cpu arm64|x86_64 --min-macos 11.0 [--allow-dylib PATH ...] [--exports a,b,c | --capi-exports] FILE...
"""

import argparse
import os
import struct
import sys

MH_MAGIC_64 = 0xFEEDFACF
CPU_TYPES = {"arm64": 0x0100000C, "x86_64": 0x01000007}
CPU_NAMES = {v: k for k, v in CPU_TYPES.items()}
FILE_TYPES = {1: "object", 2: "executable", 6: "dylib", 8: "bundle"}
PLATFORM_MACOS = 1
LC_NAMES = {
    0x2: "LC_SYMTAB", 0xB: "LC_DYSYMTAB", 0xC: "LC_LOAD_DYLIB", 0xD: "LC_ID_DYLIB", 0xE: "LC_LOAD_DYLINKER",
    0x19: "LC_SEGMENT_64", 0x1B: "LC_UUID", 0x1D: "LC_CODE_SIGNATURE", 0x20: "LC_LAZY_LOAD_DYLIB",
    0x24: "LC_VERSION_MIN_MACOSX", 0x26: "LC_FUNCTION_STARTS", 0x29: "LC_DATA_IN_CODE", 0x2A: "LC_SOURCE_VERSION",
    0x32: "LC_BUILD_VERSION", 0x80000018: "LC_LOAD_WEAK_DYLIB", 0x8000001C: "LC_RPATH",
    0x8000001F: "LC_REEXPORT_DYLIB", 0x80000022: "LC_DYLD_INFO_ONLY", 0x80000023: "LC_LOAD_UPWARD_DYLIB",
    0x80000028: "LC_MAIN", 0x80000033: "LC_DYLD_EXPORTS_TRIE", 0x80000034: "LC_DYLD_CHAINED_FIXUPS",
}
DEPENDENCY_COMMANDS = {0xC, 0x20, 0x80000018, 0x8000001F, 0x80000023}
EXPORT_WEAK_DEFINITION = 0x04
# What a dylib linked by zig exports beyond its own functions, whatever their visibility: the global
# operator new and delete of its static libc++ (default visibility, so a program may replace them; they
# all end in malloc and free, so it matters not which image's copy a caller binds to) and the two symbols
# the linker makes for every image. ld64 would hide them through an exports list; zig's linker takes none.
LINKER_AND_LIBCXX_EXPORTS = {
    "_Znwm", "_Znam", "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
    "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t",
    "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
    "__dso_handle", "_mh_dylib_header",
}


class MachOError(Exception):
    pass


def version_text(packed):
    """X.Y.Z packed as xxxx.yy.zz nibbles; a zero patch is left off (11.0, not 11.0.0)."""
    major, minor, patch = packed >> 16, (packed >> 8) & 0xFF, packed & 0xFF
    return f"{major}.{minor}" + (f".{patch}" if patch else "")


def uleb(data, pos):
    value = shift = 0
    while True:
        if pos >= len(data):
            raise MachOError("export trie: a number runs past its end")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def trie_names(trie):
    """Every name with terminal information in a dyld export trie, with its flags."""
    names, stack, seen = {}, [(0, "")], set()
    while stack:
        offset, prefix = stack.pop()
        if offset in seen or offset >= len(trie):
            raise MachOError(f"export trie: node offset {offset} is out of range or visited twice")
        seen.add(offset)
        terminal_size, pos = uleb(trie, offset)
        if terminal_size:
            names[prefix] = uleb(trie, pos)[0]
        pos += terminal_size
        if pos >= len(trie):
            raise MachOError(f"export trie: node at {offset} ends before its child count")
        children = trie[pos]
        pos += 1
        for _ in range(children):
            end = trie.find(b"\0", pos)
            if end < 0:
                raise MachOError(f"export trie: unterminated edge under node {offset}")
            edge = trie[pos:end].decode("utf-8", "replace")
            child, pos = uleb(trie, end + 1)
            stack.append((child, prefix + edge))
    return names


def symtab_exports(data, symoff, nsyms, stroff):
    """External symbols defined in a section (for a file with no export trie), with no flags."""
    names = {}
    for i in range(nsyms):
        strx, n_type, _sect, _desc, _value = struct.unpack_from("<IBBHQ", data, symoff + 16 * i)
        if n_type & 0xE0 == 0 and n_type & 0x01 and not n_type & 0x10 and n_type & 0x0E == 0x0E:
            end = data.find(b"\0", stroff + strx)
            names[data[stroff + strx:end].decode("utf-8", "replace")] = 0
    return names


def read_macho(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 32:
        raise MachOError(f"{path}: {len(data)} bytes, too short for a Mach-O header")
    magic, cputype, _sub, filetype, ncmds, sizeofcmds = struct.unpack_from("<IiiIII", data, 0)
    if magic != MH_MAGIC_64:
        raise MachOError(f"{path}: magic 0x{magic:08x}, expected 0x{MH_MAGIC_64:08x} (a thin 64-bit Mach-O)")
    info = {"path": path, "size": len(data), "cputype": cputype, "filetype": FILE_TYPES.get(filetype, str(filetype)),
            "commands": [], "dylibs": [], "install_name": None, "platform": None, "minos": None, "sdk": None,
            "exports": None}
    pos, end = 32, 32 + sizeofcmds
    if end > len(data):
        raise MachOError(f"{path}: load commands end at byte {end}, past the file's {len(data)}")
    trie, symtab = None, None
    for _ in range(ncmds):
        cmd, cmdsize = struct.unpack_from("<II", data, pos)
        if cmdsize < 8 or pos + cmdsize > end:
            raise MachOError(f"{path}: load command 0x{cmd:x} at byte {pos} has size {cmdsize}, out of bounds")
        info["commands"].append(LC_NAMES.get(cmd, f"0x{cmd:x}"))
        if cmd in DEPENDENCY_COMMANDS or cmd == 0xD:
            name_off = struct.unpack_from("<I", data, pos + 8)[0]
            name = data[pos + name_off:pos + cmdsize].split(b"\0", 1)[0].decode("utf-8", "replace")
            if cmd == 0xD:
                info["install_name"] = name
            else:
                info["dylibs"].append(name)
        elif cmd == 0x32:
            info["platform"], minos, sdk = struct.unpack_from("<III", data, pos + 8)
            info["minos"], info["sdk"] = version_text(minos), version_text(sdk)
        elif cmd == 0x24:
            minos, sdk = struct.unpack_from("<II", data, pos + 8)
            info["platform"], info["minos"], info["sdk"] = PLATFORM_MACOS, version_text(minos), version_text(sdk)
        elif cmd == 0x80000033:
            trie = struct.unpack_from("<II", data, pos + 8)
        elif cmd == 0x80000022:
            trie = struct.unpack_from("<II", data, pos + 40)  # export_off, export_size after four off/size pairs
        elif cmd == 0x2:
            symtab = struct.unpack_from("<III", data, pos + 8)
        pos += cmdsize
    if trie is not None:
        off, size = trie
        info["exports"] = trie_names(data[off:off + size]) if size else {}
    elif symtab is not None:
        info["exports"] = symtab_exports(data, *symtab)
    return info


def check(info, cpu, min_macos, allowed, exports):
    """What is wrong with one binary, as messages (empty when it passes)."""
    problems = []
    if info["cputype"] != CPU_TYPES[cpu]:
        problems.append(f"CPU type {CPU_NAMES.get(info['cputype'], hex(info['cputype']))}, expected {cpu}")
    if info["platform"] != PLATFORM_MACOS:
        problems.append(f"platform {info['platform']} in LC_BUILD_VERSION, expected {PLATFORM_MACOS} (macOS)")
    if info["minos"] != min_macos:
        problems.append(f"minimum macOS {info['minos']}, expected {min_macos}")
    if cpu == "arm64" and "LC_CODE_SIGNATURE" not in info["commands"]:
        problems.append("no code signature: macOS on Apple silicon runs no unsigned code")
    foreign = [d for d in info["dylibs"] if d not in allowed]
    if foreign:
        problems.append(f"loads {', '.join(foreign)}, expected only {', '.join(allowed)} (what every Mac has)")
    if exports is not None:
        got = {name[1:] if name.startswith("_") else name for name in info["exports"] or {}}
        missing, extra = sorted(exports - got), sorted(got - exports - LINKER_AND_LIBCXX_EXPORTS)
        if missing:
            problems.append(f"does not export {', '.join(missing)}")
        if extra:
            problems.append(f"exports {len(extra)} symbols beyond the C interface, e.g. {', '.join(extra[:5])}")
    return problems


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu", required=True, choices=sorted(CPU_TYPES))
    parser.add_argument("--min-macos", required=True)
    parser.add_argument("--allow-dylib", action="append", default=None)
    parser.add_argument("--capi-exports", action="store_true",
                        help="the file must export what native/capi/headroom_capi.h declares (scripts/capi_exports.py)")
    parser.add_argument("--exports", help="comma-separated C names the file must export, and nothing else")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    allowed = args.allow_dylib or ["/usr/lib/libSystem.B.dylib"]
    exports = None if args.exports is None else {n for n in args.exports.split(",") if n}
    if args.capi_exports:
        import capi_exports
        exports = set(capi_exports.declared())
    failed = False
    for path in args.files:
        name = os.path.basename(path)
        try:
            info = read_macho(path)
        except (OSError, MachOError, struct.error) as e:
            print(f"macho_check: {path}: cannot read: {e}", file=sys.stderr)
            failed = True
            continue
        n_exports = "?" if info["exports"] is None else len(info["exports"])
        n_weak = sum(1 for flags in (info["exports"] or {}).values() if flags & EXPORT_WEAK_DEFINITION)
        print(f"macho_check: {name}: {info['filetype']} {CPU_NAMES.get(info['cputype'], hex(info['cputype']))}, "
              f"{info['size']} bytes, macOS >= {info['minos']} (SDK {info['sdk']}), {n_exports} exported symbols ({n_weak} weak)")
        if info["install_name"]:
            print(f"  install name: {info['install_name']}")
        print(f"  loads: {', '.join(info['dylibs']) or 'nothing'}")
        print(f"  load commands: {' '.join(info['commands'])}")
        if exports is not None:
            print(f"  exports: {', '.join(sorted(info['exports'] or {})[:40])}")
        for problem in check(info, args.cpu, args.min_macos, allowed, exports):
            print(f"macho_check: {path}: {problem}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
