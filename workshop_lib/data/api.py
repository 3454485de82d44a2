"""What notebook 01 calls: one function per step, the same code the ``workshop`` data commands run.

Notebook 01 imports this module alone. Datasets are named as ``workshop_lib/paths.py`` says: the
functions here take and return **data paths** (``<run>/data/techpulse_text_document``, Megatron's
``--data-path``); the output prefixes handed to prep-data stay inside :class:`RunDir`.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..handover import add_to_dataset_info, read_dataset_info, write_dataset_info
from ..paths import SAMPLE_CORPUS, SAMPLE_GENERAL_CORPUS, SAMPLE_HELDOUT, SAMPLE_TOKENIZER, RunDir
from .blend import blend_report as _blend_report
from .blend import format_blend
from .dataset_info import dataset_info_from_summary
from .indexed import HEADER_BYTES, IndexedDatasetReader, idx_path, strip_suffix
from .inspect import format_inspect, inspect_dataset
from .prep import prep_data
from .tokenizer import TokenizerAdapter, load_tokenizer, set_threads

__all__ = [
    "RunDir",
    "blend_report",
    "data_path",
    "decode_document",
    "format_blend",
    "format_inspect",
    "index_layout",
    "inspect_dataset",
    "plot_length_histogram",
    "prepare_dataset",
    "prepare_replay_and_heldout",
    "read_dataset_info",
    "resolve_run",
]


def resolve_run(run_dir: str | Path | None = None) -> RunDir:
    """The run directory: the given path, or the default (``runs/workshop`` or ``$WORKSHOP_RUN_DIR``)."""
    return RunDir.at(run_dir)


def blend_report(datasets: list[tuple[str | Path, float]] | list[str], **kw: Any) -> dict[str, Any]:
    """``workshop blend``'s report for ``datasets``: ``(data path, weight)`` pairs, or ``"DATA_PATH:WEIGHT"``
    strings; data paths as this module returns them, so nothing is guessed from the files."""
    pairs = [(str(d[0]), float(d[1])) if not isinstance(d, str) else d for d in datasets]
    return _blend_report(pairs, given="data_path", **kw)


def prepare_dataset(
    run_dir: str | Path | None = None,
    input_path: str | Path | None = None,
    tokenizer: str | Path | None = None,
    workers: int | None = None,
    *,
    append_eod: bool = True,
) -> dict[str, Any]:
    """Tokenize the corpus into ``<run>/data/techpulse_text_document`` and write ``dataset.json``.

    Returns prep-data's summary (the ``--json`` object) with ``dataset_info`` added.
    """
    if workers:
        set_threads(workers)
    run = resolve_run(run_dir)
    tok = load_tokenizer("HuggingFaceTokenizer", tokenizer or SAMPLE_TOKENIZER)
    result = prep_data(
        [str(input_path or SAMPLE_CORPUS)], run.output_prefix("domain"), tok, append_eod_token=append_eod
    )
    summary = result.summary()
    summary["dataset_info"] = str(write_dataset_info(run, **dataset_info_from_summary(summary)))
    return summary


def prepare_replay_and_heldout(
    run_dir: str | Path | None = None,
    tokenizer: str | Path | None = None,
    workers: int | None = None,
    *,
    replay_weight: float = 0.2,
    general_path: str | Path | None = None,
    heldout_paths: dict[str, str | Path] | None = None,
) -> dict[str, Any]:
    """The other datasets of continued pre-training, tokenized like the domain corpus.

    * the **general** corpus, replayed beside the domain so the base model does not forget what it
      knew (``replay_weight`` of the samples; 5-30 % is the range continued-pre-training reports use);
    * two **held-out** sets no run trains on, one of domain text and one of general text, which
      ``workshop evaluate`` scores before and after training.

    Writes ``<run>/data/general_text_document`` and the two ``*_heldout_text_document`` pairs, and adds
    ``blend``, ``replay`` and ``heldout`` to dataset.json (run :func:`prepare_dataset` first). Returns
    ``{"blend", "replay", "heldout", "datasets", "summaries"}``; ``datasets`` is the blend as
    ``(data path, weight)`` pairs, what :func:`blend_report` takes.
    """
    if not 0.0 <= replay_weight < 1.0:
        raise UsageError(f"replay_weight must be in [0, 1), got {replay_weight}")
    if workers:
        set_threads(workers)
    run = resolve_run(run_dir)
    tok = load_tokenizer("HuggingFaceTokenizer", tokenizer or SAMPLE_TOKENIZER)
    held = {
        **{k: str(v) for k, v in SAMPLE_HELDOUT.items()},
        **{k: str(v) for k, v in (heldout_paths or {}).items()},
    }
    jobs = [("replay", str(general_path or SAMPLE_GENERAL_CORPUS), "general")] + [
        (f"heldout_{kind}", held[kind], f"heldout_{kind}") for kind in ("domain", "general")
    ]
    summaries, data_paths = {}, {}
    for name, src, dataset in jobs:
        summaries[name] = prep_data([src], run.output_prefix(dataset), tok, append_eod_token=True).summary()
        data_paths[name] = run.data_path(dataset)
    # The blend as (data path, weight) pairs; the --data-path string is made from them. No replay
    # (weight 0) is the domain alone: Megatron refuses a zero weight in a blend.
    datasets = [(run.data_path("domain"), 1 - replay_weight)]
    if replay_weight > 0:
        datasets.append((data_paths["replay"], replay_weight))
    blend = " ".join(f"{w:g} {p}" for p, w in datasets) if len(datasets) > 1 else datasets[0][0]
    fields = {
        "blend": blend,
        "replay": {"data_path": data_paths["replay"], "weight": replay_weight},
        "heldout": {"domain": data_paths["heldout_domain"], "general": data_paths["heldout_general"]},
    }
    add_to_dataset_info(run, **fields)
    return {**fields, "datasets": datasets, "summaries": summaries}


def data_path(run_dir: str | Path | None = None, dataset: str = "domain") -> str:
    """A dataset's data path, e.g. ``<run>/data/techpulse_text_document`` (Megatron's ``--data-path``)
    for the ``domain`` one; ``general``, ``heldout_domain`` and ``heldout_general`` name the others."""
    return resolve_run(run_dir).data_path(dataset)


def index_layout(data_path: str | Path) -> list[dict[str, Any]]:
    """The ``.idx`` of a real dataset, field by field: offset, size, type and value (for a table)."""
    ds = IndexedDatasetReader(data_path)
    h = ds.header
    raw = idx_path(strip_suffix(data_path)).read_bytes()[:HEADER_BYTES]
    s, d = h.sequence_count, h.document_count + 1

    def preview(a) -> str:
        vals = ", ".join(str(int(v)) for v in a[:4])
        return f"[{vals}{', …' if len(a) > 4 else ''}]"

    return [
        {"field": "magic", "offset": 0, "bytes": 9, "type": "bytes", "value": repr(raw[:9])},
        {
            "field": "version",
            "offset": 9,
            "bytes": 8,
            "type": "<Q",
            "value": struct.unpack("<Q", raw[9:17])[0],
        },
        {
            "field": "dtype code",
            "offset": 17,
            "bytes": 1,
            "type": "<B",
            "value": f"{raw[17]} ({h.dtype.name})",
        },
        {"field": "sequence count S", "offset": 18, "bytes": 8, "type": "<Q", "value": s},
        {"field": "document index entries D", "offset": 26, "bytes": 8, "type": "<Q", "value": d},
        {
            "field": "sequence lengths",
            "offset": h.lengths_offset,
            "bytes": 4 * s,
            "type": "int32[S]",
            "value": preview(ds.lengths),
        },
        {
            "field": "sequence pointers",
            "offset": h.pointers_offset,
            "bytes": 8 * s,
            "type": "int64[S]",
            "value": preview(ds.pointers),
        },
        {
            "field": "document index",
            "offset": h.doc_idx_offset,
            "bytes": 8 * d,
            "type": "int64[D]",
            "value": preview(ds.document_indices),
        },
    ]


def decode_document(
    data_path: str | Path, index: int, tokenizer: TokenizerAdapter | str | Path | None = None
) -> dict:
    """Document ``index`` of the dataset: its token ids and the text they decode to."""
    tok = (
        tokenizer
        if isinstance(tokenizer, TokenizerAdapter)
        else load_tokenizer("HuggingFaceTokenizer", tokenizer or SAMPLE_TOKENIZER, engine="reference")
    )
    ids = IndexedDatasetReader(data_path).document(index)
    return {"document": index, "tokens": len(ids), "ids": [int(i) for i in ids], "text": tok.decode(ids)}


def plot_length_histogram(data_path: str | Path, ax=None, bins: int = 40):
    """A log-scale histogram of tokens per document (matplotlib); returns the axes."""
    import matplotlib.pyplot as plt
    import numpy as np

    from .inspect import document_lengths

    lengths = document_lengths(str(data_path))
    lengths = lengths[lengths > 0]
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.2))
    edges = np.geomspace(max(1, lengths.min()), lengths.max() + 1, bins)
    ax.hist(lengths, bins=edges, color="#4C72B0")
    ax.set_xscale("log")
    ax.set_xlabel("tokens per document (log scale)")
    ax.set_ylabel("documents")
    ax.axvline(float(np.median(lengths)), color="k", ls="--", lw=1, label=f"median {np.median(lengths):.0f}")
    ax.legend()
    ax.set_title(f"{len(lengths):,} documents, {int(lengths.sum()):,} tokens")
    return ax
