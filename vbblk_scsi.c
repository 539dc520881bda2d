// SPDX-License-Identifier: GPL-2.0
/*
 * SCSI commands translated into virtio-blk ones, for SG_IO on a device
 * with no SCSI behind it. The subset is what disk tools ask of a disk:
 *
 *   TEST UNIT READY, REQUEST SENSE, REPORT LUNS
 *   INQUIRY: standard data; VPD 00, 80 (serial from GET_ID), 83, B0, B1, B2
 *   READ CAPACITY (10) and (16)
 *   READ and WRITE (10) and (16), FUA included
 *   SYNCHRONIZE CACHE (10) and (16)        -> FLUSH
 *   WRITE SAME (16), UNMAP                  -> WRITE ZEROES or DISCARD
 *   MODE SENSE (6) and (10), caching page (WCE is the cache_type)
 *
 * Anything else is CHECK CONDITION, ILLEGAL REQUEST, INVALID COMMAND
 * OPERATION CODE. Sense data is fixed format. Device errors on data become
 * MEDIUM ERROR; a caller's buffer that does not fit the command becomes
 * host status DID_ERROR with nothing transferred, as an HBA reports an
 * overrun.
 */
#include <linux/blkdev.h>
#include <linux/log2.h>
#include <linux/slab.h>
#include <scsi/scsi_proto.h>
#include <scsi/scsi_status.h>
#include <scsi/sg.h>

#include "vbblk.h"

#define VBBLK_VENDOR		"VIRTIO  "		/* 8 bytes */
#define VBBLK_PRODUCT		"VBBLK DISK      "	/* 16 bytes */
#define VBBLK_REVISION		"0001"			/* 4 bytes */

/* Additional sense codes used here (ASCQ 0 for all). */
#define ASC_WRITE_ERROR		0x0c
#define ASC_READ_ERROR		0x11
#define ASC_PARAM_LIST_LENGTH	0x1a
#define ASC_INVALID_OPCODE	0x20
#define ASC_LBA_OUT_OF_RANGE	0x21
#define ASC_INVALID_FIELD_CDB	0x24
#define ASC_INVALID_FIELD_PARAM	0x26
#define ASC_SAVING_UNSUPPORTED	0x39

/* WRITE SAME writes a pattern in chunks of this size. */
#define VBBLK_WS_CHUNK		(64 * 1024)
/* Longest WRITE SAME, whatever the device offloads (B0 reports it). */
#define VBBLK_WS_MAX_BYTES	(256ULL << 20)
/* Most UNMAP descriptors: one payload page of virtio ranges. */
#define VBBLK_UNMAP_MAX_DESC	VBBLK_MAX_RANGES

/* Replies are small: the largest is a 64-byte VPD page. */
#define VBBLK_REPLY_BYTES	96

static const u8 vbblk_vpd_pages[] = { 0x00, 0x80, 0x83, 0xb0, 0xb1, 0xb2 };

struct vbblk_scsi_geo {
	unsigned int lbs;	/* logical block size */
	unsigned int shift;	/* logical block -> 512-byte sector */
	u64 blocks;		/* capacity in logical blocks */
};

static void vbblk_scsi_geo(struct vbblk *vblk, struct vbblk_scsi_geo *g)
{
	g->lbs = queue_logical_block_size(vblk->disk->queue);
	g->shift = ilog2(g->lbs) - SECTOR_SHIFT;
	g->blocks = get_capacity(vblk->disk) >> g->shift;
}

static int vbblk_scsi_bad_field(struct vbblk_sg *sg)
{
	vbblk_scsi_set_sense(sg, ILLEGAL_REQUEST, ASC_INVALID_FIELD_CDB, 0);
	return 0;
}

static int vbblk_scsi_out_of_range(struct vbblk_sg *sg)
{
	vbblk_scsi_set_sense(sg, ILLEGAL_REQUEST, ASC_LBA_OUT_OF_RANGE, 0);
	return 0;
}

/* lba..lba+n inside the disk, without overflow. */
static bool vbblk_scsi_in_range(const struct vbblk_scsi_geo *g, u64 lba,
				u64 n)
{
	return lba <= g->blocks && n <= g->blocks - lba;
}

/* A data-in reply: the shorter of @len, the allocation length, the buffer. */
static int vbblk_scsi_reply(struct vbblk_sg *sg, const void *buf,
			    unsigned int len, unsigned int alloc)
{
	if (sg->dxfer_dir == SG_DXFER_TO_DEV) {
		sg->host_status = DID_ERROR;
		return 0;
	}
	return vbblk_sg_copy_out(sg, buf, min(len, alloc));
}

/*
 * Device I/O for a translated command. A device error becomes sense with
 * @key/@asc; anything else (a bad buffer, the disk going away) is the
 * ioctl's error.
 */
static int vbblk_scsi_io(struct vbblk_sg *sg, u32 type, sector_t sector,
			 void *kbuf, unsigned int len, bool user_data,
			 u8 key, u8 asc)
{
	int err = vbblk_sg_dev_io(sg, type, sector, kbuf, len, user_data);

	if (err == -EIO || err == -EOPNOTSUPP) {
		vbblk_scsi_set_sense(sg, key, asc, 0);
		return 1;
	}
	return err;
}

/* The device's write cache is flushed only if there is one to flush. */
static int vbblk_scsi_flush(struct vbblk_sg *sg)
{
	if (!sg->vblk->has_flush)
		return 0;
	return vbblk_scsi_io(sg, VIRTIO_BLK_T_FLUSH, 0, NULL, 0, false,
			     MEDIUM_ERROR, ASC_WRITE_ERROR);
}

/* ---- INQUIRY ---- */

/* The serial into @id (NUL-padded); returns its length. */
static int vbblk_scsi_serial(struct vbblk *vblk, char *id)
{
	char *buf;
	int err;

	memset(id, 0, VIRTIO_BLK_ID_BYTES + 1);
	/* The request maps this buffer, so not the stack. */
	buf = kzalloc(VIRTIO_BLK_ID_BYTES + 1, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	err = vbblk_rq_get_id(vblk, buf);
	if (!err) {
		memcpy(id, buf, VIRTIO_BLK_ID_BYTES);
		err = strnlen(id, VIRTIO_BLK_ID_BYTES);
	} else if (err == -EIO || err == -EOPNOTSUPP) {
		err = 0;	/* no serial: an empty one, as sysfs shows none */
	}
	kfree(buf);
	return err;
}

static void vbblk_vpd_block_limits(struct vbblk_sg *sg, u8 *b,
				   const struct vbblk_scsi_geo *g)
{
	struct request_queue *q = sg->vblk->disk->queue;
	struct vbblk *vblk = sg->vblk;

	put_unaligned_be16(0x3c, &b[2]);
	b[4] = 0x01;		/* WSNZ: WRITE SAME of length 0 is refused */
	put_unaligned_be16(min_t(u32, queue_io_min(q) / g->lbs, U16_MAX),
			   &b[6]);
	put_unaligned_be32(vbblk_sg_max_bytes(vblk) / g->lbs, &b[8]);
	put_unaligned_be32(queue_io_opt(q) / g->lbs, &b[12]);
	if (vblk->has_discard) {
		put_unaligned_be32(q->limits.max_discard_sectors >> g->shift,
				   &b[20]);
		put_unaligned_be32(min_t(u32, queue_max_discard_segments(q),
					 VBBLK_UNMAP_MAX_DESC), &b[24]);
		put_unaligned_be32(q->limits.discard_granularity / g->lbs,
				   &b[28]);
	}
	put_unaligned_be64(VBBLK_WS_MAX_BYTES / g->lbs, &b[36]);
}

static int vbblk_scsi_inquiry(struct vbblk_sg *sg)
{
	struct vbblk *vblk = sg->vblk;
	const u8 *cdb = sg->io->cdb;
	unsigned int alloc = get_unaligned_be16(&cdb[3]);
	char id[VIRTIO_BLK_ID_BYTES + 1];
	struct vbblk_scsi_geo g;
	u8 b[VBBLK_REPLY_BYTES] = { 0 };
	unsigned int len;
	int n;

	if (cdb[1] & 0x02)			/* CMDDT: obsolete */
		return vbblk_scsi_bad_field(sg);
	if (!(cdb[1] & 0x01)) {			/* standard data */
		if (cdb[2])
			return vbblk_scsi_bad_field(sg);
		b[0] = TYPE_DISK;
		b[2] = 0x06;			/* SPC-4 */
		b[3] = 0x02;			/* response data format */
		b[4] = 36 - 5;
		b[7] = 0x02;			/* CMDQUE */
		memcpy(&b[8], VBBLK_VENDOR, 8);
		memcpy(&b[16], VBBLK_PRODUCT, 16);
		memcpy(&b[32], VBBLK_REVISION, 4);
		return vbblk_scsi_reply(sg, b, 36, alloc);
	}

	vbblk_scsi_geo(vblk, &g);
	b[0] = TYPE_DISK;
	b[1] = cdb[2];
	switch (cdb[2]) {
	case 0x00:				/* supported pages */
		b[3] = sizeof(vbblk_vpd_pages);
		memcpy(&b[4], vbblk_vpd_pages, sizeof(vbblk_vpd_pages));
		break;
	case 0x80:				/* unit serial number */
		n = vbblk_scsi_serial(vblk, id);
		if (n < 0)
			return n;
		b[3] = n;
		memcpy(&b[4], id, n);
		break;
	case 0x83:				/* device identification */
		n = vbblk_scsi_serial(vblk, id);
		if (n < 0)
			return n;
		/*
		 * T10 vendor ID based: vendor, then the serial. Without a
		 * serial there is nothing unique to say, so say nothing:
		 * udev would link every such disk to one by-id name.
		 */
		if (n) {
			b[4] = 0x02;		/* code set: ASCII */
			b[5] = 0x01;		/* LU, T10 vendor ID */
			b[7] = 8 + n;
			memcpy(&b[8], VBBLK_VENDOR, 8);
			memcpy(&b[16], id, n);
			b[3] = 4 + 8 + n;
		}
		break;
	case 0xb0:				/* block limits */
		vbblk_vpd_block_limits(sg, b, &g);
		break;
	case 0xb1:				/* block device characteristics */
		put_unaligned_be16(0x3c, &b[2]);
		/* "non-rotating" only when the disk is set so in sysfs */
		if (vbblk_queue_nonrot(vblk->disk->queue))
			put_unaligned_be16(1, &b[4]);
		break;
	case 0xb2:				/* logical block provisioning */
		b[3] = 4;
		if (vblk->has_discard)
			b[5] |= 0x80;		/* LBPU: UNMAP */
		if (vblk->has_discard || vblk->has_write_zeroes)
			b[5] |= 0x40;		/* LBPWS: WRITE SAME (16) */
		b[6] = vblk->has_discard ? 0x02 : 0x00;	/* thin : full */
		break;
	default:
		return vbblk_scsi_bad_field(sg);
	}
	len = get_unaligned_be16(&b[2]) + 4;
	return vbblk_scsi_reply(sg, b, len, alloc);
}

/* ---- capacity, mode pages, LUNs, sense ---- */

static int vbblk_scsi_read_capacity(struct vbblk_sg *sg, bool c16)
{
	struct request_queue *q = sg->vblk->disk->queue;
	const u8 *cdb = sg->io->cdb;
	struct vbblk_scsi_geo g;
	u8 b[32] = { 0 };
	u64 last;
	int align;

	vbblk_scsi_geo(sg->vblk, &g);
	last = g.blocks ? g.blocks - 1 : 0;
	if (!c16) {
		/* PMI is obsolete; without it the LBA field must be 0. */
		if (!(cdb[8] & 0x01) && get_unaligned_be32(&cdb[2]))
			return vbblk_scsi_bad_field(sg);
		put_unaligned_be32(min_t(u64, last, U32_MAX), &b[0]);
		put_unaligned_be32(g.lbs, &b[4]);
		return vbblk_scsi_reply(sg, b, 8, 8);
	}

	put_unaligned_be64(last, &b[0]);
	put_unaligned_be32(g.lbs, &b[8]);
	b[13] = ilog2(queue_physical_block_size(q) / g.lbs) & 0x0f;
	align = vbblk_limits_misaligned(&q->limits) ? 0 :
		q->limits.alignment_offset;
	if (align > 0)
		put_unaligned_be16((align / g.lbs) & 0x3fff, &b[14]);
	if (sg->vblk->has_discard)
		b[14] |= 0x80;				/* LBPME */
	return vbblk_scsi_reply(sg, b, 32, get_unaligned_be32(&cdb[10]));
}

static unsigned int vbblk_mode_caching(struct vbblk_sg *sg, u8 *p, u8 pc)
{
	bool wce;

	if (pc == 1)		/* changeable: WCE, if the device lets us */
		wce = sg->vblk->wce_changeable;
	else			/* current, default */
		wce = sg->writeback;
	p[0] = 0x08;
	p[1] = 0x12;
	p[2] = wce ? 0x04 : 0x00;
	return 20;
}

static int vbblk_scsi_mode_sense(struct vbblk_sg *sg, bool ten)
{
	const u8 *cdb = sg->io->cdb;
	u8 pc = cdb[2] >> 6, page = cdb[2] & 0x3f, sub = cdb[3];
	bool dbd = cdb[1] & 0x08, llba = ten && (cdb[1] & 0x10);
	unsigned int hdr = ten ? 8 : 4, bd = 0, len, alloc;
	struct vbblk_scsi_geo g;
	u8 b[VBBLK_REPLY_BYTES] = { 0 };
	u8 *d;

	if (pc == 3) {
		vbblk_scsi_set_sense(sg, ILLEGAL_REQUEST,
				     ASC_SAVING_UNSUPPORTED, 0);
		return 0;
	}
	if ((page != 0x08 && page != 0x3f) ||
	    (sub && !(page == 0x3f && sub == 0xff)))
		return vbblk_scsi_bad_field(sg);

	vbblk_scsi_geo(sg->vblk, &g);
	d = &b[hdr];
	if (!dbd && llba) {
		bd = 16;
		put_unaligned_be64(g.blocks, &d[0]);
		put_unaligned_be32(g.lbs, &d[12]);
	} else if (!dbd) {
		bd = 8;
		put_unaligned_be32(min_t(u64, g.blocks, U32_MAX), &d[0]);
		put_unaligned_be24(g.lbs, &d[5]);
	}
	len = hdr + bd + vbblk_mode_caching(sg, &b[hdr + bd], pc);

	/* device-specific parameter: write protect; DPO and FUA work */
	b[ten ? 3 : 2] = (sg->read_only ? 0x80 : 0) | 0x10;
	if (ten) {
		put_unaligned_be16(len - 2, &b[0]);
		b[4] = bd == 16 ? 0x01 : 0;		/* LONGLBA */
		put_unaligned_be16(bd, &b[6]);
		alloc = get_unaligned_be16(&cdb[7]);
	} else {
		b[0] = len - 1;
		b[3] = bd;
		alloc = cdb[4];
	}
	return vbblk_scsi_reply(sg, b, len, alloc);
}

static int vbblk_scsi_report_luns(struct vbblk_sg *sg)
{
	const u8 *cdb = sg->io->cdb;
	u8 b[16] = { 0 };
	unsigned int alloc = get_unaligned_be32(&cdb[6]);

	if (cdb[2] > 0x02 || alloc < 16)
		return vbblk_scsi_bad_field(sg);
	put_unaligned_be32(8, &b[0]);		/* one LUN: 0 */
	return vbblk_scsi_reply(sg, b, 16, alloc);
}

/* No deferred errors are kept: always NO SENSE, in the format asked for. */
static int vbblk_scsi_request_sense(struct vbblk_sg *sg)
{
	const u8 *cdb = sg->io->cdb;
	u8 b[18] = { 0 };

	if (cdb[1] & 0x01) {		/* DESC: descriptor format */
		b[0] = 0x72;
		return vbblk_scsi_reply(sg, b, 8, cdb[4]);
	}
	b[0] = 0x70;
	b[7] = 10;
	return vbblk_scsi_reply(sg, b, 18, cdb[4]);
}

/* ---- data commands ---- */

/* LBA and block count: READ, WRITE, SYNCHRONIZE CACHE (10) and (16) alike. */
static void vbblk_scsi_lba_len(const u8 *cdb, bool sixteen, u64 *lba, u64 *n)
{
	if (sixteen) {
		*lba = get_unaligned_be64(&cdb[2]);
		*n = get_unaligned_be32(&cdb[10]);
	} else {
		*lba = get_unaligned_be32(&cdb[2]);
		*n = get_unaligned_be16(&cdb[7]);
	}
}

static int vbblk_scsi_rw(struct vbblk_sg *sg, bool write, bool sixteen)
{
	const u8 *cdb = sg->io->cdb;
	bool fua = cdb[1] & 0x08;
	struct vbblk_scsi_geo g;
	u64 lba, n, bytes;
	int err;

	if (cdb[1] & 0xe0)		/* RD/WRPROTECT: no protection info */
		return vbblk_scsi_bad_field(sg);
	vbblk_scsi_lba_len(cdb, sixteen, &lba, &n);
	vbblk_scsi_geo(sg->vblk, &g);
	if (!vbblk_scsi_in_range(&g, lba, n))
		return vbblk_scsi_out_of_range(sg);
	if (!n)
		return 0;
	bytes = n * g.lbs;
	if (bytes > vbblk_sg_max_bytes(sg->vblk))
		return vbblk_scsi_bad_field(sg);
	if (sg->dxfer_dir != (write ? SG_DXFER_TO_DEV : SG_DXFER_FROM_DEV) ||
	    sg->dxfer_len < bytes) {
		sg->host_status = DID_ERROR;
		return 0;
	}

	/* A FUA read must see the medium: write the cache back first. */
	if (fua && !write && sg->writeback) {
		err = vbblk_scsi_flush(sg);
		if (err)
			return err < 0 ? err : 0;
	}
	err = vbblk_scsi_io(sg, vbblk_op_type(write ? REQ_OP_WRITE :
							      REQ_OP_READ),
			    lba << g.shift, NULL, bytes, true, MEDIUM_ERROR,
			    write ? ASC_WRITE_ERROR : ASC_READ_ERROR);
	if (err)
		return err < 0 ? err : 0;
	sg->resid = sg->dxfer_len - bytes;
	/* A FUA write is on the medium before it completes. */
	if (fua && write && sg->writeback) {
		err = vbblk_scsi_flush(sg);
		if (err)
			return err < 0 ? err : 0;
	}
	return 0;
}

static int vbblk_scsi_sync_cache(struct vbblk_sg *sg, bool sixteen)
{
	const u8 *cdb = sg->io->cdb;
	struct vbblk_scsi_geo g;
	u64 lba, n;
	int err;

	vbblk_scsi_lba_len(cdb, sixteen, &lba, &n);
	vbblk_scsi_geo(sg->vblk, &g);
	if (!vbblk_scsi_in_range(&g, lba, n))
		return vbblk_scsi_out_of_range(sg);
	/* The device flushes everything; a range cannot be narrower. */
	err = vbblk_scsi_flush(sg);
	return err < 0 ? err : 0;
}

/*
 * Zero or discard [@lba, @lba + @n) with one range per command, each
 * within the device's limit for @type.
 */
static int vbblk_scsi_ranges(struct vbblk_sg *sg, u32 type, u32 flags,
			     const struct vbblk_scsi_geo *g, u64 lba, u64 n)
{
	struct request_queue *q = sg->vblk->disk->queue;
	struct virtio_blk_discard_write_zeroes *r;
	u64 sector = lba << g->shift, left = n << g->shift;
	u32 max = type == VIRTIO_BLK_T_DISCARD ?
		  q->limits.max_discard_sectors :
		  q->limits.max_write_zeroes_sectors;
	int err = 0;

	/* Whole logical blocks per command. */
	max = round_down(max, 1U << g->shift);
	if (!max)
		return -EOPNOTSUPP;
	r = kmalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	while (left && !err) {
		u32 chunk = min_t(u64, left, max);

		vbblk_range_set(r, sector, chunk, flags);
		err = vbblk_scsi_io(sg, type, 0, r, sizeof(*r), false,
				    MEDIUM_ERROR, ASC_WRITE_ERROR);
		sector += chunk;
		left -= chunk;
	}
	kfree(r);
	return err;
}

/* Write one block's pattern over [@lba, @lba + @n), a chunk at a time. */
static int vbblk_scsi_write_pattern(struct vbblk_sg *sg, const u8 *block,
				    const struct vbblk_scsi_geo *g, u64 lba,
				    u64 n)
{
	unsigned int per = max_t(unsigned int, VBBLK_WS_CHUNK / g->lbs, 1);
	unsigned int i;
	int err = 0;
	u8 *buf;

	per = min_t(u64, per, n);
	buf = kmalloc_array(per, g->lbs, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < per; i++)
		memcpy(buf + i * g->lbs, block, g->lbs);
	while (n && !err) {
		unsigned int k = min_t(u64, n, per);

		err = vbblk_scsi_io(sg, VIRTIO_BLK_T_OUT, lba << g->shift, buf,
				    k * g->lbs, false, MEDIUM_ERROR,
				    ASC_WRITE_ERROR);
		lba += k;
		n -= k;
	}
	kfree(buf);
	return err;
}

static int vbblk_scsi_write_same(struct vbblk_sg *sg)
{
	struct vbblk *vblk = sg->vblk;
	const u8 *cdb = sg->io->cdb;
	bool unmap = cdb[1] & 0x08, ndob = cdb[1] & 0x01;
	u64 lba = get_unaligned_be64(&cdb[2]);
	u64 n = get_unaligned_be32(&cdb[10]);
	struct vbblk_scsi_geo g;
	u8 *block;
	bool zero;
	int err;

	if (cdb[1] & 0xf0)		/* WRPROTECT, ANCHOR */
		return vbblk_scsi_bad_field(sg);
	vbblk_scsi_geo(vblk, &g);
	if (!n || n * g.lbs > VBBLK_WS_MAX_BYTES)
		return vbblk_scsi_bad_field(sg);
	if (!vbblk_scsi_in_range(&g, lba, n))
		return vbblk_scsi_out_of_range(sg);
	if (!ndob && (sg->dxfer_dir != SG_DXFER_TO_DEV ||
		      sg->dxfer_len < g.lbs)) {
		sg->host_status = DID_ERROR;
		return 0;
	}

	block = kzalloc(g.lbs, GFP_KERNEL);
	if (!block)
		return -ENOMEM;
	if (!ndob) {
		err = vbblk_sg_copy_in(sg, block, g.lbs);
		if (err)
			goto out;
		sg->resid = sg->dxfer_len - g.lbs;
	}
	zero = !memchr_inv(block, 0, g.lbs);

	/* Offload zeroes; a range the device cannot take is written. */
	err = -EOPNOTSUPP;
	if (zero && vblk->has_write_zeroes)
		err = vbblk_scsi_ranges(sg, VIRTIO_BLK_T_WRITE_ZEROES,
					unmap && vblk->wz_may_unmap ?
					VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP : 0,
					&g, lba, n);
	else if (zero && unmap && vblk->has_discard)
		err = vbblk_scsi_ranges(sg, VIRTIO_BLK_T_DISCARD, 0, &g, lba,
					n);
	if (err == -EOPNOTSUPP)
		err = vbblk_scsi_write_pattern(sg, block, &g, lba, n);
out:
	kfree(block);
	return err < 0 ? err : 0;
}

static int vbblk_scsi_unmap(struct vbblk_sg *sg)
{
	struct vbblk *vblk = sg->vblk;
	struct request_queue *q = vblk->disk->queue;
	const u8 *cdb = sg->io->cdb;
	unsigned int plen = get_unaligned_be16(&cdb[7]);
	unsigned int i, n, used = 0, max_desc;
	struct virtio_blk_discard_write_zeroes *r = NULL;
	struct vbblk_scsi_geo g;
	u8 *p;
	int err;

	if (!vblk->has_discard) {
		vbblk_scsi_set_sense(sg, ILLEGAL_REQUEST, ASC_INVALID_OPCODE,
				     0);
		return 0;
	}
	if (cdb[1] & 0x01)		/* ANCHOR */
		return vbblk_scsi_bad_field(sg);
	if (!plen)
		return 0;
	if (plen < 8) {
		vbblk_scsi_set_sense(sg, ILLEGAL_REQUEST,
				     ASC_PARAM_LIST_LENGTH, 0);
		return 0;
	}
	if (sg->dxfer_dir != SG_DXFER_TO_DEV || sg->dxfer_len < plen) {
		sg->host_status = DID_ERROR;
		return 0;
	}
	max_desc = min_t(u32, queue_max_discard_segments(q),
			 VBBLK_UNMAP_MAX_DESC);
	plen = min(plen, 8 + 16 * (max_desc + 1));

	vbblk_scsi_geo(vblk, &g);
	p = kmalloc(plen, GFP_KERNEL);
	r = kcalloc(max_desc, sizeof(*r), GFP_KERNEL);
	err = -ENOMEM;
	if (!p || !r)
		goto out;
	err = vbblk_sg_copy_in(sg, p, plen);
	if (err)
		goto out;
	sg->resid = sg->dxfer_len - plen;

	n = min_t(unsigned int, get_unaligned_be16(&p[2]), plen - 8) / 16;
	if (n > max_desc) {
		vbblk_scsi_set_sense(sg, ILLEGAL_REQUEST,
				     ASC_INVALID_FIELD_PARAM, 0);
		goto out;
	}
	for (i = 0; i < n; i++) {
		u64 lba = get_unaligned_be64(&p[8 + 16 * i]);
		u64 cnt = get_unaligned_be32(&p[8 + 16 * i + 8]);

		if (!vbblk_scsi_in_range(&g, lba, cnt)) {
			vbblk_scsi_out_of_range(sg);
			goto out;
		}
		if ((cnt << g.shift) > q->limits.max_discard_sectors) {
			vbblk_scsi_set_sense(sg, ILLEGAL_REQUEST,
					     ASC_INVALID_FIELD_PARAM, 0);
			goto out;
		}
		if (!cnt)
			continue;
		vbblk_range_set(&r[used++], lba << g.shift, cnt << g.shift, 0);
	}
	if (used)
		err = vbblk_scsi_io(sg, VIRTIO_BLK_T_DISCARD, 0, r,
				    used * sizeof(*r), false, MEDIUM_ERROR,
				    ASC_WRITE_ERROR);
out:
	kfree(r);
	kfree(p);
	return err < 0 ? err : 0;
}

/*
 * Answer the CDB in sg->io. Returns 0 with the SCSI outcome in @sg, or a
 * negative errno for the ioctl (bad buffer, no memory, disk gone).
 */
int vbblk_scsi_translate(struct vbblk_sg *sg)
{
	const u8 *cdb = sg->io->cdb;

	sg->status = SAM_STAT_GOOD;
	sg->msg_status = 0;
	sg->host_status = DID_OK;
	sg->driver_status = 0;
	sg->sense_len = 0;
	sg->resid = sg->dxfer_len;

	switch (cdb[0]) {
	case TEST_UNIT_READY:
		return 0;
	case REQUEST_SENSE:
		return vbblk_scsi_request_sense(sg);
	case INQUIRY:
		return vbblk_scsi_inquiry(sg);
	case READ_CAPACITY:
		return vbblk_scsi_read_capacity(sg, false);
	case SERVICE_ACTION_IN_16:
		if ((cdb[1] & 0x1f) == SAI_READ_CAPACITY_16)
			return vbblk_scsi_read_capacity(sg, true);
		return vbblk_scsi_bad_field(sg);
	case MODE_SENSE:
		return vbblk_scsi_mode_sense(sg, false);
	case MODE_SENSE_10:
		return vbblk_scsi_mode_sense(sg, true);
	case REPORT_LUNS:
		return vbblk_scsi_report_luns(sg);
	case READ_10:
		return vbblk_scsi_rw(sg, false, false);
	case READ_16:
		return vbblk_scsi_rw(sg, false, true);
	case WRITE_10:
		return vbblk_scsi_rw(sg, true, false);
	case WRITE_16:
		return vbblk_scsi_rw(sg, true, true);
	case SYNCHRONIZE_CACHE:
		return vbblk_scsi_sync_cache(sg, false);
	case SYNCHRONIZE_CACHE_16:
		return vbblk_scsi_sync_cache(sg, true);
	case WRITE_SAME_16:
		return vbblk_scsi_write_same(sg);
	case UNMAP:
		return vbblk_scsi_unmap(sg);
	default:
		vbblk_scsi_set_sense(sg, ILLEGAL_REQUEST, ASC_INVALID_OPCODE,
				     0);
		return 0;
	}
}
