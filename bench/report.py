#!/usr/bin/env python3
"""Turn a bench/compare results directory into summary.json and report.md.

  bench/report.py RESULTS_DIR

Reads RESULTS_DIR/meta.json and, per backend, raw/ (fio JSON and counters
from the guest) and kinsn.marks (the plugin's counter snapshots).  Can be
re-run on old results.  Kernel instructions per I/O for a cell come from
the two markers `vbmark window` put inside its timed run: the difference of
the kernel counter over the I/Os submitted in between (/proc/vmstat KiB
divided by the job's block size).
"""
import bisect
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import categories  # noqa: E402
import targets as declared  # noqa: E402

CFG_LABEL = {'stock': 'stock virtio_blk', 'request': 'vbblk request', 'bio-nobatch':
             'vbblk bio, batch=0', 'bio': 'vbblk bio', 'nullb-bio': 'null_blk bio',
             'nullb-mq': 'null_blk mq', 'bio-base': 'vbblk bio (BASE)',
             'request-base': 'vbblk request (BASE)', 'bio-direct': 'vbblk bio, indirect=0',
             'bio-pairs': 'vbblk bio, rings=pairs', 'bio-single': 'vbblk bio, rings=single',
             'request-pairs': 'vbblk request, rings=pairs',
             'request-single': 'vbblk request, rings=single'}

def fio_side(path):
    """Totals over read+write of one fio JSON (numjobs are group-reported)."""
    j = json.load(open(path))['jobs'][0]
    sides = [j[k] for k in ('read', 'write') if j[k]['total_ios']]
    main = max(sides, key=lambda x: x['total_ios']) if sides else j['read']
    pct = main['clat_ns'].get('percentile', {})
    return {'ios': sum(x['total_ios'] for x in sides),
            'iops': sum(x['iops'] for x in sides),
            'bw_kib': sum(x['bw'] for x in sides),
            'p50_us': pct.get('50.000000', 0) / 1000.0,
            'p99_us': pct.get('99.000000', 0) / 1000.0,
            # context switches of the load (fio and vbuio count them alike)
            'ctx': j.get('ctx')}


def read_counts(path):
    return {k: int(v) for k, v in (w.split('=') for w in open(path).read().split())}


def read_marks(path):
    marks = []
    if os.path.exists(path):
        for line in open(path):
            w = line.split()
            if w and w[0] == 'mark':
                marks.append((int(w[3]), int(w[5])))
    return marks


def kallsyms(lines):
    syms = []
    for line in lines:
        w = line.split()
        if len(w) >= 3 and w[1] in 'tTwW':
            syms.append((int(w[0], 16), w[2] + (' ' + w[3] if len(w) > 3 else '')))
    return syms


# PIN=both: a workload's pinned twin (bench/compare)
PINNED = '@cpu0'


def job_bs_kib(wl):
    """Block size of a bench/jobs file, in KiB."""
    jobs = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'jobs')
    wl = wl[:-len(PINNED)] if wl.endswith(PINNED) else wl
    if os.path.exists(os.path.join(jobs, wl + '.vbuio')):
        words = [w for line in open(os.path.join(jobs, wl + '.vbuio'))
                 if not line.startswith('#') for w in line.split()]
        return int(words[words.index('-b') + 1]) // 1024 if '-b' in words else 4
    for line in open(os.path.join(jobs, wl + '.fio')):
        if line.startswith('bs='):
            v = line.split('=', 1)[1].strip().lower()
            return int(v[:-1]) * (1024 if v.endswith('m') else 1) if v[-1] in 'km' else \
                int(v) // 1024
    return 4


def profile(bdir, idx, base, ios):
    """Top kernel symbols of the idx-th profile window, per I/O."""
    prof = os.path.join(bdir, 'kinsn.marks.prof%d' % idx)
    ksyms = os.path.join(bdir, 'raw', 'kallsyms')
    if not os.path.exists(prof) or not os.path.exists(ksyms):
        return None
    syms = sorted(kallsyms(open(ksyms)) + kallsyms(open(base + '.modsyms'))
                  if os.path.exists(base + '.modsyms') else kallsyms(open(ksyms)))
    addrs = [a for a, _ in syms]
    per = {}
    total = 0
    for line in open(prof):
        va, n, e = line.split()
        va = int(va, 16)
        if va < 0xffff800000000000:
            continue
        i = bisect.bisect_right(addrs, va) - 1
        name = syms[i][1] if i >= 0 else '?'
        c = int(n) * int(e)
        per[name] = per.get(name, 0) + c
        total += c
    top = sorted(per.items(), key=lambda kv: -kv[1])[:40]
    rows = {r: c / ios for r, c in categories.by_row(per).items()}
    spin = sum(c for name, c in per.items() if categories.SPIN.search(name)) / ios
    return total, [(name, c / ios) for name, c in top], rows, spin


def ratio_sum(rounds, num, den):
    d = sum(c.get(den, 0) for c in rounds)
    return sum(c.get(num, 0) for c in rounds) / d if d else None


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarize_backend(meta, bdir):
    raw = os.path.join(bdir, 'raw')
    marks = read_marks(os.path.join(bdir, 'kinsn.marks'))
    order = open(os.path.join(raw, 'marks.list')).read().split() if meta['kinsn'] else []
    out = {}
    profiles = {}
    for wl in meta['workloads']:
        bs = job_bs_kib(wl)
        for cfg in meta['configs']:
            rounds = []
            if os.path.exists(os.path.join(raw, 'r1-%s-%s.skip' % (cfg, wl))):
                out.setdefault(wl, {})[cfg] = None     # not applicable
                continue
            for r in range(1, meta['rounds'] + 1):
                base = os.path.join(raw, 'r%d-%s-%s' % (r, cfg, wl))
                c = fio_side(base + '.json')
                c.update(read_counts(base + '.counts'))
                c['nwin_ios'] = c['nwin_kib'] / bs
                c['kinsn'] = c['uinsn'] = None
                gbase = '/host/results/' + os.path.basename(base)
                if gbase in order:
                    i = order.index(gbase)
                    wios = read_counts(base + '.window')['kib'] / bs
                    if len(marks) >= 2 * i + 2 and wios > 0:
                        m = marks[2 * i:2 * i + 2]
                        c['window_ios'] = wios
                        c['kinsn'] = (m[1][0] - m[0][0]) / wios
                        c['uinsn'] = (m[1][1] - m[0][1]) / wios
                        if meta.get('profile'):
                            p = profile(bdir, i, base, wios)
                            if p:
                                profiles['%s %s r%d' % (cfg, wl, r)] = p[:3]
                                c['kinsn_work'] = c['kinsn'] - p[3]
                rounds.append(c)
            ios = sum(c['ios'] for c in rounds)
            k = [c['kinsn'] for c in rounds if c['kinsn'] is not None]
            kw = [c['kinsn_work'] for c in rounds if c.get('kinsn_work') is not None]
            virtio = not cfg.startswith('nullb')
            out.setdefault(wl, {})[cfg] = {
                'iops': med(c['iops'] for c in rounds),
                'iops_min': min(c['iops'] for c in rounds),
                'iops_max': max(c['iops'] for c in rounds),
                'bw_kib': med(c['bw_kib'] for c in rounds),
                'p50_us': med(c['p50_us'] for c in rounds),
                'p99_us': med(c['p99_us'] for c in rounds),
                'kinsn': med(k) if k else None,
                # less spin-waiting (PROFILE=1): what a busy host inflates
                'kinsn_work': med(kw) if kw else None,
                'kinsn_work_min': min(kw) if kw else None,
                'kinsn_work_max': max(kw) if kw else None,
                'kinsn_min': min(k) if k else None,
                'kinsn_max': max(k) if k else None,
                'kinsn_spread': (max(k) - min(k)) / med(k) if len(k) > 1 else None,
                'uinsn': med(c['uinsn'] for c in rounds),
                # the load's context switches per I/O: at QD1, how often the
                # submitter slept for a completion, which costs the same
                # scheduler and idle instructions under every driver
                'ctx_per_io': (ratio_sum(rounds, 'ctx', 'ios')
                               if all(c['ctx'] is not None for c in rounds) else None),
                'requests_per_io': sum(c['dev_ops'] for c in rounds) / ios if virtio else None,
                'flushes_per_io': sum(c['flushes'] for c in rounds) / ios if virtio else None,
                # notifies per device request in the window, times requests per I/O
                'notifies_per_io': (ratio_sum(rounds, 'notifies', 'requests') *
                                    sum(c['dev_ops'] for c in rounds) / ios
                                    if virtio and ratio_sum(rounds, 'notifies', 'requests')
                                    is not None else None),
                'irqs_per_io': ratio_sum(rounds, 'irqs', 'nwin_ios') if virtio else None,
                # a load that moves between CPUs: IPIs (remote wakeups and
                # completions) per I/O and its migrations per 1000 I/Os
                'ipis_per_io': (ratio_sum(rounds, 'ipis', 'nwin_ios')
                                if all('ipis' in c for c in rounds) else None),
                'migrations_per_kio': (1000 * ratio_sum(rounds, 'migrations', 'nwin_ios')
                                       if all('migrations' in c for c in rounds)
                                       and ratio_sum(rounds, 'migrations', 'nwin_ios')
                                       is not None else None),
                # bio mode: plug callbacks allocated per bio (blk_check_plugged)
                'plug_cbs_per_bio': ratio_sum(rounds, 'plug_cbs', 'bios'),
                # vhost-user: times the daemon dropped the connection in the window
                'vu_panics': sum(c.get('vu_panics', 0) for c in rounds),
                # CPUs of other host load during the busiest round (bench/compare)
                'host_other': max(c.get('host_other_mcpu', 0) for c in rounds) / 1000,
                'rounds': rounds}
    add_ratios(out)
    return out, profiles


def add_ratios(summary):
    """Each cell's figures as ratios to stock's in the same workload
    (cell['ratio']), and whether their ranges overlap (cell['same'])."""
    for cells in summary.values():
        st = cells.get('stock')
        for cfg, c in cells.items():
            if c is None:
                continue
            c['ratio'] = {}
            c['same'] = {}
            # a cell that measured the daemon's reconnects compares nothing
            if not st or st['vu_panics'] or c['vu_panics']:
                continue
            for key in ('iops', 'kinsn', 'requests_per_io', 'notifies_per_io', 'irqs_per_io'):
                if c.get(key) is not None and st.get(key):
                    c['ratio'][key] = c[key] / st[key]
            # ranges over two or more rounds that overlap: no difference shown
            for key in ('iops', 'kinsn'):
                if cfg != 'stock':
                    c['same'][key] = overlap(c, st, key)


def fmt_k(x):
    return '-' if x is None else ('%.1fk' % (x / 1000) if x >= 1000 else '%.0f' % x)


def fmt_r(r, better_low, same=False):
    if r is None:
        return ''
    if same:
        return ' %.2fx (no difference)' % r
    good = r < 0.995 if better_low else r > 1.005
    s = '%.2fx' % r
    return ' **%s**' % s if good else ' %s' % s


def fmt_f(x, d=3):
    return '-' if x is None else '%.*f' % (d, x)


def inversions(summary):
    """Cells where instructions and IOPS disagree: fewer instructions than
    stock but fewer IOPS, with IOPS ranges apart. Under TCG the guest CPU
    is the bottleneck, so time went somewhere instructions do not show (a
    cross-CPU wakeup, an IPI, a timer, an exit)."""
    rows = []
    for wl, cells in summary.items():
        for cfg, c in cells.items():
            if not c or cfg == 'stock' or cfg.startswith('nullb'):
                continue
            rk, ri = c['ratio'].get('kinsn'), c['ratio'].get('iops')
            if rk is None or ri is None or c['same'].get('iops') or c['same'].get('kinsn'):
                continue
            if rk < 0.97 and ri < 0.97:
                rows.append((wl, cfg, rk, ri))
    return rows


def busy_cells(summary, bound):
    return [(wl, cfg, c['host_other']) for wl, cells in summary.items()
            for cfg, c in cells.items() if c and c['host_other'] >= bound]


# stages that belong to a virtio block driver: with all of them at zero a
# bio-mode I/O costs what the block layer, the system call and the
# scheduler cost
DRIVER_STAGES = ('driver submit', 'virtqueue add', 'notify', 'interrupt entry', 'reap')


def rounds(profs, wl, cfg):
    """The rounds of cfg's profiles of wl, in order."""
    pre = '%s %s r' % (cfg, wl)
    return sorted(int(k[len(pre):]) for k in profs if k.startswith(pre))


def per_round(profs, wl, cfg, f):
    """The median over rounds of f(cfg's stage rows, stock's) for each round
    both were profiled in: a figure of one round is never set against
    another round's (at QD1 the rounds differ by how often the load slept);
    None without profiles."""
    xs = [f(profs['%s %s r%d' % (cfg, wl, r)][2], profs['stock %s r%d' % (wl, r)][2])
          for r in rounds(profs, wl, cfg) if 'stock %s r%d' % (wl, r) in profs]
    return statistics.median(xs) if xs else None


def floor(profs, wl, cfg='bio', stages=DRIVER_STAGES):
    """cfg's instructions per I/O with @stages taken out, as a ratio to
    stock's in the same round."""
    return per_round(profs, wl, cfg, lambda b, st: (sum(b.values()) - sum(b[k] for k in stages))
                     / sum(st.values()))


def above_floor(profs, wl, cfg, stages):
    """How far @stages leave cfg above its floor: their instructions as a
    ratio to stock's whole I/O in the same round."""
    return per_round(profs, wl, cfg, lambda b, st: sum(b[k] for k in stages) / sum(st.values()))


def profiled_ratio(profs, wl, cfg):
    """cfg's profiled instructions per I/O as a ratio to stock's in the
    same round."""
    return per_round(profs, wl, cfg, lambda b, st: sum(b.values()) / sum(st.values()))


def stage_sum(profs, wl, cfg, stages):
    """Instructions per I/O in @stages of cfg's profiles, the median over
    rounds; None without."""
    xs = [sum(profs['%s %s r%d' % (cfg, wl, r)][2][k] for k in stages)
          for r in rounds(profs, wl, cfg)]
    return statistics.median(xs) if xs else None


def evaluate(t, summary, profs):
    """Target t's value in one backend's summary and profiles; None when the
    run lacks its cells or their figures."""
    c = summary.get(t.workload, {}).get(t.config)
    st = summary.get(t.ref or t.workload, {}).get('stock')
    if not c:
        return None
    if t.metric == 'requests_abs':
        return c['requests_per_io']
    if t.metric == 'stage':
        return stage_sum(profs, t.workload, t.config, t.stages)
    if not st:
        return None
    if t.metric == 'requests':
        return c['requests_per_io'] / st['requests_per_io'] if st['requests_per_io'] else None
    if t.metric == 'above_floor':
        return above_floor(profs, t.workload, t.config, t.stages)
    if t.ref:
        return c[t.metric] / st[t.metric] if c[t.metric] and st[t.metric] else None
    return c['ratio'].get(t.metric)


def measured(t, v, profs):
    """How the report shows target t's value v."""
    if t.metric == 'stage':
        return '%.0f' % v
    if t.metric == 'above_floor':
        return '%.3f (%.3f, floor %.3f)' % (v, profiled_ratio(profs, t.workload, t.config),
                                            floor(profs, t.workload, t.config, t.stages))
    return '%.3f' % v


def targets(summary, profs, release):
    """The declared targets (bench/targets.py) that apply to guest kernel
    release, evaluated: (rows, ids of those without data in this run)."""
    profs = profs or {}
    rows, nodata = [], []
    for t in declared.for_kernel(release):
        v = evaluate(t, summary, profs)
        if v is None:
            nodata.append(t.id)
            continue
        c = summary[t.workload][t.config]
        st = summary[t.workload].get('stock')
        ok = v <= t.bound if t.op == '<=' else v >= t.bound
        kinsn = t.metric in ('kinsn', 'above_floor') and not t.ref
        fl = floor(profs, t.workload, t.config) if kinsn else None
        sw = None
        if kinsn and st and c['ctx_per_io'] is not None and st['ctx_per_io'] is not None:
            sw = '%.2f / %.2f' % (c['ctx_per_io'], st['ctx_per_io'])
        rows.append({'id': t.id, 'target': declared.describe(t), 'value': v,
                     'measured': measured(t, v, profs), 'result': 'met' if ok else 'MISSED',
                     'floor': fl, 'switches': sw})
    return rows, nodata


def targets_section(meta, summary, profs):
    """The targets table of one backend: the declared targets for the
    run's guest kernel that the run has data for."""
    rows, nodata = targets(summary, profs, meta['kernel'])
    if not rows:
        return []
    L = ['### Targets for guest kernel %s (declared in bench/targets.py)'
         % (declared.series(meta['kernel']) or meta['kernel']), '',
         'The targets bench/targets.py declares for this kernel series, each against stock '
         'in the same run. The module\'s own instructions (the *driver submit* stage) and '
         'the floors come from the profiles (PROFILE=1), each round against stock\'s '
         'in the same round, the median over rounds. A floor is what the config '
         'would cost against stock with some stages at zero; a target *above its floor* '
         'names the stages and is measured as the ratio less that floor, both of one '
         'round (the ratio in brackets is the profiled rounds\'). The '
         '*driver floor* column takes out every stage of the driver (%s): an '
         'instructions target below it cannot be met by any virtio block driver. '
         '*Switches/IO* (bio, stock): the load\'s context switches per I/O; at QD1 each '
         'is a sleep for the completion, whose scheduler and idle work (about 7,000 '
         'instructions under TCG) no driver saves.' % ', '.join(DRIVER_STAGES), '',
         '| target | measured | result | driver floor | switches/IO |',
         '|---|---|---|---|---|']
    L += ['| %s | %s | %s | %s | %s |' % (r['target'], r['measured'], r['result'],
                                          fmt_f(r['floor']), r['switches'] or '-')
          for r in rows]
    if nodata:
        L += ['', 'Not measured in this run: %s.' % ', '.join(nodata)]
    return L + ['']


def overlap(a, b, key):
    """Min-max ranges of @key over two or more rounds each that overlap."""
    return (len(a['rounds']) > 1 and len(b['rounds']) > 1 and a.get(key + '_min') is not None
            and b.get(key + '_min') is not None and a[key + '_min'] <= b[key + '_max']
            and b[key + '_min'] <= a[key + '_max'])


def moving_load(meta, summary):
    """PIN=both: each workload unpinned and pinned to CPU 0 in one boot;
    what the moving load costs each driver, in instructions per I/O."""
    twins = [w for w in meta['workloads'] if w + PINNED in summary]
    if not twins:
        return []
    cfgs = meta['configs']
    L = ['### What a load that moves between CPUs costs', '',
         'Each workload unpinned (as users run it) and pinned to CPU 0, in the same boot: '
         'kernel instructions per I/O unpinned - pinned (IPIs per I/O unpinned / pinned). '
         'Positive: the moving load costs that driver more.', '',
         '| workload | ' + ' | '.join(CFG_LABEL[c] for c in cfgs) + ' |',
         '|---|' + '---|' * len(cfgs)]
    for wl in twins:
        row = []
        for c in cfgs:
            u, p = summary[wl].get(c), summary[wl + PINNED].get(c)
            if not u or not p or u['kinsn'] is None or p['kinsn'] is None:
                row.append('-')
                continue
            row.append('%+.0f (%s / %s)' % (u['kinsn'] - p['kinsn'], fmt_f(u.get('ipis_per_io')),
                                            fmt_f(p.get('ipis_per_io'))))
        L.append('| %s | %s |' % (wl, ' | '.join(row)))
    return L + ['']


def before_after(meta, summary, profs):
    """The working tree against bench/compare's BASE commit, same boot:
    each config X beside X-base, per workload; with PROFILE=1 the stages
    that moved."""
    pairs = [(c[:-5], c) for c in meta['configs'] if c.endswith('-base')
             and c[:-5] in meta['configs']]
    if not pairs:
        return []
    L = ['### Before and after: this tree against BASE %s (%s)'
         % (meta.get('base'), (meta.get('base_commit') or '')[:12]), '',
         'Same boot, interleaved. Instructions and IOPS of the tree as ratios to the BASE '
         'module\'s; "no difference" when the min-max ranges over the rounds overlap. '
         '*Less spin-waiting* (PROFILE=1) leaves out the instructions spent spinning on '
         'locks and polling in idle (bench/categories.py SPIN), which grow with wall time '
         'and with other load on the host, not with the work an I/O takes.', '',
         '| workload | config | kinsn/IO before | after | ratio '
         '| less spin-waiting: before | after | ratio | IOPS before | after | ratio |',
         '|---|---|---|---|---|---|---|---|---|---|---|']
    for wl, cells in summary.items():
        for new, old in pairs:
            a, b = cells.get(new), cells.get(old)
            if not a or not b:
                continue
            rk = a['kinsn'] / b['kinsn'] if a['kinsn'] and b['kinsn'] else None
            ri = a['iops'] / b['iops'] if b['iops'] else None
            rw = a['kinsn_work'] / b['kinsn_work'] if a['kinsn_work'] and b['kinsn_work'] \
                else None
            L.append('| %s | %s | %s | %s |%s | %s | %s |%s | %.0f | %.0f |%s |'
                     % (wl, new, fmt_k(b['kinsn']), fmt_k(a['kinsn']),
                        fmt_r(rk, True, overlap(a, b, 'kinsn')), fmt_k(b['kinsn_work']),
                        fmt_k(a['kinsn_work']), fmt_r(rw, True, overlap(a, b, 'kinsn_work')),
                        b['iops'], a['iops'], fmt_r(ri, False, overlap(a, b, 'iops'))))
    L.append('')
    moved = []
    for wl in meta['workloads']:
        for new, old in pairs:
            pa, pb = profs.get('%s %s r1' % (new, wl)), profs.get('%s %s r1' % (old, wl))
            if not pa or not pb:
                continue
            d = [(st, pa[2][st] - pb[2][st]) for st in categories.ORDER
                 if abs(pa[2][st] - pb[2][st]) >= 10]
            moved.append('| %s | %s | %s |' % (wl, new, ', '.join('%s %+.0f' % x for x in d)
                                                or 'none'))
    if moved:
        L += ['Stages that moved by 10 or more instructions per I/O (round 1):', '',
              '| workload | config | stage: after - before |', '|---|---|---|'] + moved + ['']
    return L


def disk_shape(meta):
    """'default' (QEMU's: one virtqueue per vCPU), 'paired' (two per vCPU
    and two for a poll queue), or None (QUEUES set another count)."""
    n, cpus = meta['queues'], meta['guest_cpus']
    return 'default' if n == cpus else 'paired' if n == 2 * (cpus + 1) else None


def shape_text(meta):
    """The device's shape and where the load ran, as every table must say.
    Runs before SHAPE and PIN existed had the paired disk and a pinned load."""
    shape = {'default': "QEMU's default: one virtqueue per vCPU",
             'paired': 'paired: two virtqueues per vCPU and two for a poll queue'}.get(
                 disk_shape(meta), '%d virtqueues (QUEUES)' % meta['queues'])
    lat = meta.get('latency_us')
    return ('disk %s, %d entries each%s; load %s'
            % (shape, meta.get('queue_size', 256),
               ', null-co requests taking %d us' % lat if lat else '',
               'pinned to CPU 0' if meta.get('pin', True) else
               'unpinned, and pinned to CPU 0 as WORKLOAD@cpu0' if meta.get('pin_both')
               else 'unpinned'))


def report(meta, summaries, profiles):
    L = ['# vbblk benchmark', '',
         '%s; guest kernel %s; %s; %s; %d vCPUs; %s; %d rounds interleaved; %ds timed runs; '
         'instructions counted over %d ms of steady state inside each timed run.'
         % (meta['date'], meta['kernel'], meta['qemu'], meta['accel'].upper(), meta['guest_cpus'],
            shape_text(meta), meta['rounds'], meta['runtime'], meta['kwin_ms']), '',
         'Ratios are to stock virtio_blk in the same boot; **bold** means better than stock. '
         'Kernel instructions per I/O (the `kinsn` TCG plugin) are exact and repeatable; '
         'IOPS under TCG are noisy (+-10-25 %) and measured with the plugin loaded. '
         'null_blk rows are the block layer with no device: a floor for instructions, '
         'not a competitor.', '']
    for backend, summary in summaries.items():
        cfgs = meta['configs']
        L += ['## Backend: %s' % backend, '']
        if meta['kinsn']:
            L += ['### Guest kernel instructions per I/O (median over rounds; spread max-min)', '',
                  '| workload | ' + ' | '.join(CFG_LABEL[c] for c in cfgs) + ' |',
                  '|---|' + '---|' * len(cfgs)]
            for wl, cells in summary.items():
                row = []
                for c in cfgs:
                    x = cells[c]
                    if x is None:
                        row.append('n/a')
                        continue
                    sp = ' (%.1f%%)' % (100 * x['kinsn_spread']) if x['kinsn_spread'] is not None else ''
                    row.append(fmt_k(x['kinsn']) + sp + fmt_r(x['ratio'].get('kinsn'), True,
                                                                     x['same'].get('kinsn')))
                L.append('| %s | %s |' % (wl, ' | '.join(row)))
            L.append('')
        L += ['### IOPS (median, min-max)', '',
              '| workload | ' + ' | '.join(CFG_LABEL[c] for c in cfgs) + ' |',
              '|---|' + '---|' * len(cfgs)]
        for wl, cells in summary.items():
            L.append('| %s | %s |' % (wl, ' | '.join(
                '%.0f (%.0f-%.0f)%s' % (cells[c]['iops'], cells[c]['iops_min'], cells[c]['iops_max'],
                                        fmt_r(cells[c]['ratio'].get('iops'), False,
                                              cells[c]['same'].get('iops')))
                if cells[c] else 'n/a' for c in cfgs)))
        dropped = ['%s %s (%d x)' % (CFG_LABEL[c], wl, cells[c]['vu_panics'])
                   for wl, cells in summary.items() for c in cfgs
                   if cells[c] and cells[c]['vu_panics']]
        if dropped:
            L += ['', '**The vhost-user daemon dropped the connection** (`vu_panic` in its log; '
                  'QEMU reconnects after 1 s) while timing: %s. Those cells measure the '
                  'reconnects, not the driver, and get no ratios.' % ', '.join(dropped)]
        busy = busy_cells(summary, meta.get('busy_cpus', 0.2))
        if busy:
            L += ['', '**A busy host skewed these cells** (other host load, in CPUs, during '
                  'the busiest round; the guest needs %d host CPUs): %s. Their IOPS, and '
                  'to a lesser degree their instruction counts, are not comparable.'
                  % (meta['guest_cpus'], ', '.join('%s %s %.2f' % (CFG_LABEL[c], wl, x)
                                                   for wl, c, x in busy))]
        inv = inversions(summary)
        if inv:
            L += ['', '**Inversions**: fewer kernel instructions than stock but fewer IOPS, '
                  'ranges apart; time goes where instructions do not show: %s.'
                  % ', '.join('%s %s (instructions %.2fx, IOPS %.2fx)' % (CFG_LABEL[c], wl, rk, ri)
                              for wl, c, rk, ri in inv)]
        L += ['', '### Per workload', '',
              'What a load that moves between CPUs costs: *IPIs/IO* counts the rescheduling '
              'and function-call interrupts of every CPU (remote wakeups, remote completions) '
              'per I/O over the notify window, *migrations/kIO* the load\'s own moves between '
              'CPUs per 1000 I/Os (load %s). Each driver completes on the CPU its queue\'s '
              'interrupt is affine to, the submitter\'s while queues are per CPU; a driver '
              'with more IPIs per I/O than stock wakes the load remotely more often '
              '(docs/bench.md, "The disk and the load").'
              % ('pinned to CPU 0' if meta.get('pin', True) else 'unpinned'), '']
        for wl, cells in summary.items():
            L += ['**%s**' % wl, '',
                  '| driver | MiB/s | p50 us | p99 us | dev requests/IO | flushes/IO | notifies/IO '
                  '| irqs/IO | plug cbs/bio | user insns/IO | switches/IO | IPIs/IO '
                  '| migrations/kIO |',
                  '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
            for c in cfgs:
                x = cells[c]
                if x is None:
                    L.append('| %s | n/a |' % CFG_LABEL[c])
                    continue
                L.append('| %s | %.1f | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s |'
                         % (CFG_LABEL[c], x['bw_kib'] / 1024, x['p50_us'], x['p99_us'],
                            fmt_f(x['requests_per_io']), fmt_f(x['flushes_per_io']),
                            fmt_f(x['notifies_per_io']), fmt_f(x['irqs_per_io']),
                            fmt_f(x['plug_cbs_per_bio']), fmt_k(x['uinsn']),
                            fmt_f(x['ctx_per_io']), fmt_f(x.get('ipis_per_io')),
                            fmt_f(x.get('migrations_per_kio'))))
            L.append('')
        L += moving_load(meta, summary)
        L += before_after(meta, summary, profiles.get(backend) or {})
        L += targets_section(meta, summary, profiles.get(backend))
        for png in ('kinsn', 'iops_ratio', 'requests'):
            L.append('![%s](%s-%s.png)' % (png, backend, png))
        L.append('')
        if profiles.get(backend):
            L += stage_tables(meta, profiles[backend])
            L += ['### Where the kernel instructions go (first round, instruction window, '
                  'per I/O, by kernel symbol)', '']
            for cell, (total, top, _) in sorted(profiles[backend].items()):
                L += ['<details><summary>%s</summary>' % cell, '', '```']
                L += ['%10.0f  %s' % (v, n) for n, v in top]
                L += ['```', '</details>', '']
    L += across_sides(meta, summaries)
    return '\n'.join(L) + '\n'


def stage_tables(meta, profs):
    """Per workload, kernel instructions per I/O by stage of the I/O
    (bench/categories.py), one column per configuration, round 1."""
    L = ['### Where the kernel instructions go, by stage (round 1, per I/O)', '',
         'Stages group kernel symbols (bench/categories.py); "other" is what no stage names. '
         'The rows add up to the instruction window\'s total, which differs from the '
         'median above by the spread between rounds.', '']
    for wl in meta['workloads']:
        cfgs = [c for c in meta['configs'] if '%s %s r1' % (c, wl) in profs]
        if not cfgs:
            continue
        L += ['**%s**' % wl, '', '| stage | ' + ' | '.join(CFG_LABEL[c] for c in cfgs) + ' |',
              '|---|' + '---:|' * len(cfgs)]
        rows = [profs['%s %s r1' % (c, wl)][2] for c in cfgs]
        for st in categories.ORDER:
            L.append('| %s | %s |' % (st, ' | '.join('%.0f' % r[st] for r in rows)))
        L.append('| **total** | %s |' % ' | '.join('**%.0f**' % sum(r.values()) for r in rows))
        L.append('')
    return L


def across_sides(meta, summaries):
    """Does a win on one device side hold on the others? bio against stock
    per workload, one column per side, for each backend."""
    # (backend, side) per run unit, and the name bench/compare gave each
    names = {tuple(u): n for u, n in zip(meta.get('units') or [], meta['backends'])}
    sides = meta.get('sides') or ['main']
    if len(sides) < 2 or 'stock' not in meta['configs'] or 'bio' not in meta['configs']:
        return []
    L = ['## Across device sides: vbblk bio against stock', '',
         'Each cell: kernel instructions / IOPS / device requests / notifies per I/O of `bio`, '
         'as ratios to stock virtio_blk on the same side. vhost-user notifies are the '
         "daemon's kick-eventfd reads (its wakeups); QEMU does not see those notifies.", '']
    for b in dict.fromkeys(u[0] for u in names):
        L += ['**%s**' % b, '', '| workload | ' + ' | '.join(sides) + ' |',
              '|---|' + '---|' * len(sides)]
        for wl in meta['workloads']:
            row = []
            for d in sides:
                c = summaries.get(names.get((b, d)), {}).get(wl, {}).get('bio')
                r = c['ratio'] if c else {}
                row.append(' / '.join('%.2f' % r[k] if r.get(k) is not None else '-'
                                      for k in ('kinsn', 'iops', 'requests_per_io',
                                                'notifies_per_io')))
            L.append('| %s | %s |' % (wl, ' | '.join(row)))
        L.append('')
    return L


def main():
    out = sys.argv[1]
    meta = json.load(open(os.path.join(out, 'meta.json')))
    summaries, profiles = {}, {}
    for b in meta['backends']:
        summaries[b], profiles[b] = summarize_backend(meta, os.path.join(out, b))
    json.dump({'meta': meta, 'summary': summaries,
               'targets': {b: targets(s, profiles[b], meta['kernel'])[0]
                           for b, s in summaries.items()}},
              open(os.path.join(out, 'summary.json'), 'w'), indent=1)
    text = report(meta, summaries, profiles)
    open(os.path.join(out, 'report.md'), 'w', encoding='utf-8').write(text)
    print(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
