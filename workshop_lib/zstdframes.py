"""Reading a .zst file's concatenated frames with bounded memory, noticing a file cut short.

Both ``workshop prep-data`` (corpora, ``data/reader.py``) and ``workshop monitor`` (compressed
logs, ``monitor/parse.py``) read zstd; the reader lives here, at the base, because ``data`` and
``monitor`` never import each other (docs/architecture.md). ``zstandard`` is imported only when a
.zst file is opened.
"""

from __future__ import annotations

import io
from typing import BinaryIO

ZSTD_READ = 1 << 20  # compressed bytes read from the file at a time
# Compressed bytes decompressed per call. A zstd block of 4 bytes can stand for 128 KB (an RLE
# block), so one call's output is at most ~32,768 x its input: 1 KB keeps it under 32 MB, where
# 128 KB let a 200 KB file of zeros expand to 4 GB in one call. Costs ~10 % of decompression speed.
ZSTD_FEED = 1024


class ZstdFrames(io.RawIOBase):
    """A .zst file's frames, decompressed one after another, that notices a file cut short.

    zstandard's ``stream_reader`` (and ``read_to_iter``) end quietly when the input stops inside a
    frame, so a truncated file would lose its tail with no sign (or only one "not JSON" cut line).
    A ``decompressobj`` says when its frame has ended (``eof``); at the end of the file a frame that
    did not end raises EOFError, and a corrupt frame raises OSError, which the readers
    (``data/reader.py``'s ``iter_chunks``, ``monitor/parse.py``) turn into one "cannot decompress"
    line. Work is per 1 KB of compressed input (so one call's output stays bounded), never per line.
    """

    def __init__(self, raw: BinaryIO) -> None:
        import zstandard

        self._raw = raw
        self._new = zstandard.ZstdDecompressor().decompressobj
        self._error = zstandard.ZstdError
        self._d = self._new()
        self._in_frame = False  # input went into a frame whose end has not been seen yet
        self._in = memoryview(b"")
        self._out = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._out:
            if not self._in:
                self._in = memoryview(self._raw.read(ZSTD_READ))
                if not self._in:
                    if self._in_frame:
                        raise EOFError("the file ends inside a zstd frame: it was cut short")
                    return 0
            piece, self._in = self._in[:ZSTD_FEED], self._in[ZSTD_FEED:]
            self._out = memoryview(self._feed(piece))
        n = min(len(buffer), len(self._out))
        buffer[:n] = self._out[:n]
        self._out = self._out[n:]
        return n

    def _feed(self, data) -> bytes:
        """Decompress ``data``, starting a new frame after each one that ends (concatenated frames)."""
        out = []
        while data:
            try:
                out.append(self._d.decompress(data))
            except self._error as exc:
                raise OSError(f"zstd: {exc}") from None
            if self._d.eof:
                data, self._d, self._in_frame = self._d.unused_data, self._new(), False
            else:
                data, self._in_frame = b"", True
        return out[0] if len(out) == 1 else b"".join(out)
