"""Find the guest kernel: the newest /boot/vmlinuz-*-amd64 that has matching
/lib/modules/<ver> and /usr/src/linux-headers-<ver> directories.
Override with the KVER environment variable."""
import glob
import os
import re


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


def guest_kver():
    v = os.environ.get('KVER')
    if v:
        return v
    c = candidates()
    if not c:
        raise SystemExit('no usable guest kernel: need /boot/vmlinuz-<ver>-amd64 with '
                         '/lib/modules/<ver> and /usr/src/linux-headers-<ver> '
                         '(run scripts/install-deps.sh)')
    return c[-1]


def vmlinuz(ver):
    return '/boot/vmlinuz-%s' % ver


def kdir(ver):
    return '/usr/src/linux-headers-%s' % ver


if __name__ == '__main__':
    print(guest_kver())
