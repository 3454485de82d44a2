"""``workshop inspect-data``: what is inside a Megatron indexed dataset (counts, lengths, decoded text)."""

from __future__ import annotations

import numpy as np

from .indexed import IndexedDatasetReader, bin_path, strip_suffix
from .tokenizer import TokenizerAdapter


def length_histogram(lengths: np.ndarray, bins: int = 10) -> list[dict]:
    """Document lengths in ``bins`` log-spaced buckets: [{"from", "to", "count"}] (to is exclusive)."""
    if len(lengths) == 0:
        return []
    lo, hi = max(1, int(lengths.min())), int(lengths.max()) + 1
    edges = np.unique(np.geomspace(lo, hi, bins + 1).astype(np.int64)) if hi > lo + 1 else np.array([lo, hi])
    edges[-1] = hi
    counts, _ = np.histogram(lengths, bins=edges)
    return [
        {"from": int(a), "to": int(b), "count": int(c)}
        for a, b, c in zip(edges[:-1], edges[1:], counts, strict=True)
    ]


def document_lengths(dataset: str | IndexedDatasetReader) -> np.ndarray:
    """Tokens per document (0 for empty documents), from the index alone."""
    ds = dataset if isinstance(dataset, IndexedDatasetReader) else IndexedDatasetReader(dataset)
    seq_ends = np.concatenate(([0], np.cumsum(ds.lengths, dtype=np.int64)))
    return np.diff(seq_ends[np.asarray(ds.document_indices)])


def inspect_dataset(
    prefix: str, *, tokenizer: TokenizerAdapter | None = None, samples: int = 3, max_chars: int = 400
) -> dict:
    ds = IndexedDatasetReader(prefix)
    doc_lengths = document_lengths(ds)
    nonempty = doc_lengths[doc_lengths > 0]
    report = {
        "prefix": strip_suffix(prefix),
        "bin_bytes": bin_path(strip_suffix(prefix)).stat().st_size,
        "dtype": ds.header.dtype.name,
        "documents": ds.header.document_count,
        "empty_documents": int((doc_lengths == 0).sum()),
        "sequences": len(ds),
        "tokens": int(doc_lengths.sum()),
        "length": {
            "min": int(nonempty.min()) if len(nonempty) else 0,
            "mean": round(float(nonempty.mean()), 2) if len(nonempty) else 0.0,
            "median": float(np.median(nonempty)) if len(nonempty) else 0.0,
            "p99": float(np.percentile(nonempty, 99)) if len(nonempty) else 0.0,
            "max": int(nonempty.max()) if len(nonempty) else 0,
        },
        "histogram": length_histogram(nonempty),
        "samples": [],
    }
    if tokenizer is not None and samples > 0 and ds.header.document_count:
        picks = np.unique(np.linspace(0, ds.header.document_count - 1, samples).astype(np.int64))
        for d in picks:
            ids = ds.document(int(d))
            text = tokenizer.decode(ids)
            report["samples"].append(
                {
                    "document": int(d),
                    "tokens": len(ids),
                    "text": text[:max_chars],
                    "truncated": len(text) > max_chars,
                }
            )
    return report


def format_inspect(report: dict) -> str:
    ln = report["length"]
    lines = [
        f"{report['prefix']}  ({report['dtype']}, {report['bin_bytes']:,} bytes)",
        f"documents {report['documents']:,} ({report['empty_documents']} empty), sequences {report['sequences']:,}, "
        f"tokens {report['tokens']:,}",
        f"tokens per document: min {ln['min']}, median {ln['median']:.0f}, mean {ln['mean']:.1f}, "
        f"p99 {ln['p99']:.0f}, max {ln['max']}",
        "",
    ]
    peak = max((h["count"] for h in report["histogram"]), default=1) or 1
    for h in report["histogram"]:
        bar = "#" * max(1 if h["count"] else 0, round(40 * h["count"] / peak))
        lines.append(f"{h['from']:>8}-{h['to'] - 1:<8} {h['count']:>8,} {bar}")
    for s in report["samples"]:
        lines += [
            "",
            f"--- document {s['document']} ({s['tokens']} tokens) ---",
            s["text"] + (" …" if s["truncated"] else ""),
        ]
    return "\n".join(lines)
