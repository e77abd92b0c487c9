"""Checks that a native library file is whole before anything maps it into the process.

Loading a shared library maps its file into memory; when the file is shorter than its own headers say
(what an interrupted build or copy leaves), touching a page past the end kills the whole process with
SIGBUS, and ComfyUI with it. No exception can catch that, so the file is read and checked first: the
format's magic, and every table and segment the headers name must lie inside the file. This reads only
the headers (a few kB), never maps the file, and knows ELF (Linux), PE (Windows) and Mach-O (macOS).
"""
import io
import struct

_MACHO_MAGICS = {b"\xcf\xfa\xed\xfe": ("<", 64), b"\xce\xfa\xed\xfe": ("<", 32),
                 b"\xfe\xed\xfa\xcf": (">", 64), b"\xfe\xed\xfa\xce": (">", 32)}
_MACHO_FAT = (b"\xca\xfe\xba\xbe", b"\xbe\xba\xfe\xca")
MAX_TABLE_ENTRIES = 1 << 16  # ELF/PE/Mach-O tables of a real library are far smaller


class Damaged(Exception):
    """The file is not a whole library; str() says what is wrong with it."""


def _need(condition, message):
    if not condition:
        raise Damaged(message)


def _read_table(f, size, offset, entry_size, count, what):
    """`count` entries of `entry_size` bytes at `offset`, after checking they lie inside the file."""
    _need(offset + entry_size * count <= size,
          f"{what} end at byte {offset + entry_size * count}, past the file's end ({size} bytes)")
    f.seek(offset)
    return f.read(entry_size * count)


def _check_elf(f, size, head):
    _need(len(head) >= 52, f"ELF header cut short ({size} bytes)")
    klass, data = head[4], head[5]
    _need(klass in (1, 2) and data in (1, 2), "ELF header names no valid class or byte order")
    end = "<" if data == 1 else ">"
    if klass == 2:
        _need(len(head) >= 64, f"ELF header cut short ({size} bytes)")
        phoff, shoff = struct.unpack_from(end + "QQ", head, 32)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(end + "HHHH", head, 54)
        ph_fmt, sh_fmt = end + "IIQQQQQQ", end + "IIQQQQIIQQ"
    else:
        phoff, shoff = struct.unpack_from(end + "II", head, 28)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(end + "HHHH", head, 42)
        ph_fmt, sh_fmt = end + "IIIIIIII", end + "IIIIIIIIII"
    _need(phnum > 0, "ELF file has no program headers (not a loadable library)")
    _need(phnum < MAX_TABLE_ENTRIES and shnum < MAX_TABLE_ENTRIES, "ELF header counts are implausible")
    _need(phentsize >= struct.calcsize(ph_fmt), "ELF program header size is implausible")
    table = _read_table(f, size, phoff, phentsize, phnum, "program headers")
    for i in range(phnum):
        fields = struct.unpack_from(ph_fmt, table, i * phentsize)
        if klass == 2:
            p_type, _flags, p_offset, _vaddr, _paddr, p_filesz = fields[:6]
        else:
            p_type, p_offset, _vaddr, _paddr, p_filesz = fields[:5]
        if p_type == 1:  # PT_LOAD: mapped from the file
            _need(p_offset + p_filesz <= size,
                  f"segment {i} ends at byte {p_offset + p_filesz}, past the file's end ({size} bytes)")
    if shnum:
        _need(shentsize >= struct.calcsize(sh_fmt), "ELF section header size is implausible")
        table = _read_table(f, size, shoff, shentsize, shnum, "section headers")
        for i in range(shnum):
            fields = struct.unpack_from(sh_fmt, table, i * shentsize)
            sh_type, sh_offset, sh_size = fields[1], fields[4], fields[5]
            if sh_type not in (0, 8):  # SHT_NULL, SHT_NOBITS (.bss) take no file bytes
                _need(sh_offset + sh_size <= size,
                      f"section {i} ends at byte {sh_offset + sh_size}, past the file's end ({size} bytes)")


def _check_pe(f, size, head):
    _need(len(head) >= 64, f"DOS header cut short ({size} bytes)")
    (pe_offset,) = struct.unpack_from("<I", head, 0x3C)
    _need(pe_offset + 24 <= size, "PE header lies past the file's end")
    f.seek(pe_offset)
    pe = f.read(24)
    _need(pe[:4] == b"PE\0\0", "no PE signature where the DOS header points")
    nsections, = struct.unpack_from("<H", pe, 6)
    optional_size, = struct.unpack_from("<H", pe, 20)
    _need(0 < nsections < MAX_TABLE_ENTRIES, "PE section count is implausible")
    table_at = pe_offset + 24 + optional_size
    _need(table_at + 40 * nsections <= size, "PE section table runs past the file's end")
    f.seek(table_at)
    table = f.read(40 * nsections)
    for i in range(nsections):
        raw_size, raw_at = struct.unpack_from("<II", table, i * 40 + 16)
        _need(raw_at + raw_size <= size,
              f"section {i} ends at byte {raw_at + raw_size}, past the file's end ({size} bytes)")


def _check_macho(f, size, head, base=0, limit=None):
    limit = size if limit is None else limit
    end, bits = _MACHO_MAGICS[head[:4]]
    header_size = 32 if bits == 64 else 28
    _need(len(head) >= header_size, "Mach-O header cut short")
    ncmds, sizeofcmds = struct.unpack_from(end + "II", head, 16)
    _need(ncmds < MAX_TABLE_ENTRIES and base + header_size + sizeofcmds <= limit,
          "Mach-O load commands run past the file's end")
    f.seek(base + header_size)
    cmds = f.read(sizeofcmds)
    at = 0
    for i in range(ncmds):
        _need(at + 8 <= len(cmds), "Mach-O load commands are cut short")
        cmd, cmdsize = struct.unpack_from(end + "II", cmds, at)
        _need(cmdsize >= 8, "Mach-O load command size is implausible")
        if cmd == 0x19 and at + 56 <= len(cmds):  # LC_SEGMENT_64
            fileoff, filesize = struct.unpack_from(end + "QQ", cmds, at + 40)
            _need(base + fileoff + filesize <= limit, f"segment {i} runs past the file's end ({size} bytes)")
        elif cmd == 0x1 and at + 44 <= len(cmds):  # LC_SEGMENT
            fileoff, filesize = struct.unpack_from(end + "II", cmds, at + 32)
            _need(base + fileoff + filesize <= limit, f"segment {i} runs past the file's end ({size} bytes)")
        at += cmdsize


def _check_fat(f, size, head):
    nfat, = struct.unpack_from(">I", head, 4)
    _need(0 < nfat < 64 and 8 + 20 * nfat <= size, "universal binary header is implausible")
    f.seek(8)
    table = f.read(20 * nfat)
    for i in range(nfat):
        _cpu, _sub, offset, arch_size, _align = struct.unpack_from(">IIIII", table, i * 20)
        _need(offset + arch_size <= size, f"architecture {i} runs past the file's end ({size} bytes)")
        f.seek(offset)
        inner = f.read(64)
        _need(inner[:4] in _MACHO_MAGICS, f"architecture {i} is not a Mach-O image")
        _check_macho(f, size, inner, base=offset, limit=offset + arch_size)


def check_library(path) -> None:
    """Raises Damaged when the file at `path` is not a whole shared library (empty, cut short, or not one
    at all). Reads only its headers."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        _check(f, f.tell())


def check_image(data: bytes) -> None:
    """check_library on a library's bytes already in memory: the loader checks, hashes and loads one read
    of the file, so what it checked is what it maps even while the file on disk is being replaced."""
    _check(io.BytesIO(data), len(data))


def _check(f, size):
    _need(size > 0, "the file is empty")
    f.seek(0)
    head = f.read(64)
    try:
        if head[:4] == b"\x7fELF":
            _check_elf(f, size, head)
        elif head[:2] == b"MZ":
            _check_pe(f, size, head)
        elif head[:4] in _MACHO_MAGICS:
            _check_macho(f, size, head)
        elif head[:4] in _MACHO_FAT:
            _check_fat(f, size, head)
        else:
            raise Damaged(f"not a shared library (starts with {head[:8].hex()}, {size} bytes)")
    except struct.error:
        raise Damaged(f"headers cut short ({size} bytes)")
