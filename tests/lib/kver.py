"""Find the guest kernel: the one Debian's linux-image-amd64 stands for (6.1
on Debian 12) when it is usable, else the newest /boot/vmlinuz-*-amd64; usable
means matching /lib/modules/<ver> and /usr/src/linux-headers-<ver>
directories. Override with the KVER environment variable. others() lists the
remaining usable kernels (the `kernels` test runs a subset on each)."""
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


def guest_kver():
    v = os.environ.get('KVER')
    if v:
        return v
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
    return '/boot/vmlinuz-%s' % ver


def kdir(ver):
    return '/usr/src/linux-headers-%s' % ver


if __name__ == '__main__':
    print(guest_kver())
