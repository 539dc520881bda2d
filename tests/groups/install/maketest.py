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
