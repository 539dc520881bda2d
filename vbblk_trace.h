/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vbblk's tracepoints (events/vbblk/ in tracefs): what the counters in
 * /sys/block/vdX/vbblk/ only sum, one event per step a bio or command
 * takes. A bio-mode disk has no request, so blktrace sees its bios queued
 * (Q) and completed (C) only; vbblk_cmd_queue and vbblk_cmd_complete are
 * the driver-side issue (D) and completion in between (docs/tracing.md).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM vbblk

#if !defined(VBBLK_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define VBBLK_TRACE_H

#include <linux/tracepoint.h>

#include "vbblk.h"

/* Virtio-blk command types, by name. */
#define vbblk_show_type(type)						\
	__print_symbolic(type,						\
			 { VIRTIO_BLK_T_IN, "IN" },			\
			 { VIRTIO_BLK_T_OUT, "OUT" },			\
			 { VIRTIO_BLK_T_SCSI_CMD, "SCSI_CMD" },		\
			 { VIRTIO_BLK_T_FLUSH, "FLUSH" },		\
			 { VIRTIO_BLK_T_GET_ID, "GET_ID" },		\
			 { VIRTIO_BLK_T_DISCARD, "DISCARD" },		\
			 { VIRTIO_BLK_T_WRITE_ZEROES, "WRITE_ZEROES" },	\
			 { VIRTIO_BLK_T_SECURE_ERASE, "SECURE_ERASE" },	\
			 { VBBLK_T_NONE, "NONE" })

TRACE_DEFINE_ENUM(VBBLK_STAT_DISPATCH_DIRECT);
TRACE_DEFINE_ENUM(VBBLK_STAT_DISPATCH_NONCONTIG);
TRACE_DEFINE_ENUM(VBBLK_STAT_DISPATCH_LIMIT);
TRACE_DEFINE_ENUM(VBBLK_STAT_DISPATCH_PLUG);
TRACE_DEFINE_ENUM(VBBLK_STAT_DISPATCH_COMPLETION);
TRACE_DEFINE_ENUM(VBBLK_STAT_DISPATCH_FLUSH);
TRACE_DEFINE_ENUM(VBBLK_STAT_DISPATCH_DRAIN);
TRACE_DEFINE_ENUM(VBBLK_STAT_DISPATCH_CPU_OFFLINE);

/* Why a batch command went to the ring: the dispatch_* counters' names. */
#define vbblk_show_reason(r)						\
	__print_symbolic(r,						\
			 { VBBLK_STAT_DISPATCH_DIRECT, "direct" },	\
			 { VBBLK_STAT_DISPATCH_NONCONTIG, "noncontig" },\
			 { VBBLK_STAT_DISPATCH_LIMIT, "limit" },	\
			 { VBBLK_STAT_DISPATCH_PLUG, "plug" },		\
			 { VBBLK_STAT_DISPATCH_COMPLETION, "completion" },\
			 { VBBLK_STAT_DISPATCH_FLUSH, "flush" },	\
			 { VBBLK_STAT_DISPATCH_DRAIN, "drain" },	\
			 { VBBLK_STAT_DISPATCH_CPU_OFFLINE, "cpu_offline" })

#define vbblk_devt(vblk)	disk_devt((vblk)->disk)

/* A bio reached submit_bio (bio mode), after any split. */
TRACE_EVENT(vbblk_bio_queue,
	TP_PROTO(struct vbblk *vblk, struct bio *bio),
	TP_ARGS(vblk, bio),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(sector_t, sector)
		__field(unsigned int, nr_sector)
		__field(u32, type)
		__field(bool, preflush)
		__field(bool, fua)
		__field(bool, polled)
	),
	TP_fast_assign(
		__entry->dev = vbblk_devt(vblk);
		__entry->sector = bio->bi_iter.bi_sector;
		__entry->nr_sector = bio_sectors(bio);
		__entry->type = vbblk_op_type(bio_op(bio));
		__entry->preflush = bio->bi_opf & REQ_PREFLUSH;
		__entry->fua = bio->bi_opf & REQ_FUA;
		__entry->polled = bio->bi_opf & REQ_POLLED;
	),
	TP_printk("%d,%d %s %llu + %u%s%s%s",
		  MAJOR(__entry->dev), MINOR(__entry->dev),
		  vbblk_show_type(__entry->type),
		  (unsigned long long)__entry->sector, __entry->nr_sector,
		  __entry->preflush ? " preflush" : "",
		  __entry->fua ? " fua" : "", __entry->polled ? " polled" : "")
);

/* A read or write command was held back in its CPU's batch. */
TRACE_EVENT(vbblk_batch_hold,
	TP_PROTO(struct vbblk *vblk, struct vbblk_bio_cmd *cmd, bool plugged,
		 bool stream),
	TP_ARGS(vblk, cmd, plugged, stream),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(sector_t, sector)
		__field(unsigned int, nr_bios)
		__field(unsigned int, bytes)
		__field(bool, plugged)
		__field(bool, stream)
	),
	TP_fast_assign(
		__entry->dev = vbblk_devt(vblk);
		__entry->sector = cmd->bio->bi_iter.bi_sector;
		__entry->nr_bios = cmd->nr_bios;
		__entry->bytes = cmd->bytes;
		__entry->plugged = plugged;
		__entry->stream = stream;
	),
	TP_printk("%d,%d %llu bios=%u bytes=%u%s%s",
		  MAJOR(__entry->dev), MINOR(__entry->dev),
		  (unsigned long long)__entry->sector, __entry->nr_bios,
		  __entry->bytes, __entry->plugged ? " plugged" : "",
		  __entry->stream ? " stream" : "")
);

/* A batch command went to the ring, held or not, and why. */
TRACE_EVENT(vbblk_batch_release,
	TP_PROTO(struct vbblk *vblk, struct vbblk_bio_cmd *cmd, int reason),
	TP_ARGS(vblk, cmd, reason),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(sector_t, sector)
		__field(unsigned int, nr_bios)
		__field(unsigned int, bytes)
		__field(int, reason)
	),
	TP_fast_assign(
		__entry->dev = vbblk_devt(vblk);
		__entry->sector = cmd->bio->bi_iter.bi_sector;
		__entry->nr_bios = cmd->nr_bios;
		__entry->bytes = cmd->bytes;
		__entry->reason = reason;
	),
	TP_printk("%d,%d %llu bios=%u bytes=%u reason=%s",
		  MAJOR(__entry->dev), MINOR(__entry->dev),
		  (unsigned long long)__entry->sector, __entry->nr_bios,
		  __entry->bytes, vbblk_show_reason(__entry->reason))
);

/*
 * A command was put on a virtqueue: the driver's issue (blktrace's D).
 * @descs: its buffers, each a descriptor (in an indirect table or not).
 */
TRACE_EVENT(vbblk_cmd_queue,
	TP_PROTO(struct vbblk_vq *vq, struct vbblk_iohdr *hdr,
		 unsigned int descs),
	TP_ARGS(vq, hdr, descs),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(unsigned int, vq)
		__field(const void *, cmd)
		__field(u32, type)
		__field(u64, sector)
		__field(unsigned int, descs)
	),
	TP_fast_assign(
		__entry->dev = vbblk_devt(vq->vblk);
		__entry->vq = vq->index;
		__entry->cmd = hdr;
		__entry->type = virtio32_to_cpu(vq->vblk->vdev, hdr->out.type);
		__entry->sector = virtio64_to_cpu(vq->vblk->vdev,
						  hdr->out.sector);
		__entry->descs = descs;
	),
	TP_printk("%d,%d vq=%u cmd=%p %s %llu descs=%u",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __entry->vq,
		  __entry->cmd, vbblk_show_type(__entry->type),
		  (unsigned long long)__entry->sector, __entry->descs)
);

/* The device was notified of new buffers on a virtqueue. */
TRACE_EVENT(vbblk_notify,
	TP_PROTO(struct vbblk_vq *vq),
	TP_ARGS(vq),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(unsigned int, vq)
		__field(unsigned int, inflight)
	),
	TP_fast_assign(
		__entry->dev = vbblk_devt(vq->vblk);
		__entry->vq = vq->index;
		__entry->inflight = READ_ONCE(vq->inflight);
	),
	TP_printk("%d,%d vq=%u inflight=%u",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __entry->vq,
		  __entry->inflight)
);

/* The device completed a command (status: 0 OK, 1 IOERR, 2 UNSUPP). */
TRACE_EVENT(vbblk_cmd_complete,
	TP_PROTO(struct vbblk_vq *vq, struct vbblk_iohdr *hdr),
	TP_ARGS(vq, hdr),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(unsigned int, vq)
		__field(const void *, cmd)
		__field(u32, type)
		__field(u64, sector)
		__field(u8, status)
	),
	TP_fast_assign(
		__entry->dev = vbblk_devt(vq->vblk);
		__entry->vq = vq->index;
		__entry->cmd = hdr;
		__entry->type = virtio32_to_cpu(vq->vblk->vdev, hdr->out.type);
		__entry->sector = virtio64_to_cpu(vq->vblk->vdev,
						  hdr->out.sector);
		__entry->status = hdr->status;
	),
	TP_printk("%d,%d vq=%u cmd=%p %s %llu status=%u",
		  MAJOR(__entry->dev), MINOR(__entry->dev), __entry->vq,
		  __entry->cmd, vbblk_show_type(__entry->type),
		  (unsigned long long)__entry->sector, __entry->status)
);

/*
 * Bio mode's FLUSH/FUA emulation: a flush stage (the PREFLUSH before, or
 * the POSTFLUSH after, a bio's data) leads a device FLUSH or waits to
 * share the next one.
 */
TRACE_EVENT(vbblk_flush_stage,
	TP_PROTO(struct vbblk *vblk, struct vbblk_bio_cmd *cmd, bool post,
		 bool lead),
	TP_ARGS(vblk, cmd, post, lead),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(sector_t, sector)
		__field(unsigned int, bytes)
		__field(bool, post)
		__field(bool, lead)
	),
	TP_fast_assign(
		__entry->dev = vbblk_devt(vblk);
		__entry->sector = cmd->bio->bi_iter.bi_sector;
		__entry->bytes = cmd->bytes;
		__entry->post = post;
		__entry->lead = lead;
	),
	TP_printk("%d,%d %s of %llu bytes=%u: %s",
		  MAJOR(__entry->dev), MINOR(__entry->dev),
		  __entry->post ? "postflush" : "preflush",
		  (unsigned long long)__entry->sector, __entry->bytes,
		  __entry->lead ? "leads a FLUSH" : "shares the next FLUSH")
);

/* A failed merged command is sent again bio by bio, from @sector on. */
TRACE_EVENT(vbblk_retry,
	TP_PROTO(struct vbblk *vblk, sector_t sector, int status),
	TP_ARGS(vblk, sector, status),
	TP_STRUCT__entry(
		__field(dev_t, dev)
		__field(sector_t, sector)
		__field(int, status)
	),
	TP_fast_assign(
		__entry->dev = vbblk_devt(vblk);
		__entry->sector = sector;
		__entry->status = status;
	),
	TP_printk("%d,%d %llu failed (%d): retried bio by bio",
		  MAJOR(__entry->dev), MINOR(__entry->dev),
		  (unsigned long long)__entry->sector, __entry->status)
);

#endif /* VBBLK_TRACE_H */

/* This part must be outside the include guard. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE vbblk_trace
#include <trace/define_trace.h>
