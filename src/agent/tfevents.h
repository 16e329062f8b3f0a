/*
 * tfevents: a reader of TensorBoard event files as they are being written.
 *
 * Two layers. The parser (tfevents.c) is pure, bytes in and scalars out: it
 * splits a TFRecord stream into records, checks both masked CRC-32Cs and
 * decodes each record's tensorboard.Event with a small protobuf wire-format
 * reader, keeping only scalar points. The follower (tfevents_file.c) keeps a
 * file's offset and reads what was appended since the last poll.
 *
 * Formats, as TensorFlow writes them (tensorflow/core/lib/io/record_writer.cc,
 * the event, summary and tensor .proto files of tensorboard/compat/proto):
 *   record = uint64 length (LE) | uint32 masked crc32c(length bytes)
 *            | length bytes of data | uint32 masked crc32c(data)
 *   masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8, crc32c = Castagnoli.
 * A scalar point is TensorBoard's: a Summary.Value with simple_value (PyTorch,
 * tensorboardX, TF1), or one whose tensor holds one DT_FLOAT or DT_DOUBLE
 * element for a tag whose plugin is "scalars" (TF2 tf.summary.scalar). The
 * plugin of a tag is taken from its first value that carries metadata and
 * remembered by the reader. Everything else is skipped. Points come out in
 * file order, neither sorted nor de-duplicated (a step may go backwards).
 */
#ifndef GT_AGENT_TFEVENTS_H
#define GT_AGENT_TFEVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "common/strmap.h"

/* The largest record the reader accepts (graphs and meta graphs are the big
 * ones, usually well under a MiB). A longer one is reported and skipped. */
#define GT_TFEV_RECORD_MAX (16u << 20)
/* The most tags one reader keeps (each costs memory for the stream's
 * life): values of further tags are dropped and counted. */
#define GT_TFEV_TAGS_MAX 10000u
/* Framing bytes around a record's data: length, its CRC, the data's CRC. */
#define GT_TFEV_FRAMING 16u

/* One scalar point. tag is borrowed from the reader that made it (valid
 * until gt_tfev_reader_fini). A float32 simple_value or DT_FLOAT tensor is
 * widened to double exactly, so (float)value gives the written float back. */
struct gt_tfev_point {
    const char *tag;
    int64_t step;     /* Event.step; a missing field is step 0 */
    double wall_time; /* Event.wall_time, seconds since the epoch */
    double value;
};

/* Points appended in file order; the caller frees with GT_VEC_FREE. */
struct gt_tfev_points GT_VEC(struct gt_tfev_point);

/* Per-stream state: the tags seen (interned strings, which points borrow)
 * and the plugin each tag declared. Zero counters on init. */
struct gt_tfev_reader {
    struct gt_strmap tags; /* tag -> struct tfev_tag (tfevents.c) */
    int64_t n_records;     /* records decoded */
    int64_t n_corrupt;     /* records (or runs of bytes) reported and skipped */
    int64_t n_dropped;     /* values dropped for a tag past GT_TFEV_TAGS_MAX */
};

void gt_tfev_reader_init(struct gt_tfev_reader *r);
/* Free the tags; points made by r must not be used after this. */
void gt_tfev_reader_fini(struct gt_tfev_reader *r);

/* CRC-32C (Castagnoli, reflected 0x82F63B78) of len bytes, and TFRecord's
 * masked form of a CRC. */
uint32_t gt_tfev_crc32c(const void *data, size_t len);
uint32_t gt_tfev_crc_mask(uint32_t crc);

/* Frame one record at the start of buf (len bytes, borrowed). Returns:
 *   0: a whole valid record; *data and *data_len point into buf; *used bytes
 *      (GT_TFEV_FRAMING + *data_len) are consumed.
 *   -EAGAIN: buf ends inside the record (one still being written): nothing
 *      consumed (*used 0), call again from the same offset with more bytes.
 *   GT_EINVAL: corrupt bytes, err names what ("length CRC mismatch",
 *      "data CRC mismatch", "record of N bytes over the maximum"); *used > 0
 *      bytes are to be skipped (a bad-length header: up to the next offset
 *      whose header checks, or all but the last 11 bytes; a bad record or
 *      an over-long one: the whole record, which may reach past len). */
int gt_tfev_record_next(const uint8_t *buf, size_t len, size_t *used, const uint8_t **data,
                        size_t *data_len, struct gt_err *err);

/* Decode one record's data as a tensorboard.Event (len bytes, borrowed) and
 * append its scalar points to out. Unknown fields and non-scalar summaries
 * are skipped. 0, or GT_EINVAL naming the message and field that is
 * malformed ("Summary.Value.tensor: truncated varint"); on error out is left
 * as it was. */
int gt_tfev_event_decode(struct gt_tfev_reader *r, const uint8_t *data, size_t len,
                         struct gt_tfev_points *out, struct gt_err *err);

/* Frame and decode every whole record in buf (len bytes, borrowed), appending
 * points to out. Corrupt records are logged as warnings (with name, the
 * stream's name in messages, and the offset base + position) and skipped;
 * r->n_corrupt counts them. Returns the bytes consumed: the next read starts
 * there, so a record cut off at the end is read again once it is whole. It
 * may exceed len when an over-long record is skipped. */
size_t gt_tfev_parse(struct gt_tfev_reader *r, const char *name, int64_t base, const uint8_t *buf,
                     size_t len, struct gt_tfev_points *out);

/* ---- following a file being written ---- */

/* One event file and how far it has been read. */
struct gt_tfev_file {
    char *path;        /* owned */
    int64_t offset;    /* bytes consumed so far (past the end while skipping a record) */
    int64_t size_seen; /* the file's size at the last poll */
    struct gt_tfev_reader reader;
};

/* Start following path (copied) from offset 0. Nothing is opened yet. */
void gt_tfev_file_init(struct gt_tfev_file *f, const char *path);
void gt_tfev_file_fini(struct gt_tfev_file *f);

/* Read what was appended since the last poll (at most max_bytes, at least a
 * whole GT_TFEV_RECORD_MAX record's worth) and append its scalar points to
 * out. A file that shrank since the last poll was replaced: it is read again
 * from 0 with a fresh reader. 0 (also when nothing is new); -errno with
 * "cannot open PATH" / "cannot read PATH" when the file cannot be read. */
int gt_tfev_file_poll(struct gt_tfev_file *f, size_t max_bytes, struct gt_tfev_points *out,
                      struct gt_err *err);

#endif
