"""The tokenizer facts the trainer needs: vocabulary size and end-of-document id.

The data is already tokenized by prep-data, so training reads only two numbers from the
tokenizer: its vocabulary size (padded by the model, as Megatron-LM does) and the EOD id
(for ``--eod-mask-loss`` / ``--reset-position-ids``). They are read from local files with the
``tokenizers`` library; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

EOD_CANDIDATES = ("<|endoftext|>", "</s>", "<eos>", "<|end_of_text|>", "[EOS]")


@dataclass(frozen=True)
class TokenizerInfo:
    """What megatron-core's GPTDataset asks of a tokenizer (``vocab_size``, ``eod``)."""

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


def _hf_json(model: str) -> Path:
    path = Path(model)
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        raise UsageError(
            f"--tokenizer-model {model}: no tokenizer.json there; pass a folder holding tokenizer.json "
            "(e.g. data/tokenizer) or the file itself"
        )
    return path


def _eos_from_config(folder: Path) -> str | None:
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        f = folder / name
        if f.is_file():
            tok = json.loads(f.read_text()).get("eos_token")
            if isinstance(tok, dict):
                tok = tok.get("content")
            if tok:
                return tok
    return None


def _eod_id(tokenizer, candidates: tuple[str, ...], where: str) -> int:
    for tok in candidates:
        if tok and tokenizer.token_to_id(tok) is not None:
            return int(tokenizer.token_to_id(tok))
    raise UsageError(
        f"{where}: no end-of-document token ({', '.join(c for c in candidates if c)}) in the vocabulary"
    )


def build_tokenizer(args: argparse.Namespace) -> TokenizerInfo:
    """Read the tokenizer named by ``--tokenizer-type`` and its files."""
    from tokenizers import Tokenizer

    kind = args.tokenizer_type
    if kind == "NullTokenizer":
        # Megatron's NullTokenizer: ids 0..N-1 are text, N is EOD, so the vocabulary has N+1 entries.
        return TokenizerInfo(kind, args.vocab_size + 1, args.vocab_size)
    if kind == "HuggingFaceTokenizer":
        path = _hf_json(args.tokenizer_model)
        tok = Tokenizer.from_file(str(path))
        eod = _eod_id(tok, (_eos_from_config(path.parent) or "", *EOD_CANDIDATES), str(path))
        vocab = tok.get_vocab_size(with_added_tokens=True)
    elif kind == "GPT2BPETokenizer":
        from tokenizers.models import BPE

        for flag, f in (("--vocab-file", args.vocab_file), ("--merge-file", args.merge_file)):
            if not Path(f).is_file():
                raise UsageError(f"{flag} {f}: file not found")
        tok = Tokenizer(BPE.from_file(args.vocab_file, args.merge_file))
        eod = _eod_id(tok, ("<|endoftext|>",), args.vocab_file)
        vocab = tok.get_vocab_size(with_added_tokens=True)
    else:  # pragma: no cover - argparse choices guard this
        raise UsageError(f"--tokenizer-type {kind} is not supported")
    if args.vocab_size is not None and args.vocab_size < vocab:
        raise UsageError(f"--vocab-size {args.vocab_size} is smaller than the tokenizer's {vocab} tokens")
    return TokenizerInfo(kind, max(vocab, args.vocab_size or 0), eod)
