"""Stand-ins for the libraries of fio's engines that the guest never runs.

Debian's fio links its rbd, rados, glusterfs, nbd, pmem and RDMA engines:
84 MB of libraries (ceph, ICU data through libxml2, boost) out of a 99 MB
initramfs, which every test boot unpacks (13 s of each boot under KASAN).
fio binds every symbol at load (BIND_NOW), so each library must exist and
define what fio imports from it. A stand-in does just that, at the same
symbol versions, and every function in it aborts: a test that did reach
one of these engines would fail loudly, not quietly.
"""
import os
import re
import subprocess

# soname -> why no guest tool needs the real one
ENGINES = {
    'librbd.so.1': 'fio rbd engine',
    'librados.so.2': 'fio rados engine',
    'libgfapi.so.0': 'fio gfapi engines',
    'libnbd.so.0': 'fio nbd engine',
    'libpmem.so.1': 'fio libpmem engine',
    'libpmemblk.so.1': 'fio pmemblk engine',
    'librdmacm.so.1': 'fio rdma engine',
    'libibverbs.so.1': 'fio rdma engine',
}


def _nm(path, *opts):
    return subprocess.run(['nm', '-D'] + list(opts) + [path], capture_output=True,
                          text=True, check=True).stdout.splitlines()


def build(binary, libs, outdir):
    """Build stand-ins in @outdir for the ENGINES libraries among @libs (the
    paths ldd gives for @binary, named by their sonames); returns {soname:
    path}. Only symbols @binary imports are defined."""
    os.makedirs(outdir, exist_ok=True)
    wanted = {}                                   # name -> version or None
    for line in _nm(binary, '--undefined-only'):
        m = re.match(r'\s*U (\S+?)(?:@+(\S+))?$', line)
        if m:
            wanted[m.group(1)] = m.group(2)
    made = {}
    for path in libs:
        soname = os.path.basename(path)
        if soname not in ENGINES:
            continue
        funcs, data, versions = [], [], {}
        for line in _nm(path, '--defined-only', '-S'):
            f = line.split()
            if len(f) < 3:
                continue
            name = f[-1].split('@')[0]
            kind = f[-2]
            if name not in wanted or kind.lower() in 'a':
                continue
            size = int(f[1], 16) if len(f) == 4 else 8
            (funcs if kind in 'TtWiI' else data).append((name, size))
            versions.setdefault(wanted[name], []).append(name)
        base = os.path.join(outdir, soname)
        with open(base + '.c', 'w') as c:
            c.write('/* stand-in for %s (%s): scripts/stublibs.py */\n'
                    '#include <stdlib.h>\n' % (soname, ENGINES[soname]))
            # a name defined at several versions: one definition, at the
            # version @binary asks for
            for name in sorted({n for n, _ in funcs}):
                c.write('void %s(void) { abort(); }\n' % name)
            for name, size in sorted(dict(data).items()):
                c.write('char %s[%d];\n' % (name, max(size, 1)))
        cmd = ['gcc', '-shared', '-fPIC', '-O2', '-w', '-o', base,
               '-Wl,-soname,' + soname, base + '.c']
        named = {v: n for v, n in versions.items() if v and v != 'Base'}
        if named:
            with open(base + '.map', 'w') as m:
                for v, names in sorted(named.items()):
                    m.write('%s { global: %s; };\n' % (v, '; '.join(sorted(set(names)))))
            cmd.append('-Wl,--version-script=' + base + '.map')
        subprocess.run(cmd, check=True)
        made[soname] = base
    return made
