"""A tiny TensorBoard event-file writer: scalars only, standard library only.

torch.utils.tensorboard needs the tensorboard package, which Debian does
not ship; this writes the same bytes for scalars. The format is
TensorFlow's: a TFRecord stream (uint64 length, masked CRC-32C of the
length, the data, masked CRC-32C of the data; masked(c) = ((c >> 15) |
(c << 17)) + 0xa282ead8) of tensorboard.Event protocol buffers, the first
one carrying file_version "brain.Event:2", each scalar an Event{wall_time
(1, double), step (2, int64), summary (5){value (1){tag (1), simple_value
(2, float)}}}, as PyTorch's SummaryWriter writes them. Each add_scalar is
flushed at once, so a reader sees it while training goes on.
"""
import os
import socket
import struct
import time

_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data):
    """CRC-32C (Castagnoli) of data."""
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num, wire, payload):
    key = _varint(num << 3 | wire)
    if wire == 2:
        return key + _varint(len(payload)) + payload
    return key + payload


def record(data):
    """One TFRecord frame around data."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))


def scalar_event(tag, value, step, wall_time):
    """A serialized tensorboard.Event holding one simple_value."""
    val = _field(1, 2, tag.encode()) + _field(2, 5, struct.pack("<f", value))
    summary = _field(1, 2, val)
    return (_field(1, 1, struct.pack("<d", wall_time)) + _field(2, 0, _varint(step)) +
            _field(5, 2, summary))


class SummaryWriter:
    """Writes log_dir/events.out.tfevents.<time>.<host> as add_scalar is called."""

    def __init__(self, log_dir):
        os.makedirs(log_dir, exist_ok=True)
        name = "events.out.tfevents.%d.%s" % (int(time.time()), socket.gethostname())
        self.path = os.path.join(log_dir, name)
        self._f = open(self.path, "ab")
        header = _field(1, 1, struct.pack("<d", time.time())) + _field(3, 2, b"brain.Event:2")
        self._write(header)

    def _write(self, data):
        self._f.write(record(data))
        self._f.flush()

    def add_scalar(self, tag, value, step):
        self._write(scalar_event(tag, float(value), int(step), time.time()))

    def close(self):
        self._f.close()
