"""Kernel symbols grouped into the stages of one I/O, for PROFILE=1 runs.

A symbol goes to the first row whose pattern matches its name (module
symbols carry " [module]"). The rows follow an I/O from the system call
down to the device and back up to the woken task; "other" keeps what no
row names, so the rows always add up to the profiled total.
"""
import re

# Waiting, not work: spinning on a contended lock and polling in idle.
# Under TCG a vCPU that holds a lock may be descheduled by the host, so
# these grow with the host's other load and with wall time.
SPIN = re.compile(r'^(native_queued_spin_lock_slowpath|__pv_queued_spin_lock_slowpath|'
                  r'queued_spin_lock_slowpath|queued_(read|write)_lock_slowpath|osq_lock|'
                  r'mutex_spin_on_owner|rwsem_spin_on_owner|poll_idle)( |$)')

ROWS = [
    # row, pattern (re.search on "name [module]")
    ('driver submit', r'\[(vbblk|virtio_blk)\]$'),
    ('virtqueue add', r'^(virtqueue_add|vring_map|vring_)|^sg_(init_table|next)|'
                      r'^virtqueue_(kick_prepare|get_vring)'),
    ('notify', r'^(vp_notify|virtqueue_notify|iowrite16|virtqueue_kick)'),
    ('reap', r'^(virtqueue_get_buf|detach_buf|virtqueue_(enable|disable)_cb|'
             r'virtqueue_poll|more_used|vring_interrupt|virtqueue_is_broken)'),
    ('interrupt entry', r'^(asm_common_interrupt|common_interrupt|__common_interrupt|'
                        r'handle_edge_irq|handle_irq_event|__handle_irq_event|irq_|'
                        r'vp_vring_interrupt|vp_interrupt|ack_apic|apic_|lapic_|'
                        r'irqentry_|__irq_exit|irq_exit|__sysvec|sysvec_|'
                        r'x2apic|native_apic|handle_irq|__do_softirq|do_softirq|'
                        r'__irq_|note_interrupt|add_interrupt_randomness|'
                        r'msi_|pci_msi|irq_chip|rcu_irq)'),
    ('bio completion', r'^(bio_endio|__bio_endio|bio_put|bio_free|bio_uninit|'
                       r'blkdev_bio_end_io|bio_release_pages|__bio_release_pages|'
                       r'blk_mq_end_request|blk_update_request|__blk_mq_end_request|'
                       r'blk_mq_complete_request|blk_mq_free_request|__blk_mq_free_request|'
                       r'blk_account_io_done|bdev_end_io_acct|blk_mq_end_request_batch|'
                       r'blk_mq_put_tag|sbitmap_queue_clear|blk_complete_reqs|'
                       r'blk_done_softirq|blk_mq_complete|blk_stat_add|'
                       r'dio_bio_complete|aio_complete|aio_complete_rw|'
                       r'io_req_task_complete|io_complete_rw|blkdev_bio_end_io_async|'
                       r'__io_complete_rw|io_req_rw_complete|io_req_complete)'),
    ('wakeup', r'^(try_to_wake_up|ttwu_|wake_up|__wake_up|autoremove_wake_function|'
               r'default_wake_function|wake_q|enqueue_|activate_task|select_task_rq|'
               r'check_preempt|resched_curr|wakeup_preempt|task_work_add|'
               r'io_req_task_work_add|aio_poll_wake|__task_rq_lock|ep_poll_callback)'),
    ('scheduler', r'^(__schedule|schedule|psi_|pick_next|dequeue_|update_load_avg|'
                  r'__update_load_avg|update_curr|update_cfs|update_rq_clock|'
                  r'__switch_to|finish_task_switch|switch_mm|prepare_task_switch|'
                  r'rcu_note_context_switch|put_prev|set_next|reweight|'
                  r'update_min_vruntime|cpuacct|cgroup_rstat|__cgroup_account|'
                  r'account_|prepare_to_wait|finish_wait|io_schedule|'
                  r'newidle_balance|pick_task|sched_|do_idle|cpuidle|'
                  r'native_safe_halt|default_idle|arch_cpu_idle|tick_nohz|'
                  r'nohz_|__calc_delta|place_entity|clear_buddies|'
                  r'hrtick|update_blocked|__enqueue_entity|__dequeue_entity|'
                  r'rb_(insert|erase|next)|avg_vruntime|entity_eligible)'),
    ('time', r'^(ktime_get|native_sched_clock|sched_clock|read_tsc|'
             r'local_clock|__ktime|jiffies|timekeeping|blk_time_get)'),
    ('block core', r'^(submit_bio|__submit_bio|blk_|bio_|__bio|bvec_|bdev_|'
                   r'should_fail_bio|__blk|blkdev_|part_|disk_|sbitmap|'
                   r'__sbitmap|elv_|dd_|kyber_|bfq_|iov_iter_bvec|'
                   r'mempool_|bio_alloc|guard_bio)'),
    ('user pages', r'^(internal_get_user_pages|get_user_pages|gup_|try_grab|'
                   r'pin_user|unpin_user|__get_user_pages|follow_page|'
                   r'iov_iter_(get_pages|extract)|__iov_iter_get_pages|'
                   r'put_page|folio_|__folio|page_)'),
    ('memory', r'^(kmem_cache|__kmem_cache|kmalloc|__kmalloc|kfree|__slab|'
               r'slab_|memset|memcpy|__memset|__memcpy|___slab|get_partial|'
               r'percpu_counter|__mod_|mod_|kmalloc_slab|obj_cgroup|memcg_|'
               r'refill_obj|__put_partials)'),
    ('syscall', r'^(entry_SYSCALL|do_syscall|__x64_sys|__do_sys|__se_sys|'
                r'syscall_|exit_to_user|__fdget|fdget|fput|__fget|__fput|'
                r'aio_|io_submit|io_getevents|read_events|lookup_ioctx|'
                r'io_uring|io_|__io_|__fsnotify|fsnotify|security_|'
                r'rw_verify|copy_user|_copy_|__get_user|__put_user|'
                r'copy_from_user|copy_to_user|'
                r'syscall_exit|__audit|audit_|hrtimer|blkdev_read_iter|'
                r'blkdev_write_iter|blkdev_direct_IO|__blkdev_direct_IO|'
                r'file_|generic_file|kiocb|do_io_getevents|'
                r'entry_|restore_|error_entry|ret_from)'),
    ('locks, rcu', r'^(_raw_spin|_raw_read|_raw_write|native_queued|queued_spin|'
                   r'__rcu_read|rcu_read|preempt_count|__local_bh)'),
]
_RX = [(row, re.compile(p)) for row, p in ROWS]
ORDER = ['syscall', 'user pages', 'memory', 'block core', 'driver submit',
         'virtqueue add', 'notify', 'interrupt entry', 'reap', 'bio completion',
         'wakeup', 'scheduler', 'time', 'locks, rcu', 'other']


def row_of(name):
    for row, rx in _RX:
        if rx.search(name):
            return row
    return 'other'


def by_row(per_symbol):
    """{symbol: count} -> {row: count}, every row of ORDER present."""
    rows = dict.fromkeys(ORDER, 0)
    for name, n in per_symbol.items():
        rows[row_of(name)] += n
    return rows
