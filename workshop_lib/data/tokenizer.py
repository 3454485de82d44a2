"""Tokenizer adapters for prep-data: the same token ids Megatron-LM's tokenizers give, fast.

Three kinds, loaded from local files only (no download), each with Megatron's end-of-document id:

* ``HuggingFaceTokenizer``: a ``tokenizer.json`` or a folder holding one (plus ``tokenizer_config.json``
  for the ``eos_token``). Megatron tokenizes with ``tokenize()`` + ``convert_tokens_to_ids`` (no BOS/EOS
  added), which is ``tokenizers``' ``encode(text, add_special_tokens=False)``; ``vocab_size`` is
  ``len(tokenizer)`` (added tokens included); EOD is the ``eos_token``.
* ``GPT2BPETokenizer``: ``--vocab-file vocab.json --merge-file merges.txt``; EOD ``<|endoftext|>``.
* ``TikTokenizer``: Megatron's JSON rank file (``[{"rank", "token_bytes", "token_str"}, ...]``, ids
  shifted by 1,000 special tokens, pattern v2, EOD ``</s>`` = 2) or an OpenAI ``.tiktoken`` file
  named after its encoding (``cl100k_base.tiktoken``...; EOD ``<|endoftext|>``).

The fast engine is ``gigatoken`` (Rust, parallel, JSON read in Rust). It is used where it loads the
tokenizer and gives the same ids as the reference library on a probe text; otherwise the reference
library's batch API is used and prep-data says so on stderr.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UsageError
from ..paths import SAMPLE_TOKENIZER

TOKENIZER_TYPES = ("HuggingFaceTokenizer", "GPT2BPETokenizer", "TikTokenizer")
EOS_CANDIDATES = ("<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", "<|eot_id|>")
# Text that exercises byte fallback, Unicode classes, digits, whitespace runs and special tokens.
PROBE_TEXT = (
    "Hello, world! It's 2024-06-01; x=3.14e-5 \t\n\n  indented\u2028line\u00a0nbsp caf\u00e9 na\u00efve "
    "\u65e5\u672c\u8a9e \U0001f389 \u0000 NUL \r\n <|endoftext|> </s> def f(a, b):\n    return a**b  # ok\n"
    "URL https://example.com/a?b=c&d=e \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u0420\u0443\u0441\u0441\u043a\u0438\u0439 "
    "      many   spaces ... !!! ??? 1234567890 'll 've 're 's 't 'd 'm"
)


def set_threads(workers: int) -> None:
    """Size the Rust thread pools (gigatoken, tokenizers) before they start; no effect afterwards."""
    for var in ("RAYON_NUM_THREADS", "RAYON_RS_NUM_THREADS"):
        os.environ[var] = str(max(1, workers))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")


def _awkward_to_numpy(arr: Any) -> tuple[np.ndarray, np.ndarray]:
    """gigatoken's awkward result as (flat token ids, per-document lengths), without copies."""
    layout = arr.layout
    offsets = np.asarray(layout.offsets.data, dtype=np.int64)
    content = np.asarray(layout.content.data)
    flat = content[offsets[0] : offsets[-1]]
    return flat, np.diff(offsets)


@dataclass
class TokenizerAdapter:
    """One loaded tokenizer: ``encode`` texts to (flat ids, lengths), ``decode`` ids to text."""

    type: str
    model: str
    vocab_size: int
    eod: int
    engine: str  # "gigatoken" or the reference library's name
    reference: Any  # tokenizers.Tokenizer or tiktoken.Encoding
    fast: Any = None  # gigatoken.Tokenizer, when it matches the reference
    id_offset: int = 0  # Megatron's TikTokenizer shifts ranks by its special tokens
    note: str = ""
    fast_files: bool = field(default=False)

    # --- encoding -------------------------------------------------------------------------------
    def encode(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        if not texts:
            return np.zeros(0, np.uint32), np.zeros(0, np.int64)
        if self.fast is not None:
            return _awkward_to_numpy(self.fast.encode_batch(list(texts)))
        return self._encode_reference(texts)

    def encode_jsonl(self, path: str, key: str) -> tuple[np.ndarray, np.ndarray] | None:
        """Encode a JSONL file's ``key`` field in Rust (gigatoken); None when not available."""
        if not self.fast_files:
            return None
        import gigatoken

        return _awkward_to_numpy(self.fast.encode_files(gigatoken.JsonlFileSource([path], field=key)))

    def _encode_reference(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        if self.type == "TikTokenizer":
            ids = self.reference.encode_batch(list(texts), allowed_special="all")
        else:
            batch = getattr(self.reference, "encode_batch_fast", self.reference.encode_batch)
            ids = [e.ids for e in batch(list(texts), add_special_tokens=False)]
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        flat = np.fromiter((t for x in ids for t in x), dtype=np.int64, count=int(lengths.sum()))
        if self.id_offset:
            # Megatron's ids: its specials are 0..offset-1 (tiktoken numbered them from vocab_size up),
            # the ranks follow them
            flat = np.where(flat >= self.vocab_size, flat - self.vocab_size, flat + self.id_offset)
        return flat, lengths

    # --- decoding -------------------------------------------------------------------------------
    def decode(self, ids: Sequence[int] | np.ndarray) -> str:
        ids = [int(i) for i in ids]
        if self.type == "TikTokenizer":
            return _tiktoken_decode(self, ids)
        return self.reference.decode(ids, skip_special_tokens=False)


# --- loading --------------------------------------------------------------------------------------
def load_tokenizer(
    tokenizer_type: str = "HuggingFaceTokenizer",
    tokenizer_model: str | os.PathLike[str] | None = None,
    *,
    vocab_file: str | None = None,
    merge_file: str | None = None,
    vocab_size: int | None = None,
    engine: str = "auto",
) -> TokenizerAdapter:
    """Load a tokenizer by Megatron's ``--tokenizer-type`` name; ``engine`` is auto|gigatoken|reference."""
    if tokenizer_type == "HuggingFaceTokenizer":
        adapter = _load_hf(Path(tokenizer_model or SAMPLE_TOKENIZER))
    elif tokenizer_type == "GPT2BPETokenizer":
        adapter = _load_gpt2(vocab_file, merge_file)
    elif tokenizer_type == "TikTokenizer":
        adapter = _load_tiktoken(tokenizer_model, vocab_size)
    else:
        raise UsageError(
            f"--tokenizer-type {tokenizer_type!r} is not supported; use one of {', '.join(TOKENIZER_TYPES)}"
        )
    if engine != "reference":
        _attach_gigatoken(adapter, required=engine == "gigatoken")
    return adapter


def _hf_files(model: Path) -> tuple[Path, dict]:
    if model.is_dir():
        tj = model / "tokenizer.json"
        cfg_path = model / "tokenizer_config.json"
    else:
        tj, cfg_path = model, model.parent / "tokenizer_config.json"
    if not tj.is_file():
        raise UsageError(
            f"--tokenizer-model {model}: no tokenizer.json there; pass a Hugging Face tokenizer "
            f"folder or its tokenizer.json (the sample one is {SAMPLE_TOKENIZER})"
        )
    cfg: dict = {}
    if cfg_path.is_file():
        with contextlib.suppress(ValueError):
            cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    return tj, cfg


def _token_content(value: Any) -> str | None:
    if isinstance(value, dict):
        return value.get("content")
    return value if isinstance(value, str) else None


def _load_hf(model: Path) -> TokenizerAdapter:
    from tokenizers import Tokenizer

    tj, cfg = _hf_files(model)
    try:
        tok = Tokenizer.from_file(str(tj))
    except Exception as exc:  # noqa: BLE001 - report which file and why
        raise UsageError(f"{tj}: not a loadable tokenizer.json ({exc})") from None
    eos = _token_content(cfg.get("eos_token"))
    if eos is None or tok.token_to_id(eos) is None:
        eos = next((c for c in EOS_CANDIDATES if tok.token_to_id(c) is not None), None)
    if eos is None:
        raise UsageError(f"{tj}: no end-of-text token (set eos_token in tokenizer_config.json)")
    return TokenizerAdapter(
        "HuggingFaceTokenizer",
        str(model.resolve()),  # the folder when given one: what AutoTokenizer loads
        tok.get_vocab_size(with_added_tokens=True),
        tok.token_to_id(eos),
        "tokenizers",
        tok,
    )


def _load_gpt2(vocab_file: str | None, merge_file: str | None) -> TokenizerAdapter:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    if not vocab_file or not merge_file:
        raise UsageError("GPT2BPETokenizer needs --vocab-file vocab.json and --merge-file merges.txt")
    for flag, f in (("--vocab-file", vocab_file), ("--merge-file", merge_file)):
        if not Path(f).is_file():
            raise UsageError(f"{flag} {f}: no such file")
    try:
        tok = Tokenizer(models.BPE.from_file(vocab_file, merge_file))
    except Exception as exc:  # noqa: BLE001
        raise UsageError(f"--vocab-file/--merge-file: not a GPT-2 BPE vocabulary ({exc})") from None
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    eos = "<|endoftext|>"
    if tok.token_to_id(eos) is None:
        raise UsageError(f"--vocab-file {vocab_file}: no {eos} token (GPT-2's end of document)")
    tok.add_special_tokens([eos])
    return TokenizerAdapter(
        "GPT2BPETokenizer",
        str(Path(vocab_file).resolve()),
        tok.get_vocab_size(with_added_tokens=True),
        tok.token_to_id(eos),
        "tokenizers",
        tok,
    )


# Megatron's TikTokenizer (megatron.core.tokenizers.text.libraries.tiktoken_tokenizer) defaults.
_TIKTOKEN_PATTERN_V2 = (
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}|"
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
)
_MEGATRON_SPECIALS = ["<unk>", "<s>", "</s>", "<mask>", "<pad>", "<cls>", "<sep>"]
_MEGATRON_NUM_SPECIAL = 1000
_MEGATRON_MAX_VOCAB = 2**17


def _load_tiktoken(model: str | os.PathLike[str] | None, vocab_size: int | None) -> TokenizerAdapter:
    import tiktoken

    if not model or not Path(model).is_file():
        raise UsageError(
            f"--tokenizer-model {model}: TikTokenizer needs a local tiktoken file "
            "(Megatron's JSON rank file or an OpenAI NAME.tiktoken file)"
        )
    path = Path(model)
    if path.suffix == ".json":
        try:
            entries = json.loads(path.read_text(encoding="utf-8"))
            assert isinstance(entries, list)
        except Exception:  # noqa: BLE001
            raise UsageError(
                f"{path}: not Megatron's tiktoken JSON (a list of rank/token_bytes/token_str)"
            ) from None
        n = _MEGATRON_NUM_SPECIAL
        size = vocab_size or min(_MEGATRON_MAX_VOCAB, len(entries) + n)
        if size - n > len(entries):
            raise UsageError(
                f"{path}: {len(entries)} ranks cannot fill --vocab-size {size} "
                f"({n} special tokens + ranks); pass --vocab-size {len(entries) + n} or less"
            )
        ranks = {base64.b64decode(e["token_bytes"]): int(e["rank"]) for e in entries[: size - n]}
        specials = _MEGATRON_SPECIALS + [f"<SPECIAL_{i}>" for i in range(len(_MEGATRON_SPECIALS), n)]
        # tiktoken needs ranks from 0; Megatron's ids are the ranks + n (done after encoding).
        enc = tiktoken.Encoding(
            name=path.stem,
            pat_str=_TIKTOKEN_PATTERN_V2,
            mergeable_ranks=ranks,
            special_tokens={t: size + i for i, t in enumerate(specials)},
        )
        adapter = TokenizerAdapter(
            "TikTokenizer", str(path.resolve()), size, specials.index("</s>"), "tiktoken", enc, id_offset=n
        )
        adapter.note = "megatron-json"
        return adapter
    import tiktoken_ext.openai_public as public

    name = path.name.split(".")[0]
    ctor = public.ENCODING_CONSTRUCTORS.get(name)
    if ctor is None:
        raise UsageError(
            f"{path}: name the file after its encoding ({', '.join(sorted(public.ENCODING_CONSTRUCTORS))}"
            ".tiktoken) or use Megatron's JSON rank format"
        )
    ranks = tiktoken.load.load_tiktoken_bpe(str(path))
    original = public.load_tiktoken_bpe
    public.load_tiktoken_bpe = lambda *a, **k: ranks  # the constructor would download; hand it the file
    try:
        spec = ctor()
    finally:
        public.load_tiktoken_bpe = original
    spec.pop("explicit_n_vocab", None)  # the file may be a trimmed or extended vocabulary
    enc = tiktoken.Encoding(**spec)
    return TokenizerAdapter("TikTokenizer", str(path.resolve()), enc.n_vocab, enc.eot_token, "tiktoken", enc)


def _tiktoken_decode(adapter: TokenizerAdapter, ids: list[int]) -> str:
    enc, off = adapter.reference, adapter.id_offset
    if not off:
        return enc.decode(ids)
    parts: list[bytes] = []
    for i in ids:
        if i < off:
            parts.append(
                (_MEGATRON_SPECIALS[i] if i < len(_MEGATRON_SPECIALS) else f"<SPECIAL_{i}>").encode()
            )
        else:
            parts.append(enc.decode_single_token_bytes(i - off))
    return b"".join(parts).decode("utf-8", errors="replace")


def _attach_gigatoken(adapter: TokenizerAdapter, *, required: bool) -> None:
    """Use gigatoken when it loads this tokenizer and matches the reference ids on the probe text."""
    reason = ""
    if adapter.type == "TikTokenizer":
        reason = "gigatoken is not wired for TikTokenizer files here"
    else:
        try:
            # encode_batch / encode_files return awkward arrays only when awkward is installed (a
            # --no-deps install of gigatoken returns lists, which the fast path cannot read).
            import awkward  # noqa: F401
            import gigatoken

            fast = gigatoken.Tokenizer.from_json(adapter.reference.to_str())
            probe = [PROBE_TEXT, PROBE_TEXT[::-1], "", "a", " " * 40, "\u2028" * 3]
            want = [e.ids for e in adapter.reference.encode_batch(probe, add_special_tokens=False)]
            got = fast.encode_batch_list(probe, parallel=False)
            if got == want and fast.vocab_size <= adapter.vocab_size:
                adapter.fast, adapter.engine, adapter.fast_files = fast, "gigatoken", True
                return
            reason = "gigatoken's ids differ from the reference library's on the probe text"
        except BaseException as exc:  # noqa: BLE001 - a Rust panic is a BaseException; any failure: fall back
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            reason = f"gigatoken cannot load this tokenizer ({type(exc).__name__}: {str(exc)[:120]})"
    if required:
        raise UsageError(f"--engine gigatoken: {reason}; use --engine auto")
    adapter.note = (adapter.note + "; " if adapter.note else "") + reason
