"""Group uring: the io_uring passthrough character device (/dev/vbblk/<disk>).

The host side of the tests whose guest scripts sit beside this file."""
from cases import test, random_fill, SIDES3
from vm import Disk, sha256_file


def _ro_setup(guest):
    guest.ro_sum = sha256_file(guest.disk_by_id['uringro'].path)


def _ro_check(guest):
    if sha256_file(guest.disk_by_id['uringro'].path) != guest.ro_sum:
        return 'read-only backing file changed'
    return None


def _ro_setup_main(guest):
    if 'uringro' in guest.disk_by_id:
        _ro_setup(guest)


def _ro_check_main(guest):
    return _ro_check(guest) if 'uringro' in guest.disk_by_id else None


# the other device sides in bio mode only: the passthrough code is the same
# in both modes, a side changes the device
@test('uring', timeout=420, vbblk_only=True, leaks=True, hotplug=True, setup=_ro_setup_main,
      check=_ro_check_main, sides=SIDES3, side_modes=('mode=bio',))
def _uring(side='main'):
    """passthrough: GET_ID; data written through /dev/vbblk/<disk> read back through the
    block device and the other way round (plain, registered, vectored, polled; 1 and 2
    queues); polled commands raise no interrupt; FLUSH, DISCARD, WRITE ZEROES reach the
    device; a 16-entry ring under QD 128 beside block I/O waits, loses nothing; hostile commands get their errno; read-only
    disk and descriptor; rmmod refused while open; unbind and device_del under load end
    every command; iothread and vhost-user (bio mode): data, polling, full ring, unbind"""
    if side != 'main':
        return [Disk('uring1', '64M', serial='URING-1', props={'num-queues': 1}),
                Disk('uring2', '64M', serial='URING-2', props={'num-queues': 2}),
                Disk('uring3', '32M', serial='URING-3', props={'queue-size': 16})]
    return [Disk('uring1', '64M', serial='URING-1', props={'num-queues': 1, 'discard': 'off'}),
            Disk('uring2', '64M', serial='URING-2',
                 props={'num-queues': 2, 'discard': 'on', 'write-zeroes': 'on'}),
            Disk('uringro', '8M', serial='URING-RO', read_only=True, prefill=random_fill),
            Disk('uring3', '32M', serial='URING-3', props={'queue-size': 16}),
            Disk('uring4', '32M', serial='URING-4')]
