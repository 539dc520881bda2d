"""The make_* tests: the Makefile's targets where a user met a trap (issue
49), on the host, in seconds, with no module build and no guest.

Each test works in its own copy of the source tree (tree_copy(): the
repository's vbblk.ko and objects are never touched), with stand-ins on
PATH for the programs that would report on or act on this machine (uname,
dkms, dpkg-query) and staging roots (INSTALL_MOD_PATH, DESTDIR) for what
make installs or removes.
"""
import glob
import os
import shutil
import subprocess

from cases import REPO


class Fail(Exception):
    pass


def tree_copy(dst):
    """dst: a copy of the source tree as git sees it (tracked and untracked
    files that are not ignored, as in the working tree: no build products),
    made a git repository of its own so that no script finds REPO's."""
    shutil.rmtree(dst, ignore_errors=True)
    out = subprocess.run(['git', '-C', REPO, 'ls-files', '-z', '--cached', '--others',
                          '--exclude-standard'], capture_output=True, check=True).stdout
    for f in filter(None, out.decode().split('\0')):
        src = os.path.join(REPO, f)
        if not os.path.lexists(src):
            continue        # a tracked file deleted in the working tree
        os.makedirs(os.path.join(dst, os.path.dirname(f)), exist_ok=True)
        shutil.copy2(src, os.path.join(dst, f), follow_symlinks=False)
    subprocess.run(['git', 'init', '-q', dst], check=True)
    subprocess.run(['git', '-C', dst, 'add', '-A'], check=True)
    return dst


def stub(bindir, name, text):
    """A stand-in program bindir/name (put bindir first on PATH)."""
    os.makedirs(bindir, exist_ok=True)
    p = os.path.join(bindir, name)
    with open(p, 'w') as f:
        f.write('#!/bin/sh\n' + text)
    os.chmod(p, 0o755)
    return p


def stub_uname(bindir, release):
    """uname -r says release: the running kernel as the test wants it."""
    return stub(bindir, 'uname', '# stand-in: the running kernel is %s\n'
                '[ "$1" = -r ] && { echo %s; exit 0; }\nexec /bin/uname "$@"\n'
                % (release, release))


def env_with(bindir, **kw):
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ['PATH'], **kw)
    # the runner's own settings are not a user's
    for k in ('KVER', 'KDIR', 'KERNEL', 'MAKEFLAGS', 'MAKELEVEL', 'MFLAGS', 'DESTDIR',
              'INSTALL_MOD_PATH'):
        if k not in kw:
            env.pop(k, None)
    return env


def make(log, tree, args, env=None, wrap=()):
    """make -C tree args (under wrap, a command prefix); its output, with
    stderr, goes to log too. Returns (exit status, output)."""
    cmd = list(wrap) + ['make', '--no-print-directory', '-C', tree] + list(args)
    with open(log, 'a') as f:
        f.write('$ %s\n' % ' '.join(cmd))
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=env, timeout=300)
        f.write(r.stdout + ('(exit %d)\n' % r.returncode))
    return r.returncode, r.stdout


def must(log, tree, args, env=None, wrap=()):
    rc, out = make(log, tree, args, env, wrap)
    if rc:
        raise Fail('`make %s` exited %d: %s' % (' '.join(args), rc,
                                                  ' | '.join(out.strip().splitlines()[-3:])))
    return out


def kernels_with_headers():
    """The releases with /lib/modules/<release>/build: what KVER= can name."""
    return sorted(os.path.basename(os.path.dirname(os.path.dirname(p)))
                  for p in glob.glob('/lib/modules/*/build/Makefile'))


def _setup(outdir, name):
    os.makedirs(outdir, exist_ok=True)
    log = os.path.join(outdir, name + '.log')
    open(log, 'w').close()
    return log, tree_copy(os.path.join(outdir, 'tree')), os.path.join(outdir, 'bin')


def _run(fn, outdir):
    try:
        fn(outdir)
    except Fail as e:
        return str(e)
    except subprocess.TimeoutExpired as e:
        return 'timed out: %s' % ' '.join(e.cmd)
    finally:
        shutil.rmtree(os.path.join(outdir, 'tree'), ignore_errors=True)
    return None


# ---- make_kdir: which headers, and never another kernel's ------------------
NOHEADERS = '0.0.0-vbtest-noheaders'


def _kdir(outdir):
    log, tree, bindir = _setup(outdir, 'make_kdir')
    have = kernels_with_headers()
    stub_uname(bindir, NOHEADERS)
    env = env_with(bindir)

    def says_why(what, out):
        for w in [NOHEADERS, 'KVER=', 'KDIR='] + (have or ['none']):
            if w not in out:
                raise Fail('%s: its message does not name %s: %r' % (what, w, out.strip()[-300:]))

    # the running kernel without headers: no KDIR, and why
    rc, out = make(log, tree, ['-s', 'kdir'], env)
    if rc == 0:
        raise Fail('make kdir, the running kernel (%s) without headers: exit 0, KDIR %r '
                   '(another kernel\'s headers, or none)' % (NOHEADERS, out.strip()))
    says_why('make kdir without headers', out)
    # a build fails at once, before compiling anything
    rc, out = make(log, tree, [], env)
    if rc == 0:
        raise Fail('make, the running kernel without headers: exit 0')
    says_why('make without headers', out)
    built = [f for f in os.listdir(tree) if f.endswith(('.o', '.ko', '.mod'))]
    if built:
        raise Fail('make without headers built %s' % ', '.join(built))
    rc, out = make(log, tree, ['check-kdir', 'KVER=' + NOHEADERS], env)
    if rc == 0:
        raise Fail('make check-kdir KVER=%s (no such headers): exit 0' % NOHEADERS)
    if not have:
        return
    # the running kernel with headers: those, and it says so
    stub_uname(bindir, have[0])
    want = '/lib/modules/%s/build' % have[0]
    out = must(log, tree, ['-s', 'kdir'], env).strip()
    if out != want:
        raise Fail('make kdir, the running kernel %s with headers: %r, not %r'
                   % (have[0], out, want))
    out = must(log, tree, ['check-kdir'], env)
    if want not in out or 'running kernel' not in out:
        raise Fail('make check-kdir does not say it uses the running kernel\'s headers %s: %r'
                   % (want, out.strip()))
    # KVER= and KDIR= as given
    for args, want in ((['KVER=' + have[-1]], '/lib/modules/%s/build' % have[-1]),
                       (['KDIR=' + outdir], outdir)):
        out = must(log, tree, ['-s', 'kdir'] + args, env).strip()
        if out != want:
            raise Fail('make kdir %s: %r, not %r' % (' '.join(args), out, want))
    out = must(log, tree, ['check-kdir', 'KDIR=' + outdir], env)
    if 'KDIR=%s' % outdir not in out or 'given' not in out:
        raise Fail('make check-kdir KDIR=%s does not say so: %r' % (outdir, out.strip()))


def run_kdir(outdir, ctx=None):
    return _run(_kdir, outdir)


# ---- make_noheaders: clean and uninstall on a machine without headers -------
# A mount namespace hides them: tmpfs over /usr/src and /lib/modules.
NOHEADERS_NS = ['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
                'for d in /usr/src /lib/modules; do [ ! -d $d ] || '
                'mount -t tmpfs vbtest-noheaders $d || exit 1; done; exec "$@"', 'sh']
# what a module build leaves in the tree (and the example program)
PRODUCTS = ('vbblk.ko', 'vbblk.o', 'virtio_blk_core.o', 'vbblk.mod', 'vbblk.mod.c',
            'vbblk.mod.o', '.vbblk.ko.cmd', '.virtio_blk_core.o.cmd', 'Module.symvers',
            'modules.order', 'examples/vbblk-uring')


def _put(path, text='fake\n'):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def _noheaders(outdir):
    log, tree, bindir = _setup(outdir, 'make_noheaders')
    env = env_with(bindir)
    r = subprocess.run(NOHEADERS_NS + ['find', '/lib/modules', '/usr/src', '-mindepth', '1'],
                       capture_output=True, text=True)
    if r.returncode or r.stdout.strip():
        raise Fail('could not hide the kernel headers: %s' % (r.stdout + r.stderr).strip())

    # clean: the build products go, the sources stay
    for p in PRODUCTS:
        _put(os.path.join(tree, p))
    sources = subprocess.run(['git', '-C', tree, 'ls-files'], capture_output=True, text=True,
                             check=True).stdout.split()
    must(log, tree, ['clean'], env, NOHEADERS_NS)
    left = [p for p in PRODUCTS if os.path.exists(os.path.join(tree, p))]
    if left:
        raise Fail('make clean without headers left %s' % ', '.join(left))
    gone = [p for p in sources if not os.path.exists(os.path.join(tree, p))]
    if gone:
        raise Fail('make clean without headers removed sources: %s' % ', '.join(gone[:5]))

    # uninstall: for the running kernel, from a staged install
    stage = os.path.join(outdir, 'stage')
    shutil.rmtree(stage, ignore_errors=True)
    rel = os.uname().release
    mods = os.path.join(stage, 'lib', 'modules', rel)
    ko = os.path.join(mods, 'updates', 'vbblk.ko')
    hdr = os.path.join(stage, 'usr', 'local', 'include', 'linux', 'vbblk.h')
    _put(ko)
    _put(hdr)
    _put(os.path.join(mods, 'modules.dep'), 'updates/vbblk.ko:\n')
    must(log, tree, ['uninstall', 'INSTALL_MOD_PATH=' + stage], env, NOHEADERS_NS)
    left = [p for p in (ko, hdr) if os.path.exists(p)]
    if left:
        raise Fail('make uninstall without headers left %s' % ', '.join(left))
    if 'vbblk' in open(os.path.join(mods, 'modules.dep')).read():
        raise Fail('make uninstall without headers: modules.dep still names vbblk '
                   '(depmod not run)')
    # KVER=, INSTALL_MOD_DIR= and DESTDIR= (the header's root then) as given
    other = '0.0.0-vbtest-other'
    ko = os.path.join(stage, 'lib', 'modules', other, 'extra', 'vbblk.ko')
    hdr = os.path.join(outdir, 'dest', 'usr', 'local', 'include', 'linux', 'vbblk.h')
    _put(ko)
    _put(hdr)
    must(log, tree, ['uninstall', 'KVER=' + other, 'INSTALL_MOD_PATH=' + stage,
                     'INSTALL_MOD_DIR=extra', 'DESTDIR=' + os.path.join(outdir, 'dest'),
                     'DEPMOD=/nonexistent/depmod'], env, NOHEADERS_NS)
    left = [p for p in (ko, hdr) if os.path.exists(p)]
    if left:
        raise Fail('make uninstall KVER=%s INSTALL_MOD_DIR=extra DESTDIR=... without headers '
                   'left %s' % (other, ', '.join(left)))
    shutil.rmtree(stage)
    shutil.rmtree(os.path.join(outdir, 'dest'))


def run_noheaders(outdir, ctx=None):
    from cases import Skip
    if os.geteuid() != 0 or not shutil.which('unshare'):
        return Skip('needs root and unshare (a mount namespace hides the kernel headers)')
    return _run(_noheaders, outdir)


# ---- make_checkstyle: the style gate leaves a built module alone ------------
# A stand-in kernel tree: `clean` does to M= what kbuild's clean does, and
# every build fails at once (the first probe), so check-style stops after
# its first clean and build, in seconds.
FAKE_KDIR_MAKEFILE = '''\
# a stand-in kernel tree (the make_checkstyle test): clean as kbuild's
clean:
\tcd $(M) && rm -f *.o *.ko *.mod *.mod.c *.mod.o .*.cmd Module.symvers modules.order
.DEFAULT:
\t@echo "stand-in kernel tree: no $@ here" >&2; exit 2
'''


def _state(tree):
    """{product: (content, mtime)} of the build products in tree."""
    out = {}
    for p in PRODUCTS:
        f = os.path.join(tree, p)
        if os.path.exists(f):
            out[p] = (open(f, 'rb').read(), os.stat(f).st_mtime_ns)
    return out


def _checkstyle(outdir):
    log, tree, bindir = _setup(outdir, 'make_checkstyle')
    fake = os.path.join(outdir, 'kdir')
    shutil.rmtree(fake, ignore_errors=True)
    _put(os.path.join(fake, 'Makefile'), FAKE_KDIR_MAKEFILE)
    _put(os.path.join(fake, 'include', 'generated', 'utsrelease.h'),
         '#define UTS_RELEASE "0.0.0-vbtest-fake"\n')
    _put(os.path.join(fake, 'include', 'generated', 'autoconf.h'), '')
    for p in PRODUCTS:
        _put(os.path.join(tree, p), 'built before make check-style: %s\n' % p)
    before = _state(tree)
    tmp = os.path.join(outdir, 'tmp')
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    # checkpatch.pl is unpacked once, into the repository's cache
    env = env_with(bindir, KDIRS=fake, TMPDIR=tmp,
                   VBBLK_CACHE=os.environ.get('VBBLK_CACHE', os.path.join(REPO, '.cache')))
    rc, out = make(log, tree, ['check-style'], env)
    if 'build failed against %s' % fake not in out:
        raise Fail('make check-style KDIRS=<stand-in> did not reach its build (exit %d): %s'
                   % (rc, ' | '.join(out.strip().splitlines()[-3:])))
    after = _state(tree)
    changed = sorted(p for p in PRODUCTS if before.get(p) != after.get(p))
    if changed:
        raise Fail('make check-style %s the tree\'s build products: %s' % (
            'removed' if not any(p in after for p in changed) else 'changed',
            ', '.join(changed)))
    left = os.listdir(tmp)
    if left:
        raise Fail('make check-style left %s in TMPDIR' % ', '.join(left))
    shutil.rmtree(fake)
    shutil.rmtree(tmp)


def run_checkstyle(outdir, ctx=None):
    from cases import Skip
    cache = os.environ.get('VBBLK_CACHE', os.path.join(REPO, '.cache'))
    if not os.path.exists(os.path.join(cache, 'checkpatch', 'scripts', 'checkpatch.pl')) and \
            not os.path.exists('/usr/src/linux-source-6.1.tar.xz'):
        return Skip('needs /usr/src/linux-source-6.1.tar.xz for checkpatch.pl '
                    '(apt-get install linux-source-6.1)')
    return _run(_checkstyle, outdir)


# ---- make_dkms_uninstall: every version DKMS has, not today's ---------------
# A stand-in dkms over a status file: the lines `dkms status` prints (DKMS
# 3's format), `remove MODULE/VERSION --all` takes that version's away as
# DKMS does, or fails as DKMS does for one it does not have.
DKMS_STUB = '''\
# stand-in dkms (the make_dkms_uninstall test): status and remove over @STATE@
state=@STATE@
echo "dkms $*" >> "$state.calls"
case "$1" in
status)
	[ "$2" = -m ] && shift
	if [ -n "$2" ]; then
		awk -v m="${2%%/*}" 'index($0, m "/") == 1' "$state"
	else
		cat "$state"
	fi ;;
remove)
	mv_=$2
	if awk -v p="$mv_" 'index($0, p ",") == 1 || index($0, p ":") == 1 { f = 1 } END { exit !f }' "$state"; then
		awk -v p="$mv_" '!(index($0, p ",") == 1 || index($0, p ":") == 1)' "$state" > "$state.new"
		mv "$state.new" "$state"
		echo "Deleting module ${mv_%%/*}-${mv_#*/} completely from the DKMS tree."
	else
		echo "Error! The module/version combo: ${mv_%%/*}-${mv_#*/} is not located in the DKMS tree." >&2
		exit 3
	fi ;;
*)
	echo "stand-in dkms: no $1 here" >&2
	exit 2 ;;
esac
'''
# installed at some time, neither of them this tree's version; one other
# module; and the Debian package's (dpkg owns its source)
DKMS_STATUS = '''\
vbblk/0.0-1-g1111111, 6.1.0-57-amd64, x86_64: installed
vbblk/0.0-1-g1111111, 6.12.118+deb12-amd64, x86_64: installed
vbblk/0.0-2-g2222222-dirty: added
vbblk/0.0~git20261201.3333333, 6.1.0-57-amd64, x86_64: installed
othermod/1.0, 6.1.0-57-amd64, x86_64: installed
'''
DPKG_QUERY_STUB = '''\
# stand-in dpkg-query -S: the vbblk-dkms package owns one version's source
[ "$1" = -S ] && [ "$2" = /usr/src/vbblk-0.0~git20261201.3333333 ] &&
	{ echo "vbblk-dkms: $2"; exit 0; }
echo "dpkg-query: no path found matching pattern $2" >&2
exit 1
'''


def _dkms_uninstall(outdir):
    log, tree, bindir = _setup(outdir, 'make_dkms_uninstall')
    state = os.path.join(outdir, 'dkms-status')
    _put(state, DKMS_STATUS)
    if os.path.exists(state + '.calls'):
        os.unlink(state + '.calls')
    stub(bindir, 'dkms', DKMS_STUB.replace('@STATE@', state))
    stub(bindir, 'dpkg-query', DPKG_QUERY_STUB)
    env = env_with(bindir)
    dest = os.path.join(outdir, 'dest')
    shutil.rmtree(dest, ignore_errors=True)
    src = {v: os.path.join(dest, 'usr', 'src', 'vbblk-' + v)
           for v in ('0.0-1-g1111111', '0.0-2-g2222222-dirty', '0.0~git20261201.3333333')}
    for d in src.values():
        _put(os.path.join(d, 'dkms.conf'))
    version = must(log, tree, ['-s', 'version'], env).strip()
    rc, out = make(log, tree, ['dkms-uninstall', 'DESTDIR=' + dest], env)
    status = open(state).read()
    left = [line.split(',')[0].split(':')[0] for line in status.splitlines()
            if line.startswith('vbblk/') and '3333333' not in line]
    if rc or left:
        raise Fail('make dkms-uninstall (this tree: vbblk/%s) exited %d and left %s registered '
                   'with DKMS: %s' % (version, rc, ', '.join(sorted(set(left))) or 'none',
                                      ' | '.join(out.strip().splitlines()[-2:])))
    for v in ('0.0-1-g1111111', '0.0-2-g2222222-dirty'):
        if os.path.exists(src[v]):
            raise Fail('make dkms-uninstall left the source copy %s' % src[v])
    if '3333333' not in status or not os.path.exists(src['0.0~git20261201.3333333']):
        raise Fail('make dkms-uninstall removed the vbblk-dkms package\'s vbblk/'
                   '0.0~git20261201.3333333')
    if 'vbblk-dkms' not in out:
        raise Fail('make dkms-uninstall does not say it left the package\'s version alone')
    if 'othermod/1.0' not in status:
        raise Fail('make dkms-uninstall removed another module')
    # nothing (of ours) registered: nothing to do, and no failure
    rc, out = make(log, tree, ['dkms-uninstall', 'DESTDIR=' + dest], env)
    if rc:
        raise Fail('make dkms-uninstall with no vbblk of ours in DKMS exited %d' % rc)
    shutil.rmtree(dest)


def run_dkms_uninstall(outdir, ctx=None):
    return _run(_dkms_uninstall, outdir)


# ---- make_uninstall_conf: an unedited disk list goes, an edited one stays ---
def _files(root):
    return sorted('/' + os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs)


def _uninstall_conf(outdir):
    log, tree, bindir = _setup(outdir, 'make_uninstall_conf')
    env = env_with(bindir)
    dest = os.path.join(outdir, 'dest')
    disks = os.path.join(dest, 'etc', 'vbblk', 'disks')
    shutil.rmtree(dest, ignore_errors=True)
    must(log, tree, ['install-conf', 'DESTDIR=' + dest], env)
    if not os.path.isfile(disks):
        raise Fail('make install-conf put no /etc/vbblk/disks in DESTDIR')
    must(log, tree, ['uninstall-conf', 'DESTDIR=' + dest], env)
    left = _files(dest)
    if left:
        raise Fail('make uninstall-conf after make install-conf (nothing edited) left %s'
                   % ', '.join(left))
    # an edited list stays, as it was, and make says so
    must(log, tree, ['install-conf', 'DESTDIR=' + dest], env)
    with open(disks, 'a') as f:
        f.write('DATA-1\n')
    edited = open(disks).read()
    out = must(log, tree, ['uninstall-conf', 'DESTDIR=' + dest], env)
    left = _files(dest)
    if left != ['/etc/vbblk/disks'] or open(disks).read() != edited:
        raise Fail('make uninstall-conf with an edited /etc/vbblk/disks left %s%s'
                   % (', '.join(left) or 'nothing',
                      '' if '/etc/vbblk/disks' not in left else ' (the list changed)'))
    if 'kept' not in out:
        raise Fail('make uninstall-conf keeps the edited /etc/vbblk/disks without a word')
    shutil.rmtree(dest)


def run_uninstall_conf(outdir, ctx=None):
    return _run(_uninstall_conf, outdir)


# ---- make_help: every target and variable, from the Makefile itself ---------
def _help(outdir):
    import re
    log, tree, bindir = _setup(outdir, 'make_help')
    stub_uname(bindir, NOHEADERS)     # it needs no headers
    env = env_with(bindir)
    out = must(log, tree, ['-s', 'help'], env)
    mk = open(os.path.join(tree, 'Makefile')).read()
    phony = re.search(r'^\.PHONY:((?:.*\\\n)*.*)$', mk, re.M)
    targets = phony.group(1).replace('\\\n', ' ').split() if phony else []
    missing = [t for t in targets if t != 'all' and
               not re.search(r'^\s*make \[?%s\]?(\s|$)' % re.escape(t), out, re.M)]
    if not targets or missing:
        raise Fail('make help lists no `make %s`' % ', `make '.join(missing or ['<target>']))
    # the variables a user sets: every ?= of Makefile and Kbuild, and these
    names = ['KVER', 'KDIR', 'INSTALL_MOD_PATH', 'DESTDIR', 'INSTALL_MOD_DIR']
    for f in ('Makefile', 'Kbuild'):
        names += re.findall(r'^([A-Z_]+) \?=', open(os.path.join(tree, f)).read(), re.M)
    missing = sorted({n for n in names if not re.search(r'\b%s\b' % n, out)})
    if missing:
        raise Fail('make help does not name %s' % ', '.join(missing))


def run_help(outdir, ctx=None):
    return _run(_help, outdir)
