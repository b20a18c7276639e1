#!/usr/bin/env python3
"""check-kernel-btf.py - check that a kernel's BTF can load sched_ext schedulers.

Usage: scripts/check-kernel-btf.py <vmlinuz|vmlinux|raw BTF file, e.g. /sys/kernel/btf/vmlinux>

Some Debian builds (e.g. trixie-backports 7.2) ran an older pahole, which
left the implicit `struct bpf_prog_aux *aux` parameter of KF_IMPLICIT_ARGS
kfuncs (scx_bpf_kick_cpu, scx_bpf_create_dsq, ...) in the BTF prototype;
libbpf then refuses every sched_ext scheduler ("func_proto ... incompatible
with vmlinux"). This script finds the vmlinux BTF (decompressing a bzImage
if needed; zstd images need the `zstd` command) and checks those kfuncs.

Exit status: 0 = BTF looks usable, 1 = BTF is unusable (broken kfunc
prototypes or no sched_ext kfuncs), 2 = could not check (tool/format error).
"""
import lzma
import struct
import subprocess
import sys
import zlib

# Kfuncs that take an implicit aux argument in the kernel; their BTF
# prototype as seen by BPF programs must not list it.
IMPLICIT_ARG_KFUNCS = ("scx_bpf_kick_cpu", "scx_bpf_create_dsq")


def fail(code, msg):
    print(f"check-kernel-btf: {msg}", file=sys.stderr)
    sys.exit(code)


def decompress_bzimage(data):
    """Return the vmlinux ELF inside a bzImage, trying each known payload magic."""
    candidates = []
    for magic, kind in ((b"\x28\xb5\x2f\xfd", "zstd"), (b"\xfd7zXZ\x00", "xz"),
                        (b"\x1f\x8b\x08", "gzip"), (b"\x5d\x00\x00", "lzma")):
        pos = data.find(magic)
        while pos >= 0 and len(candidates) < 64:
            candidates.append((pos, kind))
            pos = data.find(magic, pos + 1)
    for pos, kind in sorted(candidates):
        out = None
        try:
            if kind == "zstd":
                # zstd reports trailing garbage after the frame; keep its output anyway.
                p = subprocess.run(["zstd", "-dc"], input=data[pos:],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                out = p.stdout
            elif kind == "xz":
                out = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[pos:])
            elif kind == "lzma":
                out = lzma.LZMADecompressor(format=lzma.FORMAT_ALONE).decompress(data[pos:])
            elif kind == "gzip":
                out = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[pos:])
        except FileNotFoundError:
            fail(2, f"the kernel image is {kind}-compressed and `{kind}` is not installed")
        except (lzma.LZMAError, zlib.error):
            continue
        if out and out[:4] == b"\x7fELF":
            return out
    fail(2, "could not find a vmlinux ELF inside the kernel image")


def elf_section(elf, wanted):
    """Return the bytes of section `wanted` of a little-endian ELF64 file."""
    if elf[4] != 2 or elf[5] != 1:
        fail(2, "only little-endian ELF64 kernels are supported")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)

    def shdr(i):
        # name, type, flags, addr, offset, size
        return struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize)

    stroff = shdr(shstrndx)[4]
    for i in range(shnum):
        name_off, _, _, _, off, size = shdr(i)
        end = elf.index(b"\0", stroff + name_off)
        if elf[stroff + name_off:end].decode() == wanted:
            return elf[off:off + size]
    fail(1, f"the kernel has no {wanted} section (CONFIG_DEBUG_INFO_BTF not set?)")


# Bytes following struct btf_type for each kind: (fixed, per-vlen-entry).
KIND_EXTRA = {1: (4, 0), 2: (0, 0), 3: (12, 0), 4: (0, 12), 5: (0, 12), 6: (0, 8),
              7: (0, 0), 8: (0, 0), 9: (0, 0), 10: (0, 0), 11: (0, 0), 12: (0, 0),
              13: (0, 8), 14: (4, 0), 15: (0, 12), 16: (0, 0), 17: (4, 0),
              18: (0, 0), 19: (0, 12)}
PTR, STRUCT, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FUNC_PROTO, TYPE_TAG = \
    2, 4, 8, 9, 10, 11, 12, 13, 18


def parse_btf(btf):
    magic, _ver, _flags, hdr_len = struct.unpack_from("<HBBI", btf, 0)
    if magic != 0xEB9F:
        fail(2, "bad BTF magic")
    type_off, type_len, str_off, _str_len = struct.unpack_from("<IIII", btf, 8)
    types_start = hdr_len + type_off
    strs = hdr_len + str_off

    def name(off):
        return btf[strs + off:btf.index(b"\0", strs + off)].decode()

    types = [None]  # type id 0 is void
    pos, end = types_start, types_start + type_len
    while pos < end:
        name_off, info, size_type = struct.unpack_from("<III", btf, pos)
        kind, vlen = (info >> 24) & 0x1F, info & 0xFFFF
        if kind not in KIND_EXTRA:
            fail(2, f"unknown BTF kind {kind}: this checker needs an update")
        fixed, per = KIND_EXTRA[kind]
        extra = btf[pos + 12:pos + 12 + fixed + per * vlen]
        params = []
        if kind == FUNC_PROTO:
            params = [struct.unpack_from("<II", extra, 8 * i) for i in range(vlen)]
        types.append((kind, name_off, size_type, params))
        pos += 12 + fixed + per * vlen
    return types, name


def is_prog_aux_ptr(types, name, tid):
    """True if type `tid` is (a qualified/typedef'd) pointer to struct bpf_prog_aux."""
    seen_ptr = False
    for _ in range(16):
        if tid == 0:
            return False
        kind, name_off, ref, _ = types[tid]
        if kind == PTR and not seen_ptr:
            seen_ptr = True
        elif kind == STRUCT:
            return seen_ptr and name(name_off) == "bpf_prog_aux"
        elif kind not in (TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG):
            return False
        tid = ref
    return False


def main():
    if len(sys.argv) != 2:
        fail(2, "usage: check-kernel-btf.py <vmlinuz|vmlinux|btf-file>")
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    if data[:2] == b"\x9f\xeb":
        btf = data
    else:
        elf = data if data[:4] == b"\x7fELF" else decompress_bzimage(data)
        btf = elf_section(elf, ".BTF")
    types, name = parse_btf(btf)

    found, broken = [], []
    for kind, name_off, ref, _ in types[1:]:
        if kind != FUNC or name(name_off) not in IMPLICIT_ARG_KFUNCS:
            continue
        fname = name(name_off)
        proto = types[ref]
        found.append(fname)
        if any(is_prog_aux_ptr(types, name, ptype) for _, ptype in proto[3]):
            broken.append(fname)
    if not found:
        fail(1, f"none of {', '.join(IMPLICIT_ARG_KFUNCS)} found in BTF (no sched_ext?)")
    if broken:
        fail(1, "BTF prototypes of " + ", ".join(broken) + " still carry the implicit "
             "'struct bpf_prog_aux *' argument (built with an old pahole); libbpf will "
             "refuse to load sched_ext schedulers on this kernel")
    print(f"check-kernel-btf: OK ({len(types) - 1} BTF types; "
          f"{', '.join(sorted(set(found)))} have no implicit aux argument)")


if __name__ == "__main__":
    main()
