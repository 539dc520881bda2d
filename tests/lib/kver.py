"""Find the guest kernel: the one Debian's linux-image-amd64 stands for (6.1
on Debian 12) when it is usable, else the newest /boot/vmlinuz-*-amd64; usable
means matching /lib/modules/<ver> and /usr/src/linux-headers-<ver>
directories. Override with the KVER environment variable. others() lists the
remaining usable kernels (the `kernels` test runs a subset on each).

KERNEL=NAME picks a kernel built by scripts/build-kernel.sh NAME (debug,
kcsan, guest; debug-7.2 for debug built from Debian's linux-source-7.2), or
KERNEL=7.2 Debian's own kernel of that series (scripts/debian-kernel.sh),
instead: ensure_built() builds it (or finds it cached), and
vmlinuz/kdir/modroot of its release point into the cache. A named kernel
runs slower than Debian's (KASAN, lockdep, KCSAN): its fragments'
`# timeout-scale: N` line (the last one) scales every test timeout
(timeout_scale())."""
import functools
import glob
import os
import re
import subprocess


def _vkey(v):
    return [int(x) if x.isdigit() else x for x in re.split(r'[.\-+~]', v)]


def candidates():
    out = []
    for k in glob.glob('/boot/vmlinuz-*-amd64'):
        ver = os.path.basename(k)[len('vmlinuz-'):]
        if os.path.isdir('/lib/modules/%s/kernel' % ver) and \
           os.path.isdir('/usr/src/linux-headers-%s' % ver):
            out.append(ver)
    return sorted(out, key=_vkey)


def _debian_default():
    """The release linux-image-amd64 depends on, or None."""
    r = subprocess.run(['dpkg-query', '-W', '-f=${Depends}', 'linux-image-amd64'],
                       capture_output=True, text=True)
    m = re.search(r'linux-image-(\S+)', r.stdout) if r.returncode == 0 else None
    return m.group(1) if m else None


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(REPO, 'scripts', 'build-kernel.sh')


@functools.lru_cache(maxsize=None)
def cache_dir(name):
    """The cache directory scripts/build-kernel.sh gives kernel name."""
    return subprocess.run([BUILD, '--path', name], capture_output=True, text=True,
                          check=True).stdout.strip()


def ensure_built(name):
    """Build KERNEL=name if its inputs changed (progress goes to stdout);
    return its release."""
    r = subprocess.run([BUILD, name])
    if r.returncode:
        raise SystemExit('scripts/build-kernel.sh %s failed' % name)
    return open(os.path.join(cache_dir(name), 'release')).read().strip()


def named():
    """{release: cache directory} of the named kernels built so far."""
    out = {}
    root = os.path.dirname(cache_dir('guest'))
    for d in glob.glob(os.path.join(root, '*', 'release')):
        if os.path.exists(os.path.join(os.path.dirname(d), 'vmlinuz')):
            out[open(d).read().strip()] = os.path.dirname(d)
    return out


def guest_kver():
    v = os.environ.get('KVER')
    if v:
        return v
    name = os.environ.get('KERNEL')
    if name:
        f = os.path.join(cache_dir(name), 'release')
        if not os.path.exists(f):
            raise SystemExit('KERNEL=%s is not built: scripts/build-kernel.sh %s' % (name, name))
        return open(f).read().strip()
    c = candidates()
    if not c:
        raise SystemExit('no usable guest kernel: need /boot/vmlinuz-<ver>-amd64 with '
                         '/lib/modules/<ver> and /usr/src/linux-headers-<ver> '
                         '(run scripts/install-deps.sh)')
    d = _debian_default()
    return d if d in c else c[-1]


def others():
    g = guest_kver()
    return [v for v in candidates() if v != g]


def vmlinuz(ver):
    d = named().get(ver)
    return os.path.join(d, 'vmlinuz') if d else '/boot/vmlinuz-%s' % ver


def kdir(ver):
    d = named().get(ver)
    return os.path.join(d, 'build') if d else '/usr/src/linux-headers-%s' % ver


def modroot(ver):
    """The root its /lib/modules/<ver> is under ('/' for Debian's)."""
    d = named().get(ver)
    return os.path.join(d, 'modroot') if d else '/'


@functools.lru_cache(maxsize=None)
def fragments(name):
    """The fragments scripts/build-kernel.sh builds kernel name from, in
    order ([] for a name it does not know)."""
    r = subprocess.run([BUILD, '--fragments', name], capture_output=True, text=True)
    return r.stdout.splitlines() if r.returncode == 0 else []


def _fragment_words(d, key):
    """Values of the `# key: value` lines of a named kernel's fragments (the
    repository's: comments do not make the kernel rebuild)."""
    out = []
    if os.path.exists(os.path.join(d, 'debian')):
        return out      # Debian's own kernel (scripts/debian-kernel.sh): no fragments
    lines = []
    for f in fragments(os.path.basename(d)):
        lines += open(f).readlines()
    for line in lines:
        m = re.match(r'#\s*%s:\s*(.*\S)' % key, line)
        if m:
            out.append(m.group(1))
    return out


def timeout_scale(ver):
    """How much slower than Debian's kernel a named kernel runs the suite."""
    d = named().get(ver)
    w = _fragment_words(d, 'timeout-scale') if d else []
    return float(w[-1]) if w else 1.0


def _named_dir(kernel):
    """The cache directory of the named kernel whose image is kernel, or None."""
    for d in named().values():
        if os.path.realpath(os.path.join(d, 'vmlinuz')) == os.path.realpath(kernel):
            return d
    return None


def machine(kernel):
    """QEMU -machine value for a kernel: a named kernel's `# machine:` line,
    else pc."""
    d = _named_dir(kernel)
    w = _fragment_words(d, 'machine') if d else []
    return w[-1] if w else 'pc'


def boot_args(kernel):
    """Kernel command line words a named kernel's fragments ask for, by the
    path of its image ('' for Debian's)."""
    d = _named_dir(kernel)
    return ' '.join(_fragment_words(d, 'cmdline')) if d else ''


if __name__ == '__main__':
    print(guest_kver())
