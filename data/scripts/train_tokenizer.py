"""Train the sample byte-level BPE tokenizer on the sample corpus; save it as a Hugging Face folder.

The result (``data/tokenizer/tokenizer.json`` + ``tokenizer_config.json``) loads with
``tokenizers.Tokenizer.from_file``, ``transformers.AutoTokenizer.from_pretrained`` (Megatron's
``--tokenizer-type HuggingFaceTokenizer --tokenizer-model data/tokenizer``) and ``gigatoken``.
``<|endoftext|>`` is the end-of-document token. Deterministic for a given corpus and
``tokenizers`` version::

    .venv/bin/python data/scripts/train_tokenizer.py [--vocab-size 8192] [--corpus F] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

EOS = "<|endoftext|>"


def texts(corpus: Path) -> Iterator[str]:
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)["text"]


def train(corpus: Path, vocab_size: int) -> Tokenizer:
    """A GPT-2 style byte-level BPE (no prefix space, every byte in the alphabet, EOS special)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts(corpus), trainer=trainer)
    return tok


def save(tok: Tokenizer, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": EOS,
        "eos_token": EOS,
        "unk_token": EOS,
        "add_bos_token": False,
        "add_eos_token": False,
        "model_max_length": 1_000_000_000,
        "clean_up_tokenization_spaces": False,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    (out / "special_tokens_map.json").write_text(
        json.dumps({"bos_token": EOS, "eos_token": EOS, "unk_token": EOS}, indent=2) + "\n"
    )


def main() -> None:
    data = Path(__file__).resolve().parents[1]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=data / "techpulse_sample.jsonl")
    ap.add_argument("--out", type=Path, default=data / "tokenizer")
    ap.add_argument("--vocab-size", type=int, default=8192)
    args = ap.parse_args()
    tok = train(args.corpus, args.vocab_size)
    save(tok, args.out)
    print(f"saved a {tok.get_vocab_size()}-token byte-level BPE to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
