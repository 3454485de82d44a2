"""Training data: megatron-core's ``GPTDataset`` through ``BlendedMegatronDatasetBuilder``.

:func:`check_split_plan` reads each prefix's index (cheap: the ``.idx`` file is memory-mapped)
and refuses a plan where a split that is asked for samples gets no documents, or fewer tokens
than one sequence, instead of letting the sample-index builder loop forever as upstream does.
:func:`build_datasets` then builds train/valid/test exactly as Megatron-LM's ``pretrain_gpt.py``
does, and :class:`PretrainingBatches` serves this rank's micro-batches from a consumed-samples
position, as Megatron's ``MegatronPretrainingSampler`` does, so a resumed run continues with the
very next sample.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from ..data.blend import samples_per_split, split_ranges
from ..errors import UsageError
from .lifeline import dataloader_worker_init
from .tokenizer import TokenizerInfo

SPLIT_NAMES = ("train", "validation", "test")


def target_samples(args: argparse.Namespace) -> list[int]:
    """Megatron-LM's ``train_valid_test_num_samples``."""
    return samples_per_split(args.train_iters, args.global_batch_size, args.eval_iters, args.eval_interval)


def check_split_plan(args: argparse.Namespace) -> dict:
    """Verify every prefix and split can deliver samples; returns a summary for the log.

    megatron-core splits a prefix by sequences (one per non-empty document in prep-data's output),
    so the check counts sequences the same way. It reads only the ``.idx`` (the data room's
    numpy reader; no megatron-core import), so ``workshop train`` runs it before starting.
    """
    from ..data.indexed import IndexedDatasetReader

    prefixes, _weights = args.blend
    wanted = target_samples(args)
    summary = {}
    for prefix in prefixes:
        for ext in (".bin", ".idx"):
            if not Path(prefix + ext).is_file():
                raise UsageError(
                    f"--data-path {prefix}: {prefix}{ext} not found; give the prep-data output prefix "
                    "without the extension (e.g. runs/workshop/data/techpulse_text_document)"
                )
        try:
            lengths = np.asarray(IndexedDatasetReader(prefix).lengths, dtype=np.int64)
        except UsageError as exc:
            raise UsageError(f"--data-path {prefix}: {exc}") from None
        n = len(lengths)
        rows = {}
        for name, bounds, want in zip(SPLIT_NAMES, split_ranges(args.split_weights, n), wanted, strict=True):
            if bounds is None and name == "train":
                raise UsageError(f"--split {args.split!r}: the train split is 0; give it a positive weight")
            if bounds is None or want == 0:
                rows[name] = {"documents": 0 if bounds is None else bounds[1] - bounds[0], "tokens": 0}
                continue
            n_docs = bounds[1] - bounds[0]
            tokens = int(lengths[bounds[0] : bounds[1]].sum())
            rows[name] = {"documents": n_docs, "tokens": tokens}
            if n_docs == 0 or tokens < args.seq_length + 1:
                raise UsageError(
                    f"--split {args.split!r} leaves the {name} split of {prefix} with {n_docs} documents "
                    f"({tokens} tokens) of {n}, less than one sequence of {args.seq_length + 1} tokens; "
                    + (
                        "use --eval-iters 0 (no validation) or a larger validation share"
                        if name != "train"
                        else "use more data or a larger train share"
                    )
                )
        summary[prefix] = {"documents": n, "tokens": int(lengths.sum()), "splits": rows}
    return summary


def build_datasets(args: argparse.Namespace, tokenizer: TokenizerInfo):
    """(train, valid, test) datasets, None where a split is empty or not asked for."""
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig, MockGPTDataset

    config = GPTDatasetConfig(
        random_seed=args.seed,
        sequence_length=args.seq_length,
        blend=args.blend,
        split=args.split,
        path_to_cache=args.data_cache_path,
        tokenizer=tokenizer,
        reset_position_ids=args.reset_position_ids,
        reset_attention_mask=False,
        eod_mask_loss=args.eod_mask_loss,
        create_attention_mask=False,
        mid_level_dataset_surplus=0.005,
    )
    sizes = target_samples(args)
    if args.eval_iters == 0:
        sizes[1] = sizes[2] = 0
    cls = MockGPTDataset if args.mock_data else GPTDataset
    return BlendedMegatronDatasetBuilder(cls, sizes, lambda: True, config).build()


class PretrainingBatches:
    """This rank's micro-batches from ``consumed`` samples on (Megatron's pretraining sampler).

    Every ``micro_batch_size x data_parallel_size`` consecutive samples form one step of the
    data-parallel group; rank ``r`` takes its slice. ``cyclic`` wraps around (validation).
    """

    def __init__(
        self, dataset, consumed: int, args: argparse.Namespace, dp_rank: int, *, cyclic: bool = False
    ):
        self.dataset = dataset
        self.mbs = args.micro_batch_size
        self.dp = args.data_parallel_size
        self.dp_rank = dp_rank
        self.cyclic = cyclic
        self.position = consumed
        self.num_workers = args.num_workers
        self._iter = self._make_iter()

    def _indices(self) -> Iterator[list[int]]:
        n = len(self.dataset)
        step = self.mbs * self.dp
        pos = self.position
        while True:
            if pos + step > n:
                if not self.cyclic:
                    return
                pos = 0
            start = pos + self.dp_rank * self.mbs
            yield list(range(start, start + self.mbs))
            pos += step

    def _make_iter(self):
        loader = torch.utils.data.DataLoader(
            self.dataset,
            batch_sampler=self._indices(),
            num_workers=self.num_workers,
            pin_memory=False,
            persistent_workers=False,
            # workers ignore Ctrl-C and die with the rank: the rank decides when to stop
            worker_init_fn=dataloader_worker_init if self.num_workers else None,
            # its own generator: creating a loader must not draw from the global RNG, or a
            # resumed run's dropout would differ from an uninterrupted one
            generator=torch.Generator().manual_seed(0),
        )
        return iter(loader)

    def __iter__(self):
        return self

    def __next__(self) -> dict[str, torch.Tensor]:
        try:
            return next(self._iter)
        except StopIteration:
            raise RuntimeError(
                "the training dataset ran out of samples; megatron-core sizes it for --train-iters, "
                "so this means the index cache does not match the flags: delete the cache folder next "
                "to the data (or --data-cache-path) and start again"
            ) from None
