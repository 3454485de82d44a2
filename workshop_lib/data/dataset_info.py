"""``<run>/data/dataset.json`` from the data room's side: prep-data's summary as the file's fields.

The file's one reader and one writer live at the base, in ``workshop_lib/handover.py`` (plan,
launch and train read it, and they never import data); they are re-exported here for the data
room's callers (``workshop prep-data --dataset-info``, notebook 01).
"""

from __future__ import annotations

from ..handover import (
    CPT_KEYS,
    KEYS,
    MAX_INFO_BYTES,
    add_to_dataset_info,
    check_dataset_info_target,
    read_dataset_info,
    write_dataset_info,
)

__all__ = [
    "CPT_KEYS",
    "KEYS",
    "MAX_INFO_BYTES",
    "add_to_dataset_info",
    "check_dataset_info_target",
    "dataset_info_from_summary",
    "read_dataset_info",
    "write_dataset_info",
]


def dataset_info_from_summary(summary: dict, key: str = "text") -> dict:
    """The dataset.json fields for one key of a prep-data summary (``PrepResult.summary()``)."""
    k = summary["keys"][key]
    tok = summary["tokenizer"]
    return {
        "data_path": k["prefix"],
        "tokenizer_type": tok["type"],
        "tokenizer_model": tok["model"],
        "vocab_size": tok["vocab_size"],
        "eod_token_id": tok["eod_token_id"],
        "documents": k["documents"],
        "tokens": k["tokens"],
    }
