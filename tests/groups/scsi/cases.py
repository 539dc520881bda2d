"""Group scsi: SG_IO and the SCSI translation.

The host side of the tests whose guest scripts sit beside this file."""
import os

from cases import test, random_fill
from vm import Disk, sha256_file


def _sg_trace_args(outdir):
    return ['-trace', 'enable=virtio_blk_req_complete', '-D', os.path.join(outdir, 'trace.log')]


def _unsupp_count(guest, *args):
    """Requests the device answered UNSUPP (status 2), per virtio device."""
    per = {}
    try:
        lines = open(os.path.join(guest.outdir, 'trace.log')).read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        if 'virtio_blk_req_complete' in line and line.rstrip().endswith('status 2'):
            vdev = line.split('vdev ')[1].split()[0]
            per[vdev] = per.get(vdev, 0) + 1
    return 'total=%d\ndevices=%d\n' % (sum(per.values()), len(per))


def _sg_ro_setup(guest):
    guest.ro_sum = sha256_file(guest.disk_by_id['sgro'].path)


def _sg_ro_check(guest):
    if sha256_file(guest.disk_by_id['sgro'].path) != guest.ro_sum:
        return 'read-only backing file changed'
    return None


# bio mode only: SG_IO is the same code in both modes (a request on the blk-mq
# queue, the disk's own in request mode, the one beside in bio mode); in bio
# mode passthrough also shares the rings with the bio path
@test('sg_io', leaks=True, timeout=600, vbblk_only=True, extra_args=_sg_trace_args,
      modes=('mode=bio',), actions={'unsupp': _unsupp_count}, setup=_sg_ro_setup,
      check=_sg_ro_check)
def _sg_io():
    """sg3-utils through SG_IO: INQUIRY/VPD/capacity/mode values equal QEMU's, sg_dd
    round trips, UNMAP/WRITE SAME, sense for bad commands, permissions, read-only;
    legacy scsi=on disk: passthrough answered UNSUPP falls back; sgfuzz random SG_IO"""
    return [Disk('sg512e', '64M', serial='SGIO-512E',
                 props={'logical_block_size': 512, 'physical_block_size': 4096,
                        'min_io_size': 4096, 'opt_io_size': 65536, 'discard': 'on',
                        'write-zeroes': 'on', 'config-wce': 'on'}),
            Disk('sg4kn', '32M', serial='SGIO-4KN',
                 props={'logical_block_size': 4096, 'physical_block_size': 4096,
                        'scsi': 'on', 'disable-modern': 'on', 'discard': 'on'}),
            Disk('sgro', '8M', serial='SGIO-RO', read_only=True, prefill=random_fill),
            Disk('sgfuzz', '16M', serial='SGIO-FUZZ', props={'discard': 'on',
                                                             'write-zeroes': 'on'})]
