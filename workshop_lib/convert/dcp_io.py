"""megatron-core ``torch_dist`` checkpoints, written and read one block at a time.

A ``torch_dist`` checkpoint folder is a ``torch.distributed.checkpoint`` (DCP) checkpoint plus
megatron-core's ``metadata.json`` (which strategy wrote it) and ``common.pt`` (the non-tensor
state). megatron-core loads it with DCP's ``FileSystemReader``, which reads any chunking of a
global tensor, so the import need not run megatron-core (nor a process group) at all:

* writing: :class:`LazySavePlanner` plans from shapes and dtypes only and computes each block in
  ``resolve_data``, which DCP's ``FileSystemWriter`` calls right before writing that item (one
  file per item, so nothing is kept after it is written). Peak memory is one block: a layer's
  fused q/k/v, one expert's projection, or the embedding.
* reading (export): the DCP metadata lists every stored chunk with its file, byte offset and
  length; :class:`DcpReader` loads only the chunks that overlap the block asked for, with
  ``torch.load(weights_only=True)``, whatever TP/PP the trainer wrote them from.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import torch
from torch.distributed.checkpoint import FileSystemReader, FileSystemWriter
from torch.distributed.checkpoint.default_planner import DefaultSavePlanner
from torch.distributed.checkpoint.metadata import (
    ChunkStorageMetadata,
    MetadataIndex,
    TensorProperties,
    TensorStorageMetadata,
)
from torch.distributed.checkpoint.planner import SavePlan, TensorWriteData, WriteItem, WriteItemType

from ..errors import UsageError

MCORE_METADATA = {
    "sharded_backend": "torch_dist",
    "sharded_backend_version": 1,
    "common_backend": "torch",
    "common_backend_version": 1,
}


class Block:
    """One chunk to write: where it sits in its global tensor and how to compute it."""

    def __init__(
        self,
        key: str,
        global_shape: tuple[int, ...],
        offsets: tuple[int, ...],
        sizes: tuple[int, ...],
        dtype: torch.dtype,
        compute: Callable[[], torch.Tensor],
    ):
        self.key, self.global_shape, self.offsets, self.sizes = key, global_shape, offsets, sizes
        self.dtype, self.compute = dtype, compute


class LazySavePlanner(DefaultSavePlanner):
    """Plans tensor chunks and byte objects from metadata; computes each chunk only when written."""

    def __init__(self, blocks: list[Block], objects: dict[str, bytes], on_written: Callable[[Block], None]):
        super().__init__(flatten_state_dict=False, flatten_sharded_tensors=False)
        self.blocks = {(b.key, tuple(b.offsets)): b for b in blocks}
        self.objects = objects
        self.on_written = on_written

    def create_local_plan(self) -> SavePlan:
        items = []
        for b in self.blocks.values():
            items.append(
                WriteItem(
                    index=MetadataIndex(b.key, torch.Size(b.offsets)),
                    type=WriteItemType.SHARD,
                    tensor_data=TensorWriteData(
                        chunk=ChunkStorageMetadata(offsets=torch.Size(b.offsets), sizes=torch.Size(b.sizes)),
                        properties=TensorProperties(dtype=b.dtype),
                        size=torch.Size(b.global_shape),
                    ),
                )
            )
        for key in self.objects:
            items.append(WriteItem(index=MetadataIndex(key), type=WriteItemType.BYTE_IO))
        self.plan = SavePlan(items)
        return self.plan

    def resolve_data(self, write_item: WriteItem):
        if write_item.type == WriteItemType.BYTE_IO:
            return io.BytesIO(self.objects[write_item.index.fqn])
        b = self.blocks[(write_item.index.fqn, tuple(write_item.index.offset))]
        t = b.compute()
        if tuple(t.shape) != tuple(b.sizes) or t.dtype != b.dtype:
            raise AssertionError(
                f"{b.key}{b.offsets}: computed {tuple(t.shape)} {t.dtype}, planned {b.sizes} {b.dtype}"
            )
        self.on_written(b)
        return t.contiguous()


def none_object_bytes() -> bytes:
    """What megatron-core stores for a ShardedObject whose data is None (a list of the data)."""
    buf = io.BytesIO()
    torch.save([None], buf)
    return buf.getvalue()


def write_checkpoint(
    folder: Path,
    blocks: list[Block],
    objects: dict[str, bytes],
    common: dict,
    on_written: Callable[[Block], None],
) -> None:
    """Write a complete torch_dist checkpoint folder (which must exist and be empty)."""
    import warnings

    from torch.distributed.checkpoint.state_dict_saver import save

    writer = FileSystemWriter(str(folder), single_file_per_rank=False, sync_files=True, thread_count=1)
    with warnings.catch_warnings():  # "assuming the intent is to save in a single process": it is
        warnings.simplefilter("ignore", UserWarning)
        save({}, storage_writer=writer, planner=LazySavePlanner(blocks, objects, on_written), no_dist=True)
    torch.save(common, folder / "common.pt")
    (folder / "metadata.json").write_text(json.dumps(MCORE_METADATA))


class DcpReader:
    """Blocks of the global tensors of a torch_dist checkpoint, read chunk by chunk."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        meta = self.folder / "metadata.json"
        try:
            backend = json.loads(meta.read_text())["sharded_backend"]
        except (OSError, ValueError, KeyError, TypeError):
            raise UsageError(
                f"{meta}: missing or unreadable; {self.folder} is not a torch_dist checkpoint"
            ) from None
        if backend != "torch_dist":
            raise UsageError(f"{meta}: sharded_backend {backend!r}; only torch_dist checkpoints are read")
        try:
            self.metadata = FileSystemReader(str(self.folder)).read_metadata()
        except Exception as exc:  # noqa: BLE001 - a damaged .metadata is bad input
            raise UsageError(
                f"{self.folder}/.metadata: unreadable ({exc}); is the checkpoint complete?"
            ) from None
        self._cache: tuple[tuple, torch.Tensor] | None = None

    def tensors(self) -> dict[str, TensorStorageMetadata]:
        return {
            k: v for k, v in self.metadata.state_dict_metadata.items() if isinstance(v, TensorStorageMetadata)
        }

    def shape(self, key: str) -> tuple[int, ...] | None:
        md = self.metadata.state_dict_metadata.get(key)
        return tuple(md.size) if isinstance(md, TensorStorageMetadata) else None

    def dtype(self, key: str) -> torch.dtype:
        return self.metadata.state_dict_metadata[key].properties.dtype

    def _chunk(self, key: str, chunk: ChunkStorageMetadata) -> torch.Tensor:
        ident = (key, tuple(chunk.offsets))
        if self._cache is not None and self._cache[0] == ident:
            return self._cache[1]
        info = self.metadata.storage_data[MetadataIndex(key, chunk.offsets)]
        if getattr(info, "transform_descriptors", None):
            raise UsageError(
                f"{self.folder}: {key} is stored with transforms {info.transform_descriptors}; not supported"
            )
        with open(self.folder / info.relative_path, "rb") as fh:
            fh.seek(info.offset)
            raw = fh.read(info.length)
        t = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
        if tuple(t.shape) != tuple(chunk.sizes):
            raise UsageError(f"{self.folder}: chunk {key}{tuple(chunk.offsets)} has shape {tuple(t.shape)}")
        self._cache = (ident, t)
        return t

    def read(self, key: str, offsets: tuple[int, ...], sizes: tuple[int, ...]) -> torch.Tensor:
        """The block ``[offsets, offsets + sizes)`` of global tensor ``key``, from every chunk that overlaps."""
        md = self.metadata.state_dict_metadata.get(key)
        if not isinstance(md, TensorStorageMetadata):
            raise UsageError(f"{self.folder}: the checkpoint has no tensor {key}")
        out = torch.empty(sizes, dtype=md.properties.dtype)
        covered = 0
        for c in md.chunks:
            lo = [max(o, co) for o, co in zip(offsets, c.offsets, strict=True)]
            hi = [
                min(o + s, co + cs) for o, s, co, cs in zip(offsets, sizes, c.offsets, c.sizes, strict=True)
            ]
            if any(a >= b for a, b in zip(lo, hi, strict=True)):
                continue
            src = self._chunk(key, c)
            src = src[tuple(slice(a - co, b - co) for a, b, co in zip(lo, hi, c.offsets, strict=True))]
            out[tuple(slice(a - o, b - o) for a, b, o in zip(lo, hi, offsets, strict=True))] = src
            n = 1
            for a, b in zip(lo, hi, strict=True):
                n *= b - a
            covered += n
        if covered != out.numel():
            raise UsageError(
                f"{self.folder}: {key} block {offsets} is not fully stored (incomplete checkpoint?)"
            )
        return out
