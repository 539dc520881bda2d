"""The `install` and `dkms` tests: vbblk installed the way users install it.

install: modinfo of the built module is complete (and every parameter has
its heading in docs/parameters.md); `make install` / `make uninstall` into a
scratch INSTALL_MOD_PATH add and remove the module and its modules.dep line; then a
guest whose image was filled by `make install` + `make install-conf` boots
with systemd-udevd and runs tests/groups/install/install.sh (recipes A and B of
conf/vbblk.conf, the udev rule binding a disk by serial).

dkms: `make dkms-install` on this machine (dkms add/build/install for the
guest kernel), the kernel packages' postinst hook rebuilding an unbuilt
module, `make dkms-uninstall` leaving nothing behind; the module DKMS built
boots in a guest from updates/dkms and passes a smoke test.
"""
import os
import re
import shutil
import subprocess
import sys

import kver as kv
from cases import REPO
from vm import Disk, Guest



class Fail(Exception):
    pass


def _sh(log, cmd, check=True, **kw):
    """Run cmd, append its output to log; raise Fail on a non-zero exit."""
    with open(log, 'a') as f:
        f.write('$ %s\n' % ' '.join(cmd))
        f.flush()
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
        f.write(r.stdout)
    if check and r.returncode:
        tail = r.stdout.strip().splitlines()[-3:]
        raise Fail('`%s` exited %d: %s' % (' '.join(cmd), r.returncode, ' | '.join(tail)))
    return r.stdout


def _version():
    return subprocess.run(['make', '-s', '-C', REPO, 'version'], capture_output=True,
                          text=True, check=True).stdout.strip()


def documented_params(path):
    """The module parameters docs/parameters.md documents: the ### `name`
    headings of its "## Module parameters" section."""
    names, inside = set(), False
    with open(path) as f:
        for line in f:
            if line.startswith('## '):
                inside = line.strip() == '## Module parameters'
            m = re.match(r'^### `([a-z0-9_]+)`\s*$', line)
            if inside and m:
                names.add(m.group(1))
    return names


def check_modinfo(ko, version):
    """Description, version, author, license, and a described default for
    every parameter, each of which docs/parameters.md documents."""
    info = subprocess.run(['modinfo', ko], capture_output=True, text=True, check=True).stdout
    fields = {}
    parms = {}
    for line in info.splitlines():
        k, _, v = line.partition(':')
        v = v.strip()
        if k == 'parm':
            name, _, desc = v.partition(':')
            parms[name] = desc
        else:
            fields[k] = v
    for k in ('description', 'author', 'license', 'version'):
        if not fields.get(k):
            raise Fail('modinfo has no %s' % k)
    if fields['version'] != version:
        raise Fail('modinfo version %r, git describe says %r' % (fields['version'], version))
    if fields['license'] != 'GPL':
        raise Fail('license %r' % fields['license'])
    documented = documented_params(os.path.join(REPO, 'docs', 'parameters.md'))
    for name, desc in parms.items():
        if not re.search(r'\(default: [^)]+\)$', desc):
            raise Fail('parameter %s: description without "(default: ...)": %r' % (name, desc))
        if name not in documented:
            raise Fail('parameter %s has no heading in docs/parameters.md' % name)
    if len(parms) < 8:
        raise Fail('only %d parameters in modinfo' % len(parms))


def _make_install_cycle(outdir, ver, log):
    stage = os.path.join(outdir, 'modroot')
    shutil.rmtree(stage, ignore_errors=True)
    common = ['make', '-C', REPO, 'KDIR=' + kv.kdir(ver), 'INSTALL_MOD_PATH=' + stage]
    mdir = os.path.join(stage, 'lib', 'modules', ver)
    _sh(log, common + ['install'])
    if not os.path.isfile(os.path.join(mdir, 'updates', 'vbblk.ko')):
        raise Fail('make install: no %s/updates/vbblk.ko' % mdir)
    if not re.search(r'^updates/vbblk\.ko:', open(os.path.join(mdir, 'modules.dep')).read(), re.M):
        raise Fail('make install: modules.dep has no updates/vbblk.ko line (depmod not run?)')
    hdr = os.path.join(stage, 'usr', 'local', 'include', 'linux', 'vbblk.h')
    if not os.path.isfile(hdr):
        raise Fail('make install: no passthrough header %s' % hdr)
    _sh(log, common + ['uninstall'])
    if os.path.exists(hdr):
        raise Fail('make uninstall left %s behind' % hdr)
    if any(f.startswith('vbblk.ko') for f in os.listdir(os.path.join(mdir, 'updates'))):
        raise Fail('make uninstall left the module behind')
    if 'vbblk' in open(os.path.join(mdir, 'modules.dep')).read():
        raise Fail('make uninstall: modules.dep still names vbblk')
    shutil.rmtree(stage)


def _initramfs(outdir, ver, log, *args):
    out = os.path.join(outdir, 'initramfs.cpio')
    _sh(log, [sys.executable, os.path.join(REPO, 'scripts', 'mkinitramfs.py'), '-o', out,
              '--kver', ver, '--stage', os.path.join(outdir, 'initramfs-root')] + list(args))
    return out


def _boot(outdir, ctx, initrd, disks, append, params=''):
    g = Guest('install', os.path.join(outdir, 'guest'), ctx['kernel'], initrd, disks=disks,
              driver='vbblk', timeout=int(300 * ctx['scale']), imgdir=ctx['imgdir'],
              append=append, vbblk_params=params)
    res = g.run()
    if not res.ok:
        raise Fail('guest: %s (console: %s)' % (res.reason, g.console))
    shutil.rmtree(os.path.join(outdir, 'initramfs-root'), ignore_errors=True)


def run_install(outdir, ctx):
    os.makedirs(outdir, exist_ok=True)
    log = os.path.join(outdir, 'install.log')
    open(log, 'w').close()
    ver, version = ctx['kver'], _version()
    try:
        check_modinfo(ctx['ko'], version)
        _make_install_cycle(outdir, ver, log)
        initrd = _initramfs(outdir, ver, log, '--user-install')
        disks = [Disk('root', '64M', serial='ROOT-1'), Disk('inst1', '64M', serial='INST-1'),
                 Disk('inst2', '64M', serial='INST-2')]
        _boot(outdir, ctx, initrd, disks, 'vbinst=user vbversion=%s' % version)
    except Fail as e:
        return str(e)
    return None


def _dkms_status(log, version, ver):
    return _sh(log, ['dkms', 'status', 'vbblk/%s' % version, '-k', ver]).strip()


def run_dkms(outdir, ctx):
    os.makedirs(outdir, exist_ok=True)
    log = os.path.join(outdir, 'dkms.log')
    open(log, 'w').close()
    if not shutil.which('dkms'):
        return 'dkms is not installed (scripts/install-deps.sh installs it)'
    ver, version = ctx['kver'], _version()
    ko = '/lib/modules/%s/updates/dkms/vbblk.ko' % ver
    # every kernel with headers, as a user's `make dkms-install` does
    kernels = [ver] + kv.others()
    mk = ['make', '-C', REPO, 'DKMS_KERNELS=' + ' '.join(kernels)]
    try:
        return _dkms_cycle(outdir, ctx, log, ver, kernels, version, ko, mk)
    except Fail as e:
        return str(e)
    finally:
        # never leave this test's registration on the machine
        if _sh(log, ['dkms', 'status', 'vbblk/%s' % version], check=False).strip():
            _sh(log, mk + ['dkms-uninstall'], check=False)


def _dkms_cycle(outdir, ctx, log, ver, kernels, version, ko, mk):
    """mk: make with DKMS_KERNELS=kernels; ver: the guest kernel, which
    also gets the upgrade-hook check and the boot."""
    # a previous, interrupted run of this version
    if _sh(log, ['dkms', 'status', 'vbblk/%s' % version]).strip():
        _sh(log, mk + ['dkms-uninstall'])
    _sh(log, mk + ['dkms-install'])
    for k in kernels:
        st = _dkms_status(log, version, k)
        if 'installed' not in st:
            raise Fail('after make dkms-install, dkms status for %s says %r' % (k, st))
    if not os.path.isfile(ko):
        raise Fail('dkms install: no %s' % ko)
    found = _sh(log, ['modinfo', '-k', ver, '-F', 'filename', 'vbblk']).strip()
    if found != ko:
        raise Fail('modinfo -k %s vbblk finds %r, not the DKMS module' % (ver, found))

    # a kernel upgrade: the kernel package's hook builds what is missing
    _sh(log, ['dkms', 'uninstall', 'vbblk/%s' % version, '-k', ver])
    _sh(log, ['dkms', 'unbuild', 'vbblk/%s' % version, '-k', ver])
    st = _dkms_status(log, version, ver)
    if 'added' not in st or os.path.exists(ko):
        raise Fail('unbuild left %r, module file present: %s' % (st, os.path.exists(ko)))
    _sh(log, ['/etc/kernel/postinst.d/dkms', ver, kv.vmlinuz(ver)])
    st = _dkms_status(log, version, ver)
    if 'installed' not in st or not os.path.isfile(ko):
        raise Fail('the kernel postinst hook did not rebuild the module: %r' % st)
    built = os.path.join(outdir, 'vbblk-dkms.ko')
    shutil.copy2(ko, built)

    _sh(log, mk + ['dkms-uninstall'])
    left = [p for p in (ko, '/usr/src/vbblk-%s' % version, '/var/lib/dkms/vbblk/%s' % version)
            if os.path.exists(p)]
    if left or _sh(log, ['dkms', 'status', 'vbblk/%s' % version]).strip():
        raise Fail('make dkms-uninstall left %s' % (left or 'a dkms status line'))

    initrd = _initramfs(outdir, ver, log, '--vbblk-ko', built, '--vbblk-dir', 'updates/dkms')
    _boot(outdir, ctx, initrd, [Disk('inst1', '64M', serial='INST-1')],
          'vbinst=dkms vbversion=%s' % version, ctx['params'])
    return None


# ---- debpkg: the Debian package in an image of Debian's ---------------------
# The image is this machine's own Debian 12 under an overlay (changes go to
# a tmpfs, / is never written), chrooted into: dpkg, apt, dkms and the kernel
# headers are Debian's own, and the overlay's upper layer shows exactly what
# installing and purging the package left behind.

DEB_FILES = {  # installed path: the source it must equal (None: exists)
    '/etc/modprobe.d/vbblk.conf': 'conf/vbblk.conf',
    '/etc/vbblk/disks': 'conf/disks',
    '/usr/sbin/vbblk-bind': 'scripts/vbblk-bind.sh',
    '/usr/sbin/vbblk-compare': 'scripts/vbblk-compare.sh',
    '/usr/include/linux/vbblk.h': 'include/uapi/linux/vbblk.h',
    '/lib/udev/rules.d/60-vbblk.rules': None,
    '/lib/udev/vbblk-udev': None,
    '/usr/share/vbblk/jobs/randread-qd1.fio': 'bench/jobs/randread-qd1.fio',
    '/usr/share/man/man8/vbblk-bind.8.gz': None,
    '/usr/share/man/man8/vbblk-compare.8.gz': None,
}
DEB_CONFFILES = ('/etc/modprobe.d/vbblk.conf', '/etc/vbblk/disks')


def _image_up(img, log):
    """An overlay over / at img/root, its changes in img/upper."""
    os.makedirs(img)
    _sh(log, ['mount', '-t', 'tmpfs', '-o', 'size=4g', 'vbblk-debpkg', img])
    for d in ('upper', 'work', 'root'):
        os.makedirs(os.path.join(img, d))
    root = os.path.join(img, 'root')
    _sh(log, ['mount', '-t', 'overlay', 'overlay', '-o', 'lowerdir=/,upperdir=%s/upper,'
              'workdir=%s/work' % (img, img), root])
    for d in ('proc', 'sys', 'dev'):
        _sh(log, ['mount', '--bind', '/' + d, os.path.join(root, d)])
    return root


def _image_down(img, log):
    if os.path.ismount(img):
        _sh(log, ['umount', '-R', img], check=False)
    if not os.path.ismount(img):
        shutil.rmtree(img, ignore_errors=True)


def _in_image(root, log, *cmd, check=True):
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    return _sh(log, ['chroot', root] + list(cmd), check=check, env=env)


def _left(upper):
    """Paths under the overlay's upper layer naming vbblk that are not
    whiteouts (a deleted file of the lower layer), i.e. what the package
    put in the image and is still there."""
    left = []
    for d, dirs, files in os.walk(upper):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            whiteout = (st.st_mode & 0o170000) == 0o020000 and st.st_rdev == 0
            if 'vbblk' in os.path.relpath(p, upper) and not whiteout:
                left.append('/' + os.path.relpath(p, upper))
    return sorted(left)


def run_debpkg(outdir, ctx):
    os.makedirs(outdir, exist_ok=True)
    log = os.path.join(outdir, 'debpkg.log')
    open(log, 'w').close()
    img = os.path.join(outdir, 'image')
    _image_down(img, log)
    try:
        return _debpkg(outdir, ctx, log, img)
    except Fail as e:
        return str(e)
    finally:
        _image_down(img, log)


def _debpkg(outdir, ctx, log, img):
    ver = ctx['kver']
    # make deb, as a user runs it (a fresh copy of the tree, version from git)
    out = _sh(log, ['make', '-s', '-C', REPO, 'deb', 'DEBDIR=' + outdir])
    m = re.search(r'^build-deb: (/\S+\.deb)$', out, re.M)
    if not m:
        raise Fail('make deb printed no .deb path (see %s)' % log)
    deb = m.group(1)
    version = re.match(r'vbblk-dkms_(.+)_all\.deb$', os.path.basename(deb)).group(1)
    if shutil.which('lintian'):
        tags = [t for t in _sh(log, ['lintian', '-I', '-E', '--pedantic', deb],
                               check=False).splitlines() if re.match(r'^[EWIPX]: ', t)]
        if tags:
            raise Fail('lintian: %s' % '; '.join(tags[:5]))

    root = _image_up(img, log)
    upper = os.path.join(img, 'upper')
    shutil.copy2(deb, os.path.join(root, 'tmp'))
    ideb = '/tmp/' + os.path.basename(deb)
    _in_image(root, log, 'apt-get', 'install', '-y', ideb)
    os.unlink(os.path.join(root, ideb.lstrip('/')))
    # DKMS built it for every kernel of the image that has headers
    mods = os.path.join(root, 'lib', 'modules')
    kernels = [k for k in os.listdir(mods) if os.path.exists(os.path.join(mods, k, 'build'))]
    if ver not in kernels:
        raise Fail('the image has no headers for the guest kernel %s' % ver)
    for k in kernels:
        st = _in_image(root, log, 'dkms', 'status', 'vbblk/%s' % version, '-k', k).strip()
        if not st.endswith('installed'):
            raise Fail('after apt-get install, dkms status for %s says %r' % (k, st))
    ko = os.path.join(mods, ver, 'updates', 'dkms', 'vbblk.ko')
    if not os.path.isfile(ko):
        raise Fail('apt-get install: no /lib/modules/%s/updates/dkms/vbblk.ko' % ver)
    for path, src in DEB_FILES.items():
        p = os.path.join(root, path.lstrip('/'))
        if not os.path.isfile(p):
            raise Fail('the package did not install %s' % path)
        if src and open(p, 'rb').read() != open(os.path.join(REPO, src), 'rb').read():
            raise Fail('%s differs from %s' % (path, src))
    rule = open(os.path.join(root, 'lib/udev/rules.d/60-vbblk.rules')).read()
    if 'RUN+="/lib/udev/vbblk-udev %k"' not in rule:
        raise Fail('60-vbblk.rules does not run /lib/udev/vbblk-udev')
    if 'VBBLK_BIND:-/usr/sbin/vbblk-bind}' not in open(os.path.join(root, 'lib/udev/vbblk-udev')).read():
        raise Fail('vbblk-udev does not call /usr/sbin/vbblk-bind')

    # boot: the module DKMS built, and the package's files from the image
    built = os.path.join(outdir, 'vbblk-debpkg.ko')
    shutil.copy2(ko, built)
    files = os.path.join(outdir, 'pkgfiles')
    shutil.rmtree(files, ignore_errors=True)
    for path in DEB_FILES:
        dst = os.path.join(files, path.lstrip('/'))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(root, path.lstrip('/')), dst)
    initrd = _initramfs(outdir, ver, log, '--vbblk-ko', built, '--vbblk-dir', 'updates/dkms')
    # a second cpio after the first: the kernel unpacks both, in order
    with open(initrd, 'ab') as f:
        find = subprocess.Popen(['find', '.', '-print0'], cwd=files, stdout=subprocess.PIPE)
        subprocess.run(['cpio', '--null', '-o', '-H', 'newc', '--quiet', '--reproducible'],
                       cwd=files, stdin=find.stdout, stdout=f, check=True)
        find.wait()
    _boot(outdir, ctx, initrd, [Disk('inst1', '64M', serial='INST-1')],
          'vbinst=deb vbversion=%s' % version)

    # remove: all but the conffiles goes; purge: nothing is left
    _in_image(root, log, 'apt-get', 'remove', '-y', 'vbblk-dkms')
    gone = [p for p in ['/usr/src/vbblk-%s' % version, '/var/lib/dkms/vbblk',
                        '/lib/modules/%s/updates/dkms/vbblk.ko' % ver] +
            [p for p in DEB_FILES if p not in DEB_CONFFILES]
            if os.path.lexists(os.path.join(root, p.lstrip('/')))]
    if gone:
        raise Fail('apt-get remove left %s' % ', '.join(gone))
    kept = [p for p in DEB_CONFFILES if not os.path.exists(os.path.join(root, p.lstrip('/')))]
    if kept:
        raise Fail('apt-get remove took the conffiles %s (purge does)' % ', '.join(kept))
    _in_image(root, log, 'apt-get', 'purge', '-y', 'vbblk-dkms')
    left = _left(upper)
    if left:
        raise Fail('apt-get purge left %s' % ', '.join(left[:8]))
    if _in_image(root, log, 'dkms', 'status', 'vbblk').strip():
        raise Fail('apt-get purge left a dkms status line')
    for k in kernels:
        if 'vbblk' in open(os.path.join(mods, k, 'modules.dep')).read():
            raise Fail('apt-get purge: %s modules.dep still names vbblk' % k)
    return None
