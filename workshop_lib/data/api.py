"""What notebook 01 calls: one function per step, the same code the ``workshop`` data commands run."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..paths import SAMPLE_CORPUS, SAMPLE_GENERAL_CORPUS, SAMPLE_HELDOUT, SAMPLE_TOKENIZER, RunDir
from .dataset_info import add_to_dataset_info, dataset_info_from_summary, write_dataset_info
from .indexed import HEADER_BYTES, IndexedDatasetReader, idx_path, strip_suffix
from .prep import output_prefix_for, prep_data
from .tokenizer import TokenizerAdapter, load_tokenizer, set_threads


def resolve_run(run_dir: str | Path | None = None) -> RunDir:
    """The run directory: the given path, or the default (``runs/workshop`` or ``$WORKSHOP_RUN_DIR``)."""
    return RunDir(Path(run_dir).resolve()) if run_dir else RunDir()


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
        [str(input_path or SAMPLE_CORPUS)], run.dataset_prefix, tok, append_eod_token=append_eod
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
    ``{"blend", "replay", "heldout", "summaries"}``.
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
    jobs = [("general", str(general_path or SAMPLE_GENERAL_CORPUS), run.general_prefix)] + [
        (kind, held[kind], run.heldout_prefix(kind)) for kind in ("domain", "general")
    ]
    summaries, prefixes = {}, {}
    for i, (kind, src, out) in enumerate(jobs):
        name = "replay" if i == 0 else f"heldout_{kind}"
        summaries[name] = prep_data([src], out, tok, append_eod_token=True).summary()
        prefixes[name] = output_prefix_for(out, "text")
    domain = dataset_prefix(run_dir)
    blend = (
        f"{1 - replay_weight:g} {domain} {replay_weight:g} {prefixes['replay']}"
        if replay_weight > 0
        else domain
    )
    fields = {
        "blend": blend,
        "replay": {"data_path": prefixes["replay"], "weight": replay_weight},
        "heldout": {"domain": prefixes["heldout_domain"], "general": prefixes["heldout_general"]},
    }
    add_to_dataset_info(run, **fields)
    return {**fields, "summaries": summaries}


def dataset_prefix(run_dir: str | Path | None = None) -> str:
    """``<run>/data/techpulse_text_document``: what Megatron's ``--data-path`` names."""
    return output_prefix_for(resolve_run(run_dir).dataset_prefix, "text")


def index_layout(prefix: str | Path) -> list[dict[str, Any]]:
    """The ``.idx`` of a real dataset, field by field: offset, size, type and value (for a table)."""
    ds = IndexedDatasetReader(prefix)
    h = ds.header
    raw = idx_path(strip_suffix(prefix)).read_bytes()[:HEADER_BYTES]
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
    prefix: str | Path, index: int, tokenizer: TokenizerAdapter | str | Path | None = None
) -> dict:
    """Document ``index`` of the dataset: its token ids and the text they decode to."""
    tok = (
        tokenizer
        if isinstance(tokenizer, TokenizerAdapter)
        else load_tokenizer("HuggingFaceTokenizer", tokenizer or SAMPLE_TOKENIZER, engine="reference")
    )
    ids = IndexedDatasetReader(prefix).document(index)
    return {"document": index, "tokens": len(ids), "ids": [int(i) for i in ids], "text": tok.decode(ids)}


def plot_length_histogram(prefix: str | Path, ax=None, bins: int = 40):
    """A log-scale histogram of tokens per document (matplotlib); returns the axes."""
    import matplotlib.pyplot as plt
    import numpy as np

    from .inspect import document_lengths

    lengths = document_lengths(str(prefix))
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
