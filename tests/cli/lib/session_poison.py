"""session_poison.py FILE logits|rows - poisons a sluice session file
(src/engine/session_save.c's layout) with NaN and makes its checksums
valid again, as a damaged-in-memory state saved by a faulty run would be:

  logits  every saved logit becomes NaN (the file must hold logits)
  rows    every byte of the first layer's first row stream becomes 0xFF
          (an f16 or f32 NaN in each element)

The two checksums are recomputed with the file format's own hash (written
here from its description in session_save.c, not taken from sluice), so
that sl_session_load accepts the file and only its values are wrong.
Exits 1 with a message when the file is not one it can poison."""
import struct
import sys

M = (1 << 64) - 1
P1 = 0x9E3779B185EBCA87
P2 = 0xC2B2AE3D27D4EB4F
P3 = 0x165667B19E3779F9
HEADER = 96
LAYER = 32


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def mix_word(acc, w):
    return (rotl(acc ^ ((w * P2) & M), 31) * P1) & M


def hash_chunk(h, b):
    lanes = [(h + P1) & M, h ^ P2, (h + P3) & M, (h - P1) & M]
    n, i = len(b), 0
    while i + 32 <= n:
        for k in range(4):
            lanes[k] = mix_word(lanes[k], struct.unpack_from("<Q", b, i + 8 * k)[0])
        i += 32
    t = (rotl(lanes[0], 1) + rotl(lanes[1], 7) + rotl(lanes[2], 12) + rotl(lanes[3], 18)) & M
    while i + 8 <= n:
        t = mix_word(t, struct.unpack_from("<Q", b, i)[0])
        i += 8
    while i < n:
        t = ((t ^ b[i]) * P3) & M
        i += 1
    t = mix_word(t, n)
    t ^= t >> 33
    t = (t * P2) & M
    t ^= t >> 29
    return t


def main():
    path, what = sys.argv[1], sys.argv[2]
    data = bytearray(open(path, "rb").read())
    if data[:8] != b"SLSTATE1" or len(data) < HEADER:
        sys.exit("session_poison: %s is not a session file" % path)
    n_layer, n_vocab = struct.unpack_from("<II", data, 32)
    n_tok, snap, has_logits = struct.unpack_from("<IiI", data, 44)
    seq_total = struct.unpack_from("<Q", data, 72)[0]
    # the body's chunks, in the order the writer hashes them
    chunks = []
    pos = HEADER
    chunks.append((pos, 4 * n_tok))
    pos += 4 * n_tok
    table = pos
    for il in range(n_layer):
        chunks.append((pos, LAYER))
        pos += LAYER
    first_rows = None
    for il in range(n_layer):
        lo, rb0, rb1, seq = struct.unpack_from("<IQQQ", data, table + il * LAYER + 4)
        for rb in (rb0, rb1):
            if rb:
                ln = rb * (n_tok - lo)
                if first_rows is None:
                    first_rows = (pos, ln)
                chunks.append((pos, ln))
                pos += ln
        if seq:
            chunks.append((pos, seq))
            pos += seq
    if snap >= 0:
        chunks.append((pos, seq_total))
        pos += seq_total
    logits = None
    if has_logits == 1:
        logits = (pos, 4 * n_vocab)
        chunks.append(logits)
        pos += 4 * n_vocab
    if pos != len(data):
        sys.exit("session_poison: %s: the layout gives %d bytes, the file has %d"
                 % (path, pos, len(data)))
    if what == "logits":
        if not logits:
            sys.exit("session_poison: %s holds no logits" % path)
        for i in range(n_vocab):
            struct.pack_into("<f", data, logits[0] + 4 * i, float("nan"))
    elif what == "rows":
        if not first_rows:
            sys.exit("session_poison: %s holds no rows" % path)
        data[first_rows[0]:first_rows[0] + first_rows[1]] = b"\xff" * first_rows[1]
    else:
        sys.exit("session_poison: say logits or rows")
    h = 0
    for off, ln in chunks:
        h = hash_chunk(h, bytes(data[off:off + ln]))
    struct.pack_into("<Q", data, 64, h)
    struct.pack_into("<Q", data, 88, hash_chunk(0, bytes(data[:88])))
    open(path, "wb").write(bytes(data))


main()
