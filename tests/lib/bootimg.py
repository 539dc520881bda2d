"""The image QEMU boots: a bzImage's own vmlinux, unpacked, where it can.

Under TCG a bzImage's decompressor runs in the guest: Debian's 6.1 (XZ)
spends about 4.4 s of every boot there, as long as a short test itself. A
vmlinux with a PVH entry note (CONFIG_PVH, which Debian's kernels have)
boots from QEMU's ELF loader with the same -append and -initrd: the same
kernel text, entered without the decompressor. boot_image() unpacks the
payload once into the kernel cache and returns that vmlinux; it returns
the bzImage itself when there is no PVH note, the payload's compression
cannot be undone here (zstd needs the zstd program), or PVH=0 asks for it.
"""
import bz2
import functools
import hashlib
import lzma
import os
import shutil
import struct
import subprocess
import zlib

import kver

XEN_ELFNOTE_PHYS32_ENTRY = 18


def _payload(img):
    """The compressed kernel inside a bzImage (boot protocol 2.08+), or None."""
    if len(img) < 0x250 or img[0x202:0x206] != b'HdrS':
        return None
    setup = (img[0x1f1] or 4) + 1
    off, length = struct.unpack_from('<II', img, 0x248)
    start = setup * 512 + off
    return img[start:start + length] if length and start + length <= len(img) else None


def _unpack(data):
    """The payload, decompressed; None for a format this cannot undo."""
    try:
        if data.startswith(b'\xfd7zXZ\x00'):
            return lzma.LZMADecompressor().decompress(data)
        if data.startswith(b'\x1f\x8b'):
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)
        if data.startswith(b'BZh'):
            return bz2.BZ2Decompressor().decompress(data)
        if data.startswith(b'\x28\xb5\x2f\xfd') and shutil.which('zstd'):
            # the length field counts 4 more bytes (the size) after the frame
            r = subprocess.run(['zstd', '-dcq'], input=data[:-4], capture_output=True)
            return r.stdout if r.returncode == 0 else None
    except (lzma.LZMAError, zlib.error, OSError, EOFError):
        return None
    return None


def has_pvh_note(elf):
    """Does this ELF64 image carry Xen's PHYS32_ENTRY note (the PVH entry)?"""
    if elf[:4] != b'\x7fELF' or elf[4] != 2:
        return False
    phoff, = struct.unpack_from('<Q', elf, 0x20)
    phentsize, phnum = struct.unpack_from('<HH', elf, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from('<IIQQQQ', elf,
                                                                 phoff + i * phentsize)
        if p_type != 4:         # PT_NOTE
            continue
        pos, end = p_offset, p_offset + p_filesz
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from('<III', elf, pos)
            name = elf[pos + 12:pos + 12 + namesz].rstrip(b'\0')
            if name == b'Xen' and ntype == XEN_ELFNOTE_PHYS32_ENTRY:
                return True
            pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False


@functools.lru_cache(maxsize=None)
def boot_image(bzimage):
    """What QEMU's -kernel gets for this bzImage (see the module's text);
    worked out once per process (a run boots the same kernel many times)."""
    if os.environ.get('PVH', '1') == '0':
        return bzimage
    img = open(bzimage, 'rb').read()
    key = hashlib.sha256(img).hexdigest()[:16]
    # beside the built kernels (scripts/build-kernel.sh's cache)
    path = os.path.join(os.path.dirname(kver.cache_dir('guest')), 'pvh', 'vmlinux-' + key)
    none = path + '.none'           # known not to boot through PVH
    if os.path.exists(path):
        return path
    if os.path.exists(none):
        return bzimage
    os.makedirs(os.path.dirname(path), exist_ok=True)
    payload = _payload(img)
    elf = _unpack(payload) if payload else None
    if not elf or not has_pvh_note(elf):
        # zstd may be installed later: only a PVH-less kernel is final
        if elf:
            open(none, 'w').close()
        return bzimage
    tmp = '%s.%d' % (path, os.getpid())
    with open(tmp, 'wb') as f:
        f.write(elf)
    os.replace(tmp, path)
    return path
