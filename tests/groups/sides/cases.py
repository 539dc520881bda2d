"""Group sides: device sides: the vhost-user daemon.

The host side of the tests whose guest scripts sit beside this file."""

from cases import test
from vm import Disk


@test('vhost_user', hotplug=True, timeout=300, vbblk_only=True, sides=('vhost-user',))
def _vhost_user(side='vhost-user'):
    """vhost-user-blk daemon restarted while the guest is idle: reconnect, data intact, I/O
    goes on; daemon paused (SIGSTOP) for 15 s with a write queued while the driver is
    unbound: removal waits and the write succeeds once it goes on; daemon killed under
    random and sequential (held stream batches) writes: device_del ends the stall with
    I/O errors (remove_timeout=10), no oops"""
    return [Disk('vu1', '64M', serial='VU-1', props={'num-queues': 2})]
