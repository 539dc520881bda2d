#!/usr/bin/env python3
"""Build the test initramfs (uncompressed newc cpio) for the vbblk guest tests.

Contents: busybox-static (+ applet links), fio (its rbd, gluster, nbd, pmem
and RDMA engines' libraries replaced by stand-ins: scripts/stublibs.py), e2fsprogs, util-linux
blkdiscard/blockdev/fallocate, kmod (modprobe/insmod/rmmod/lsmod/modinfo),
sg3-utils, vbtool, sgfuzz, pcrec, vbmark, vbuio and vbexer (static, from tests/tools/ and bench/tools/),
the guest kernel's virtio,
ext4, 9p and null_blk modules (+ depmod data), vbblk.ko (if present) and the
test-only modules given with --test-ko (tests/kmod) in /lib/modules/<ver>/extra,
the guest test scripts (/tests), vbblk-bind.sh, vbblk-compare.sh, /init.

With --user-install the module and its configuration are installed the way a
user installs them (`make install`, `make install-conf` into the image) and
systemd-udevd comes along, for the install test; --vbblk-dir puts a given
vbblk.ko elsewhere than extra/ (the DKMS test: updates/dkms).

usage: scripts/mkinitramfs.py [-o OUT] [--kver VER] [--vbblk-ko PATH] [--stage DIR]
                              [--vbblk-dir DIR | --user-install] [--test-ko PATH ...]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, 'tests', 'lib'))
sys.path.insert(0, os.path.join(REPO, 'scripts'))
import kver as kv  # noqa: E402
import stublibs  # noqa: E402

# Modules the guest needs (dependencies are resolved through modules.dep).
MODULES = ['virtio_pci', 'virtio_blk', 'ext4', 'crc32c_generic', 'crc32c-intel',
           '9p', '9pnet_virtio', 'null_blk']
# ext4's crc32c as a crypto module: gone where crc32c became a library call
# that ext4 links against (7.x).
OPTIONAL = ('crc32c_generic', 'crc32c-intel')

# (host path, names to expose in the guest's /usr/sbin or /usr/bin)
BINARIES = [
    ('/usr/bin/fio', []),
    ('/usr/sbin/mke2fs', ['/usr/sbin/mkfs.ext4']),
    ('/usr/sbin/e2fsck', ['/usr/sbin/fsck.ext4']),
    ('/usr/sbin/resize2fs', []),
    ('/usr/sbin/tune2fs', []),
    ('/usr/sbin/dumpe2fs', []),
    ('/usr/sbin/blkdiscard', []),
    ('/usr/sbin/blockdev', []),
    ('/usr/bin/fallocate', []),
    ('/usr/bin/setpriv', []),
    # sg3-utils: the SG_IO test (tests/groups/scsi/sg_io.sh)
    ('/usr/bin/sg_inq', []), ('/usr/bin/sg_vpd', []), ('/usr/bin/sg_readcap', []),
    ('/usr/bin/sg_turs', []), ('/usr/bin/sg_sync', []), ('/usr/bin/sg_dd', []),
    ('/usr/bin/sg_unmap', []), ('/usr/bin/sg_write_same', []), ('/usr/bin/sg_modes', []),
    ('/usr/bin/sg_luns', []), ('/usr/bin/sg_requests', []), ('/usr/bin/sg_raw', []),
    ('/usr/bin/kmod', ['/usr/sbin/modprobe', '/usr/sbin/insmod', '/usr/sbin/rmmod',
                       '/usr/sbin/lsmod', '/usr/sbin/modinfo', '/usr/sbin/depmod',
                       '/sbin/modprobe']),
]


# --user-install: udev, and the upstream rules the install test relies on
# (the disks' group and mode, modalias loading, /dev/disk/by-id links)
UDEV_BINARIES = [('/lib/systemd/systemd-udevd', []), ('/bin/udevadm', [])]
UDEV_RULES = ['/lib/udev/rules.d/50-udev-default.rules',
              '/lib/udev/rules.d/60-persistent-storage.rules',
              '/lib/udev/rules.d/80-drivers.rules']


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def copy_file(src, root, dst=None):
    dst = os.path.join(root, (dst or src).lstrip('/'))
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.lexists(dst):
        os.unlink(dst)
    shutil.copy2(os.path.realpath(src), dst)
    return dst


def symlink(target, root, path):
    p = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    if os.path.lexists(p):
        os.unlink(p)
    os.symlink(target, p)


def libs_of(binary, env=None):
    out = subprocess.run(['ldd', binary], capture_output=True, text=True, env=env).stdout
    libs = []
    for line in out.splitlines():
        m = re.search(r'=>\s*(/\S+)', line) or re.match(r'\s*(/\S+)', line)
        if m:
            libs.append(m.group(1))
    return libs


def module_files(ver, names, root='/'):
    """Module files (paths under root) of names and their dependencies."""
    files = []
    for n in names:
        r = subprocess.run(['modprobe', '--show-depends', '-S', ver, '-d', root, n],
                           capture_output=True, text=True)
        if r.returncode and n in OPTIONAL and 'not found' in r.stderr:
            continue
        if r.returncode:
            raise SystemExit('mkinitramfs: cannot resolve module %s for %s: %s'
                             % (n, ver, r.stderr.strip()))
        for line in r.stdout.splitlines():
            w = line.split()
            if w and w[0] == 'insmod':
                f = '/' + os.path.relpath(os.path.normpath(w[1]), root)
                if f not in files:
                    files.append(f)
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('-o', '--out', default=os.path.join(REPO, 'tests/out/build/initramfs.cpio'))
    ap.add_argument('--kver', default=None)
    ap.add_argument('--vbblk-ko', default=os.environ.get('VBBLK_KO', os.path.join(REPO, 'vbblk.ko')))
    ap.add_argument('--stage', default=None)
    ap.add_argument('--vbblk-dir', default='extra',
                    help='directory under /lib/modules/<ver> for vbblk.ko (default extra)')
    ap.add_argument('--user-install', action='store_true',
                    help='make install + make install-conf into the image, add udev')
    ap.add_argument('--vbtool', default=None, help='prebuilt vbtool (default: compile)')
    ap.add_argument('--test-ko', action='append', default=[],
                    help='a test-only module (tests/kmod) for extra/; repeatable')
    a = ap.parse_args()

    ver = a.kver or kv.guest_kver()
    stage = a.stage or os.path.join(os.path.dirname(os.path.abspath(a.out)), 'initramfs-root')
    if os.path.exists(stage):
        shutil.rmtree(stage)
    os.makedirs(stage)
    for d in ['bin', 'sbin', 'usr/bin', 'usr/sbin', 'lib/x86_64-linux-gnu', 'lib64', 'proc',
              'sys', 'dev', 'tmp', 'host', 'mnt', 'etc', 'root', 'run', 'tests', 'var/tmp']:
        os.makedirs(os.path.join(stage, d), exist_ok=True)

    # busybox + applet links (real tools copied later replace the links)
    bb = shutil.which('busybox') or '/bin/busybox'
    copy_file(bb, stage, '/bin/busybox')
    for app in subprocess.run([bb, '--list-full'], capture_output=True, text=True,
                              check=True).stdout.split():
        if app != 'bin/busybox':
            symlink('/bin/busybox', stage, '/' + app)

    # dynamically linked tools + their libraries + loader; fio's unused
    # engines get stand-ins (scripts/stublibs.py), not 84 MB of libraries
    stubdir = os.path.join(os.path.dirname(stage), 'stublibs')
    # (a missing fio is reported below, with the other tools)
    fio = '/usr/bin/fio'
    stubs = stublibs.build(fio, libs_of(fio), stubdir) if os.path.exists(fio) else {}
    libs = set()
    for path, aliases in BINARIES + (UDEV_BINARIES if a.user_install else []):
        if not os.path.exists(path):
            raise SystemExit('mkinitramfs: missing %s (run scripts/install-deps.sh)' % path)
        copy_file(path, stage)
        for al in aliases:
            symlink(path, stage, al)
        env = dict(os.environ, LD_LIBRARY_PATH=stubdir) if path == fio else None
        libs.update(libs_of(path, env))
    for lib in sorted(libs):
        name = os.path.basename(lib)
        if os.path.dirname(lib) == stubdir:
            copy_file(lib, stage, '/lib/x86_64-linux-gnu/' + name)
        elif name in stubs:
            raise SystemExit('mkinitramfs: %s needs the real %s: drop it from '
                             'scripts/stublibs.py ENGINES' % (lib, name))
        else:
            copy_file(lib, stage)

    # vbtool (static)
    vbtool = os.path.join(stage, 'usr/bin/vbtool')
    if a.vbtool:
        copy_file(a.vbtool, stage, '/usr/bin/vbtool')
    else:
        run(['gcc', '-static', '-O2', '-Wall', '-Wextra', '-Werror', '-o', vbtool,
             os.path.join(REPO, 'tests/tools/vbtool.c')])
    # pcrec: the power-cut test's record writer and checker (static)
    run(['gcc', '-static', '-O2', '-Wall', '-Wextra', '-Werror', '-o',
         os.path.join(stage, 'usr/bin/pcrec'), os.path.join(REPO, 'tests/tools/pcrec.c')])
    # sgfuzz: random SG_IO commands (static)
    run(['gcc', '-static', '-O2', '-Wall', '-Wextra', '-Werror', '-o',
         os.path.join(stage, 'usr/bin/sgfuzz'), os.path.join(REPO, 'tests/tools/sgfuzz.c')])
    # vbfail: fault injection driver of the faultinject test (static)
    run(['gcc', '-static', '-O2', '-Wall', '-Wextra', '-Werror', '-o',
         os.path.join(stage, 'usr/bin/vbfail'), os.path.join(REPO, 'tests/tools/vbfail.c')])
    # vbmark: the bench's marker for the kinsn QEMU plugin (static)
    run(['gcc', '-static', '-O2', '-Wall', '-Wextra', '-Werror', '-o',
         os.path.join(stage, 'usr/bin/vbmark'), os.path.join(REPO, 'bench/tools/vbmark.c')])
    # vbuio: io_uring load on the passthrough device or the block device (static)
    run(['gcc', '-static', '-O2', '-Wall', '-Wextra', '-Werror',
         '-I' + os.path.join(REPO, 'include/uapi'), '-o',
         os.path.join(stage, 'usr/bin/vbuio'), os.path.join(REPO, 'bench/tools/vbuio.c'),
         '-luring'])
    # vbexer: the model-checked exerciser (tests/groups/uring/exercise.sh)
    run(['gcc', '-static', '-O2', '-Wall', '-Wextra', '-Werror',
         '-I' + os.path.join(REPO, 'include/uapi'), '-o',
         os.path.join(stage, 'usr/bin/vbexer'), os.path.join(REPO, 'tests/tools/vbexer.c'),
         '-luring'])
    # vbblk-uring: the passthrough example (examples/; the uring_example test)
    run(['gcc', '-static', '-O2', '-Wall', '-Wextra', '-Werror',
         '-I' + os.path.join(REPO, 'include/uapi'), '-o',
         os.path.join(stage, 'usr/bin/vbblk-uring'),
         os.path.join(REPO, 'examples/vbblk-uring.c'), '-luring'])

    # kernel modules
    mdir = '/lib/modules/%s' % ver
    mroot = kv.modroot(ver)    # '/' but for a kernel of scripts/build-kernel.sh
    for f in module_files(ver, MODULES, mroot):
        copy_file(mroot + f, stage, f)
    for f in ['modules.order', 'modules.builtin', 'modules.builtin.modinfo']:
        if os.path.exists(mroot + mdir + '/' + f):
            copy_file(mroot + mdir + '/' + f, stage, mdir + '/' + f)
    have_vbblk = os.path.exists(a.vbblk_ko)
    if a.user_install:
        # as a user would: the Makefile installs and runs depmod
        kdir = kv.kdir(ver)
        run(['make', '-s', '-C', REPO, 'KDIR=' + kdir, 'INSTALL_MOD_PATH=' + stage,
             'install'], stdout=subprocess.DEVNULL)
        run(['make', '-s', '-C', REPO, 'DESTDIR=' + stage, 'install-conf'],
            stdout=subprocess.DEVNULL)
        for r in UDEV_RULES:
            copy_file(r, stage)
        have_vbblk = False
    else:
        if have_vbblk:
            copy_file(a.vbblk_ko, stage, '%s/%s/vbblk.ko' % (mdir, a.vbblk_dir))
        for k in a.test_ko:
            copy_file(k, stage, '%s/extra/%s' % (mdir, os.path.basename(k)))
        run(['depmod', '-b', stage, ver])

    # scripts
    copy_file(os.path.join(REPO, 'tests/guest/init'), stage, '/init')
    os.chmod(os.path.join(stage, 'init'), 0o755)
    gdir = os.path.join(REPO, 'tests/guest')
    for f in sorted(os.listdir(gdir)):
        if f != 'init':
            copy_file(os.path.join(gdir, f), stage, '/tests/' + f)
    # each group's guest scripts (tests/groups/GROUP/NAME.sh) as /tests/NAME.sh
    groups = os.path.join(REPO, 'tests/groups')
    for g in sorted(os.listdir(groups)):
        for f in sorted(os.listdir(os.path.join(groups, g))):
            if f.endswith('.sh'):
                if os.path.exists(os.path.join(stage, 'tests', f)):
                    raise SystemExit('mkinitramfs: two guest scripts named %s' % f)
                copy_file(os.path.join(groups, g, f), stage, '/tests/' + f)
    # the benchmark's guest script and fio job files (bench/compare)
    copy_file(os.path.join(REPO, 'bench/guest/compare.sh'), stage, '/tests/compare.sh')
    jdir = os.path.join(REPO, 'bench/jobs')
    for f in sorted(os.listdir(jdir)):
        copy_file(os.path.join(jdir, f), stage, '/tests/jobs/' + f)
    for s in ('vbblk-bind.sh', 'vbblk-compare.sh'):
        copy_file(os.path.join(REPO, 'scripts', s), stage, '/usr/sbin/' + s)
        os.chmod(os.path.join(stage, 'usr/sbin', s), 0o755)

    with open(os.path.join(stage, 'etc/passwd'), 'w') as f:
        f.write('root:x:0:0:root:/root:/bin/sh\n')
    with open(os.path.join(stage, 'etc/group'), 'w') as f:
        f.write('root:x:0:\n')
    symlink('/proc/mounts', stage, '/etc/mtab')
    with open(os.path.join(stage, 'etc/vbtest-build'), 'w') as f:
        f.write('kver=%s\nvbblk=%s\n' % (ver, a.vbblk_ko if have_vbblk else ''))
    os.mknod(os.path.join(stage, 'dev/console'), 0o600 | 0o020000, os.makedev(5, 1))
    os.mknod(os.path.join(stage, 'dev/null'), 0o666 | 0o020000, os.makedev(1, 3))

    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    tmp = a.out + '.tmp'
    with open(tmp, 'wb') as out:
        find = subprocess.Popen(['find', '.', '-print0'], cwd=stage, stdout=subprocess.PIPE)
        run(['cpio', '--null', '-o', '-H', 'newc', '--quiet', '--reproducible'],
            cwd=stage, stdin=find.stdout, stdout=out)
        if find.wait():
            raise SystemExit('mkinitramfs: find failed')
    os.replace(tmp, a.out)
    print('mkinitramfs: %s (%d MiB, kernel %s, vbblk.ko: %s%s)'
          % (a.out, os.path.getsize(a.out) >> 20, ver, a.vbblk_ko if have_vbblk else 'absent',
             ''.join(', %s' % os.path.basename(k) for k in a.test_ko)))


if __name__ == '__main__':
    main()
