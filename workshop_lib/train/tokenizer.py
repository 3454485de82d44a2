"""The tokenizer facts the trainer needs: vocabulary size and end-of-document id.

The data is already tokenized by prep-data, so training reads only two numbers from the
tokenizer: its vocabulary size (padded by the model, as Megatron-LM does) and the EOD id
(for ``--eod-mask-loss`` / ``--reset-position-ids``). They come from the data room's loader, the
same one prep-data tokenized with (local files only, nothing downloaded); ``NullTokenizer`` is
Megatron's: ids ``0..N-1`` are text and ``N`` is EOD.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ..errors import UsageError


@dataclass(frozen=True)
class TokenizerInfo:
    """What megatron-core's GPTDataset asks of a tokenizer (``vocab_size``, ``eod``, ``pad``)."""

    name: str
    vocab_size: int
    eod: int

    @property
    def pad(self) -> int:
        """No pad token: pre-training samples are packed, so -1 (megatron-core's own placeholder)."""
        return -1

    @property
    def unique_identifiers(self) -> dict:
        """Part of the dataset cache key, as megatron-core's tokenizers provide it."""
        return {"class": self.name, "vocab_size": self.vocab_size, "eod": self.eod}


def build_tokenizer(args: argparse.Namespace) -> TokenizerInfo:
    """Read the tokenizer named by ``--tokenizer-type`` and its files."""
    if args.tokenizer_type == "NullTokenizer":
        return TokenizerInfo("NullTokenizer", args.vocab_size + 1, args.vocab_size)
    from ..data.tokenizer import load_tokenizer

    tok = load_tokenizer(
        args.tokenizer_type,
        args.tokenizer_model,
        vocab_file=args.vocab_file,
        merge_file=args.merge_file,
        vocab_size=args.vocab_size,
        engine="reference",
    )
    if args.vocab_size is not None and args.vocab_size < tok.vocab_size:
        raise UsageError(
            f"--vocab-size {args.vocab_size} is smaller than the tokenizer's {tok.vocab_size} tokens"
        )
    return TokenizerInfo(args.tokenizer_type, max(tok.vocab_size, args.vocab_size or 0), tok.eod)
