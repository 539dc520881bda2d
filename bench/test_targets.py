#!/usr/bin/env python3
"""Self-check of bench/targets.py and of bench/report.py's checking of a
run against it, on synthetic summaries and profiles for a 6.1 and a 7.2
guest: which targets apply to each kernel, that each declared target
evaluates to the figure its metric names and meets or misses its bound
on the right side, that a run without the data skips it, and that a
marked table that drifts from the declaration is caught.

  python3 bench/test_targets.py    (exit 0: every check passed)

Needs no results directory, guest or build.
"""
import contextlib
import io
import os
import sys
import tempfile
import unittest

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import categories  # noqa: E402
import report  # noqa: E402
import targets  # noqa: E402

K61, K72, K612 = '6.1.0-57-amd64', '7.2.13+deb14-amd64', '6.12.48+deb12-amd64'
METRICS = ('kinsn', 'iops', 'requests', 'requests_abs', 'stage', 'above_floor')


def cell(kinsn=10000.0, iops=1000.0, requests=1.0, ctx=0.5, panics=0):
    """A summary cell with the figures report.targets() reads."""
    return {'kinsn': kinsn, 'iops': iops, 'requests_per_io': requests, 'ctx_per_io': ctx,
            'vu_panics': panics, 'rounds': [{}]}


def prof(**rows):
    """A profile entry (of one round) as summarize_backend() keeps it: rows by
    stage, every stage of categories.ORDER present ('driver_submit' for
    'driver submit')."""
    r = dict.fromkeys(categories.ORDER, 0)
    for k, v in rows.items():
        k = k.replace('_', ' ')
        assert k in r, k
        r[k] = v
    return sum(r.values()), [], r


def run(cells, profs=None):
    """{workload: {config: cell}} with ratios to stock, as the report has it."""
    summary = {wl: dict(c) for wl, c in cells.items()}
    report.add_ratios(summary)
    return summary, profs or {}


def scenario(t, v):
    """A run in which target t's metric is v."""
    S = 10000.0
    if t.metric == 'kinsn':
        cells = {t.workload: {'stock': cell(kinsn=S), t.config: cell(kinsn=S * v)}}
        if t.ref:
            # the workload's own stock cell must not be the one used
            cells[t.workload]['stock'] = cell(kinsn=S / 7)
            cells.setdefault(t.ref, {})['stock'] = cell(kinsn=S)
        return run(cells)
    if t.metric == 'iops':
        return run({t.workload: {'stock': cell(iops=1000.0), t.config: cell(iops=1000.0 * v)}})
    if t.metric == 'requests':
        return run({t.workload: {'stock': cell(requests=0.5), t.config: cell(requests=0.5 * v)}})
    if t.metric == 'requests_abs':
        return run({t.workload: {'stock': cell(requests=1.0), t.config: cell(requests=v)}})
    if t.metric == 'stage':
        rows = {s.replace(' ', '_'): v / len(t.stages) for s in t.stages}
        return run({t.workload: {'stock': cell(), t.config: cell()}},
                   {'%s %s r1' % (t.config, t.workload): prof(other=5000, **rows),
                    'stock %s r1' % t.workload: prof(other=9000)})
    if t.metric == 'above_floor':
        # stock 2S; the config 1.2S besides the floor's stages, which
        # cost v of stock's: ratio less floor is v. Every other stage of
        # the driver costs something, so a floor of other stages shows.
        others = [s for s in report.DRIVER_STAGES if s not in t.stages]
        rows = {s.replace(' ', '_'): 0.2 * S / len(others) for s in others}
        rows.update({s.replace(' ', '_'): 2 * S * v / len(t.stages) for s in t.stages})
        own = 2 * S * v
        return run({t.workload: {'stock': cell(kinsn=2 * S),
                                 t.config: cell(kinsn=1.2 * S + own)}},
                   {'%s %s r1' % (t.config, t.workload): prof(other=S, **rows),
                    'stock %s r1' % t.workload: prof(other=2 * S)})
    raise AssertionError('no scenario for metric %s' % t.metric)


def put(path, text):
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


def row(rows, tid):
    found = [r for r in rows if r['id'] == tid]
    return found[0] if found else None


class Declaration(unittest.TestCase):
    def test_well_formed(self):
        ids = [t.id for t in targets.TARGETS]
        self.assertEqual(len(ids), len(set(ids)), 'target ids repeat')
        jobs = os.path.join(BENCH, 'jobs')
        for t in targets.TARGETS:
            with self.subTest(t.id):
                self.assertIn(t.metric, METRICS)
                self.assertIn(t.op, ('<=', '>='))
                self.assertIn(t.config, report.CFG_LABEL)
                for wl in (t.workload, t.ref) if t.ref else (t.workload,):
                    self.assertTrue(any(os.path.exists(os.path.join(jobs, wl + ext))
                                        for ext in ('.fio', '.vbuio')), 'no job ' + wl)
                for s in t.stages:
                    self.assertIn(s, categories.ORDER)
                self.assertEqual(bool(t.stages), t.metric in ('stage', 'above_floor'))
                self.assertTrue(t.kernels is None or all(
                    targets.series(k) == k for k in t.kernels), t.kernels)
                self.assertIn('%g' % t.bound, targets.describe(t))

    def test_series(self):
        self.assertEqual(targets.series(K61), '6.1')
        self.assertEqual(targets.series(K72), '7.2')
        self.assertEqual(targets.series(K612), '6.12')
        self.assertIsNone(targets.series('guest'))

    def test_retired_qd1_target(self):
        """QD1 is judged against its floor, not as a plain ratio to stock."""
        for wl in ('randread-qd1', 'randread-qd1-uring'):
            kinds = [t.metric for t in targets.TARGETS if t.workload == wl and t.config == 'bio'
                     and t.metric in ('kinsn', 'above_floor')]
            self.assertEqual(kinds, ['above_floor'], wl)


class Kernels(unittest.TestCase):
    def ids(self, release):
        return {t.id for t in targets.for_kernel(release)}

    def test_which_apply(self):
        every = {t.id for t in targets.TARGETS if t.kernels is None}
        for release in (K61, K72, K612):
            self.assertLessEqual(every, self.ids(release))
        only = self.ids(K61) ^ self.ids(K72)
        self.assertTrue(only, '6.1 and 7.2 have the same targets')
        for tid in only:
            t = [x for x in targets.TARGETS if x.id == tid][0]
            self.assertEqual(tid in self.ids(K61), '6.1' in t.kernels, tid)
            self.assertEqual(tid in self.ids(K72), '7.2' in t.kernels, tid)
        self.assertEqual(self.ids(K612), every)

    def test_same_run_two_kernels(self):
        """bio at 0.70x stock's instructions at QD32: above 6.1's goal,
        within 7.2's (issue 32)."""
        summary, profs = run({'randread-qd32': {'stock': cell(kinsn=10000.0),
                                                'bio': cell(kinsn=7000.0)}})
        got = {}
        for release in (K61, K72):
            rows, _ = report.targets(summary, profs, release)
            got[release] = [(r['result'], r['value']) for r in rows
                            if r['id'].startswith('qd32-kinsn-')]
        self.assertEqual([x[0] for x in got[K61]], ['MISSED'])
        self.assertEqual([x[0] for x in got[K72]], ['met'])
        self.assertAlmostEqual(got[K61][0][1], 0.70)


class Evaluation(unittest.TestCase):
    def test_every_target_both_sides(self):
        """Each target just inside its bound is met, just outside missed,
        and its value is the one its metric names."""
        for release in (K61, K72):
            for t in targets.for_kernel(release):
                d = t.bound * 0.02
                inside = t.bound - d if t.op == '<=' else t.bound + d
                outside = t.bound + d if t.op == '<=' else t.bound - d
                for v, want in ((inside, 'met'), (outside, 'MISSED')):
                    with self.subTest(release=release, target=t.id, value=v):
                        summary, profs = scenario(t, v)
                        rows, nodata = report.targets(summary, profs, release)
                        r = row(rows, t.id)
                        self.assertIsNotNone(r, 'no row (no data: %s)' % nodata)
                        self.assertAlmostEqual(r['value'], v, places=9)
                        self.assertEqual(r['result'], want)

    def test_at_the_bound(self):
        """A bound is inclusive: the module's own instructions (whole
        numbers, exact) at the bound meet it."""
        for t in targets.TARGETS:
            if t.metric == 'stage':
                summary, profs = scenario(t, t.bound)
                rows, _ = report.targets(summary, profs, K61)
                self.assertEqual(row(rows, t.id)['result'], 'met', t.id)

    def test_floor_round_by_round(self):
        """Two rounds whose other stages differ (at QD1, how often the load
        slept): the gap above the floor is the module's share of each
        round, not the rounds' median ratio less round 1's floor."""
        S, own = 10000.0, 250.0
        t = [t for t in targets.TARGETS if t.id == 'qd1-floor'][0]
        cells = {t.workload: {'stock': cell(kinsn=2 * S),
                              'bio': cell(kinsn=1.3 * S + own)}}
        cells[t.workload]['bio']['rounds'] = [{}, {}]
        profs = {'bio %s r1' % t.workload: prof(other=1.2 * S, driver_submit=own),
                 'bio %s r2' % t.workload: prof(other=1.4 * S, driver_submit=own),
                 'stock %s r1' % t.workload: prof(other=2 * S),
                 'stock %s r2' % t.workload: prof(other=2 * S)}
        summary, profs = run(cells, profs)
        rows, _ = report.targets(summary, profs, K61)
        self.assertAlmostEqual(row(rows, t.id)['value'], own / (2 * S))
        self.assertEqual(row(rows, t.id)['result'], 'met')
        self.assertAlmostEqual(row(rows, t.id)['floor'], 1.3 * S / (2 * S))

    def test_missing_data_skipped(self):
        """No profiles: the stage and floor targets are skipped, named as
        not measured; the others of the cell still evaluate."""
        summary, _ = run({'randread-qd1': {'stock': cell(iops=100.0),
                                           'bio': cell(iops=117.0)}})
        rows, nodata = report.targets(summary, None, K61)
        self.assertEqual(row(rows, 'qd1-iops')['result'], 'met')
        for t in targets.for_kernel(K61):
            if t.workload == 'randread-qd1' and t.metric in ('stage', 'above_floor'):
                self.assertIsNone(row(rows, t.id))
                self.assertIn(t.id, nodata)
        # workloads the run did not have
        for t in targets.for_kernel(K61):
            if t.workload != 'randread-qd1':
                self.assertIsNone(row(rows, t.id))
                self.assertIn(t.id, nodata)

    def test_reconnects_compare_nothing(self):
        summary, _ = run({'randread-qd1': {'stock': cell(), 'bio': cell(panics=2)}})
        rows, _ = report.targets(summary, None, K61)
        self.assertIsNone(row(rows, 'qd1-iops'))

    def test_section(self):
        summary, profs = run({'randread-qd32': {'stock': cell(kinsn=10000.0),
                                                'bio': cell(kinsn=7000.0)}})
        text = '\n'.join(report.targets_section({'kernel': K72}, summary, profs))
        self.assertIn('### Targets for guest kernel 7.2 (declared in bench/targets.py)', text)
        self.assertIn('| met |', text)
        self.assertIn('Not measured in this run:', text)
        self.assertEqual(report.targets_section({'kernel': K72}, {}, {}), [])


class Docs(unittest.TestCase):
    def test_tables(self):
        full, head = targets.markdown(), targets.markdown(headline=True)
        self.assertEqual(len(full), 2 + len(targets.TARGETS))
        self.assertEqual(len(head), 2 + sum(t.headline for t in targets.TARGETS))
        for t in targets.TARGETS:
            self.assertEqual(any(targets.describe(t) in line for line in head), t.headline)

    def test_drift_caught(self):
        marker = '<!-- targets: generated by bench/targets.py --markdown --headline -->'
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'doc.md')
            put(path, 'x\n%s\n%s\ny\n' % (marker, targets.END))
            self.assertTrue(targets.check([path]))
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertTrue(targets.write([path]))
            self.assertEqual(targets.check([path]), [])
            t = [t for t in targets.TARGETS if t.headline][0]
            text = targets._read(path)
            old = '%s %g' % (targets.OPS[t.op], t.bound)
            self.assertIn(old, text)
            put(path, text.replace(old, '%s %g' % (targets.OPS[t.op], t.bound * 2), 1))
            bad = targets.check([path])
            self.assertTrue(bad and bad[0].startswith(path + ':2: '), bad)

    def test_repo_docs(self):
        self.assertEqual(targets.check([os.path.join(REPO, 'docs', 'bench.md')]), [])


if __name__ == '__main__':
    unittest.main()
