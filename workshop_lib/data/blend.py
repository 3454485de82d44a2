"""``workshop blend``: Megatron's ``--data-path`` for a weighted mix, and what a planned run takes from it.

Megatron-Core's arithmetic, reproduced without importing it (``blend`` must start instantly):

* samples per split (``megatron.training``): train = ``train_iters x global_batch``, valid =
  ``(train_iters // eval_interval + 1) x eval_iters x global_batch``, test = ``eval_iters x global_batch``;
* a blend of several datasets asks each for ``ceil(ceil(samples x weight) x 1.005)`` samples
  (``_get_size_per_split_per_dataset`` with the default 0.5 % surplus); one dataset alone gets exactly
  the split's samples;
* each dataset's sequences are split by ``parse_and_normalize_split`` + ``convert_split_vector_to_split_matrix``
  and ``int(round(bookend x sequences))`` (``_build_megatron_dataset_splits``): GPT splits by sequence,
  i.e. by non-empty document;
* a split asked for ``n`` samples reads its tokens ``epochs`` times, the smallest count with
  ``epochs x tokens >= n x seq_length + 1`` (``GPTDataset._get_num_epochs``).

Upstream pitfalls turned into errors: a split that gets no sequence but is asked for samples makes
Megatron's ``_get_num_epochs`` loop forever (the default split 969,30,1 leaves the test split empty below
500 documents), and ``--data-path "A 0.5 B 0.5"`` (prefix before weight) is read as four prefixes.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from ..errors import UsageError
from ..paths import data_path_for
from .indexed import IndexedDatasetReader, idx_path, strip_suffix

SPLITS = ("train", "valid", "test")
SURPLUS = 0.005  # BlendedMegatronDatasetConfig.mid_level_dataset_surplus


SPLIT_FORM = "give up to three non-negative weights with a positive sum, e.g. 98,2,0 or 969/30/1"


def parse_split(split: str) -> list[float]:
    """``parse_and_normalize_split``: '98,2,0' -> [0.98, 0.02, 0.0] (missing entries are 0).

    Megatron keeps whatever ``[.0-9]+`` finds, so it reads '-1,2,3' as 1,2,3 and '98,2,x' as 98,2
    and fails on '1.2.3' with a bare ValueError. Here anything but numbers and , / : or space
    separators is one UsageError line naming --split and the form, so a typo never trains on a
    split the user did not mean.
    """
    if not re.fullmatch(r"[0-9.,/:\s]*", split):
        bad = re.sub(r"[0-9.,/:\s]", "", split)[:10]
        why = "weights cannot be negative" if "-" in bad else f"unexpected {bad!r}"
        raise UsageError(f"--split {split!r}: {why}; {SPLIT_FORM}")
    parts = []
    for x in re.findall(r"[.0-9]+", split):
        try:
            parts.append(float(x))
        except ValueError:
            raise UsageError(f"--split {split!r}: {x!r} is not a number; {SPLIT_FORM}") from None
    if not parts or len(parts) > 3 or sum(parts) <= 0:
        raise UsageError(f"--split {split!r}: {SPLIT_FORM}")
    parts += [0.0] * (3 - len(parts))
    total = sum(parts)
    return [p / total for p in parts]


def split_bookends(vector: list[float]) -> list[tuple[float, float] | None]:
    """``convert_split_vector_to_split_matrix``: [0.98, 0.02, 0] -> [(0, .98), (.98, 1), None]."""
    edges = [0.0]
    for v in vector:
        edges.append(edges[-1] + v)
    return [(a, b) if b > a else None for a, b in zip(edges[:-1], edges[1:], strict=True)]


def split_ranges(vector: list[float], sequences: int) -> list[tuple[int, int] | None]:
    """The sequence ranges Megatron gives each split (``int(round(edge x sequences))``)."""
    return [
        None if be is None else (int(round(be[0] * float(sequences))), int(round(be[1] * float(sequences))))
        for be in split_bookends(vector)
    ]


def samples_per_split(
    train_iters: int, global_batch_size: int, eval_iters: int, eval_interval: int
) -> list[int]:
    """Megatron-LM's train/valid/test sample counts for an iteration-based run."""
    evals = (train_iters // eval_interval + 1) * eval_iters if eval_interval > 0 else 0
    return [train_iters * global_batch_size, evals * global_batch_size, eval_iters * global_batch_size]


def megatron_epochs(num_samples: int, tokens: int, seq_length: int) -> int | None:
    """``GPTDataset._get_num_epochs`` (None where Megatron would loop forever: no tokens)."""
    if num_samples <= 0:
        return 0
    if tokens <= 0:
        return None
    return max(1, math.ceil((num_samples * seq_length + 1) / tokens))


def parse_pair(item: str) -> tuple[str, float]:
    """``PREFIX:WEIGHT`` -> (prefix, weight); a bare PREFIX has weight 1."""
    prefix, sep, weight = item.rpartition(":")
    if not sep or not prefix:
        return item, 1.0
    try:
        w = float(weight)
    except ValueError:
        raise UsageError(
            f"{item}: weight {weight!r} is not a number; write PREFIX:WEIGHT, e.g. data/a_text_document:0.3"
        ) from None
    if not math.isfinite(w) or w <= 0:
        raise UsageError(f"{item}: weight must be positive")
    return prefix, w


# What a caller hands :func:`blend_report` (the names of ``workshop_lib/paths.py``):
GIVEN = ("data_path", "output_prefix", "either")


def resolve_prefix(prefix: str, given: str = "either") -> str:
    """The absolute data path of one dataset named by ``prefix``.

    ``given`` says what the caller holds: a ``data_path`` (``X_text_document``, or its ``.bin``/
    ``.idx``) is taken as it is; an ``output_prefix`` (what prep-data's ``--output-prefix`` took)
    gets ``_text_document``; ``either`` is for ``workshop blend``'s command line, which accepts both
    (the contract's ``PREFIX``): only there is the file system asked which one exists.
    """
    if given not in GIVEN:
        raise ValueError(f"given={given!r}: one of {GIVEN}")
    p = strip_suffix(prefix)
    if given == "output_prefix" or (
        given == "either" and not idx_path(p).is_file() and idx_path(data_path_for(p)).is_file()
    ):
        p = data_path_for(p)
    return str(Path(p).resolve())


def _fmt_weight(w: float) -> str:
    return f"{w:g}"


def blend_report(
    datasets: list[str] | list[tuple[str, float]],
    *,
    seq_length: int,
    global_batch_size: int,
    train_iters: int,
    split: str = "969,30,1",
    eval_iters: int = 100,
    eval_interval: int = 1000,
    max_epochs: float = 4.0,
    given: str = "either",
) -> dict:
    """The contract's blend JSON: data_path, per-dataset documents/tokens/epochs, tokens_needed.

    ``datasets``: ``PREFIX:WEIGHT`` strings (the command line's form) or ``(prefix, weight)`` pairs;
    ``given``: what each prefix is (:func:`resolve_prefix`): callers that know pass ``data_path``.
    """
    for name, v in (
        ("--seq-length", seq_length),
        ("--global-batch-size", global_batch_size),
        ("--train-iters", train_iters),
    ):
        if v <= 0:
            raise UsageError(f"{name} {v}: must be positive")
    if eval_iters < 0:
        raise UsageError(f"--eval-iters {eval_iters}: must be 0 or more")
    pairs = [parse_pair(d) if isinstance(d, str) else (str(d[0]), float(d[1])) for d in datasets]
    for prefix, w in pairs:
        if not math.isfinite(w) or w <= 0:
            raise UsageError(f"{prefix}: weight {w:g} must be positive")
    total_w = sum(w for _, w in pairs)
    vector = parse_split(split)
    targets = samples_per_split(train_iters, global_batch_size, eval_iters, eval_interval)
    warnings: list[str] = []
    out = []
    for prefix, weight in pairs:
        path = resolve_prefix(prefix, given)
        ds = IndexedDatasetReader(path)
        seqs = len(ds)
        lengths = ds.lengths
        norm = weight / total_w
        splits = {}
        for i, (name, rng) in enumerate(zip(SPLITS, split_ranges(vector, seqs), strict=True)):
            want = (
                targets[i]
                if len(pairs) == 1
                else int(math.ceil(math.ceil(targets[i] * norm) * (1 + SURPLUS)))
            )
            if rng is None:
                splits[name] = {
                    "sequences": 0,
                    "tokens": 0,
                    "samples": 0,
                    "epochs": 0.0,
                    "megatron_epochs": 0,
                }
                if name == "train":
                    raise UsageError(f"--split {split}: the train split is 0; give it a positive weight")
                continue
            beg, end = rng
            tokens = int(lengths[beg:end].sum(dtype="int64"))
            if want > 0 and tokens == 0:
                raise UsageError(
                    f"{path}: the {name} split ({beg}:{end} of {seqs} sequences, --split {split}) gets no data "
                    f"but needs {want} samples; Megatron would hang building it. Use more documents, a larger "
                    f"{name} share (e.g. --split 98,2,0 leaves the test split empty on purpose), or "
                    + ("--eval-iters 0" if name != "train" else "fewer --train-iters")
                )
            need = want * seq_length + 1 if want else 0
            splits[name] = {
                "sequences": end - beg,
                "tokens": tokens,
                "samples": want,
                "epochs": round(need / tokens, 4) if tokens else 0.0,
                "megatron_epochs": megatron_epochs(want, tokens, seq_length),
            }
        train = splits["train"]
        if train["epochs"] > max_epochs:
            warnings.append(
                f"{path}: the run reads its train split {train['epochs']:.1f} times "
                f"({train['samples']} samples x {seq_length} tokens from {train['tokens']:,} tokens); "
                "more data or fewer --train-iters avoids overfitting on repeats"
            )
        out.append(
            {
                "prefix": path,
                "weight": weight,
                "normalized_weight": round(norm, 6),
                "documents": ds.header.document_count,
                "sequences": seqs,
                "tokens": int(lengths.sum(dtype="int64")),
                "epochs": train["epochs"],
                "splits": splits,
            }
        )
    data_path = " ".join(f"{_fmt_weight(d['weight'])} {d['prefix']}" for d in out)
    return {
        "data_path": data_path,
        "datasets": out,
        "tokens_needed": targets[0] * seq_length,
        "split": [round(v, 6) for v in vector],
        "samples": dict(zip(SPLITS, targets, strict=True)),
        "warnings": warnings,
    }


def format_blend(report: dict) -> str:
    lines = [f"--data-path {report['data_path']}", ""]
    lines.append(f"{'dataset':<48} {'weight':>7} {'docs':>9} {'tokens':>13} {'train epochs':>12}")
    for d in report["datasets"]:
        name = d["prefix"] if len(d["prefix"]) <= 48 else "…" + d["prefix"][-47:]
        lines.append(
            f"{name:<48} {d['weight']:>7g} {d['documents']:>9,} {d['tokens']:>13,} {d['epochs']:>12.2f}"
        )
    lines.append("")
    lines.append(
        f"tokens needed for training: {report['tokens_needed']:,} "
        f"(samples train/valid/test: {report['samples']['train']:,}/{report['samples']['valid']:,}/"
        f"{report['samples']['test']:,})"
    )
    return "\n".join(lines)
