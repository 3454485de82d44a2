"""Against megatron-core itself: the bytes IndexedDatasetBuilder writes, IndexedDataset reads, split math."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from workshop_lib.data.blend import parse_split, split_bookends, split_ranges
from workshop_lib.data.prep import prep_data
from workshop_lib.data.shard import merge_datasets
from workshop_lib.data.tokenizer import load_tokenizer
from workshop_lib.paths import SAMPLE_CORPUS, SAMPLE_TOKENIZER

indexed_dataset = pytest.importorskip("megatron.core.datasets.indexed_dataset")

TEXTS = ["", "hello world", "caf\u00e9 \U0001f389 \u2028 \u0000", "", "x " * 5000, "<|endoftext|> inside"]


def builder_reference(texts, path_prefix: Path, *, eod: bool, tokenizer_json: Path) -> None:
    """What Megatron-LM's tools/preprocess_data.py does per document: ids, EOD on non-empty documents, add_document."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_json))
    builder = indexed_dataset.IndexedDatasetBuilder(
        f"{path_prefix}.bin", dtype=indexed_dataset.DType.optimal_dtype(tok.get_vocab_size())
    )
    for text in texts:
        ids = tok.encode(text, add_special_tokens=False).ids
        lens = [len(ids)] if ids else []
        if ids and eod:
            ids.append(tok.token_to_id("<|endoftext|>"))
            lens[-1] += 1
        builder.add_document(ids, lens)
    builder.finalize(f"{path_prefix}.idx")


@pytest.mark.parametrize("eod", [False, True])
def test_bytes_equal_indexed_dataset_builder(tmp_path, eod):
    texts = [json.loads(line)["text"] for line in SAMPLE_CORPUS.open(encoding="utf-8")][:400] + TEXTS
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    tok = load_tokenizer("HuggingFaceTokenizer", SAMPLE_TOKENIZER)
    prep_data([str(src)], tmp_path / "ours", tok, append_eod_token=eod, progress=False)
    builder_reference(texts, tmp_path / "ref", eod=eod, tokenizer_json=SAMPLE_TOKENIZER / "tokenizer.json")
    for ext in ("bin", "idx"):
        assert (tmp_path / f"ours_text_document.{ext}").read_bytes() == (tmp_path / f"ref.{ext}").read_bytes()

    ds = indexed_dataset.IndexedDataset(str(tmp_path / "ours_text_document"))
    nonempty = [t for t in texts if t]
    assert len(ds) == len(nonempty) and len(ds.document_indices) == len(texts) + 1
    assert ds.index.dtype == np.uint16
    assert tok.decode(ds[1][: len(ds[1]) - eod]) == nonempty[1]


def test_merge_equals_builder_add_index(tmp_path):
    tok = load_tokenizer("HuggingFaceTokenizer", SAMPLE_TOKENIZER)
    lines = SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines(keepends=True)
    shards = []
    for i in range(3):
        (tmp_path / f"s{i}.jsonl").write_text("".join(lines[i * 50 : (i + 1) * 50]), encoding="utf-8")
        prep_data(
            [str(tmp_path / f"s{i}.jsonl")], tmp_path / f"s{i}", tok, append_eod_token=True, progress=False
        )
        shards.append(str(tmp_path / f"s{i}_text_document"))
    merge_datasets(shards, str(tmp_path / "merged"))
    builder = indexed_dataset.IndexedDatasetBuilder(str(tmp_path / "ref.bin"), dtype=np.uint16)
    for s in shards:
        builder.add_index(s)
    builder.finalize(str(tmp_path / "ref.idx"))
    for ext in ("bin", "idx"):
        assert (tmp_path / f"merged.{ext}").read_bytes() == (tmp_path / f"ref.{ext}").read_bytes()


@pytest.mark.parametrize("split", ["969,30,1", "98,2,0", "1,0,0", "90,5,5", "0.7, 0.2, 0.1", "7,3"])
@pytest.mark.parametrize("n", [1, 7, 499, 500, 2167])
def test_split_arithmetic_matches_megatron(split, n):
    from megatron.core.datasets.blended_megatron_dataset_config import (
        convert_split_vector_to_split_matrix,
        parse_and_normalize_split,
    )

    vec = parse_and_normalize_split(split)
    assert parse_split(split) == vec
    matrix = convert_split_vector_to_split_matrix(vec)
    assert split_bookends(parse_split(split)) == matrix
    expected = [
        None if m is None else (int(round(m[0] * float(n))), int(round(m[1] * float(n)))) for m in matrix
    ]
    assert split_ranges(parse_split(split), n) == expected


def test_tiktokenizer_ids_equal_megatrons_tiktoken_tokenizer(tmp_path):
    import base64

    tt_mod = pytest.importorskip("megatron.core.tokenizers.text.libraries.tiktoken_tokenizer")
    from test_data_prep import _tiktoken_ranks

    ranks = _tiktoken_ranks(tmp_path)
    path = tmp_path / "vocab.json"
    path.write_text(
        json.dumps(
            [
                {"rank": i, "token_bytes": base64.b64encode(b).decode(), "token_str": ""}
                for i, b in enumerate(ranks)
            ]
        )
    )
    theirs = tt_mod.TikTokenTokenizer(str(path), vocab_size=len(ranks) + 1000)
    ours = load_tokenizer("TikTokenizer", path)
    texts = (
        [json.loads(line)["text"] for line in SAMPLE_CORPUS.open(encoding="utf-8")][:50]
        + TEXTS
        + ["x</s>y<pad>"]
    )
    flat, lengths = ours.encode(texts)
    ends = np.cumsum(lengths)
    for text, end, n in zip(texts, ends, lengths, strict=True):
        assert flat[end - n : end].tolist() == theirs.text_to_ids(text)
    assert (ours.eod, ours.vocab_size) == (theirs.eod, theirs.vocab_size)
