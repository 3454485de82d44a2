"""prep-data: round trips, tricky text, bad lines, compression, keys, workers, atomic outputs, CLI contract."""

from __future__ import annotations

import gzip
import io
import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from workshop_lib.data import reader
from workshop_lib.data.indexed import IndexedDatasetReader, read_header
from workshop_lib.data.prep import append_eod, prep_data
from workshop_lib.data.tokenizer import load_tokenizer
from workshop_lib.errors import UsageError
from workshop_lib.paths import SAMPLE_CORPUS, SAMPLE_TOKENIZER

REPO = Path(__file__).resolve().parents[1]

TRICKY = [
    "",
    "plain ascii text",
    "caf\u00e9 na\u00efve \u65e5\u672c\u8a9e \U0001f389 emoji and \u0627\u0644\u0639\u0631\u0628\u064a\u0629",
    "a NUL \u0000 inside and a tab\tand a CR\r\nline",
    "line\u2028separator\u2029paragraph\u0085next-line",
    "<|endoftext|> literal special token in the text",
    "   leading and trailing spaces   ",
    "x" * 200_000 + " very long " + "y\n" * 50_000,
    '\\ backslash " quote / slash \u007f del',
    "",
]


def write_jsonl(path: Path, rows, *, raw_lines=()) -> Path:
    with open(path, "wb") as fh:
        for r in rows:
            fh.write((json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8"))
        for line in raw_lines:
            fh.write(line + b"\n")
    return path


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("HuggingFaceTokenizer", SAMPLE_TOKENIZER)


@pytest.fixture(scope="module")
def ref_tok():
    return load_tokenizer("HuggingFaceTokenizer", SAMPLE_TOKENIZER, engine="reference")


def files_bytes(prefix) -> tuple[bytes, bytes]:
    return Path(f"{prefix}.bin").read_bytes(), Path(f"{prefix}.idx").read_bytes()


def test_sample_tokenizer_uses_the_fast_engine_with_reference_ids(tok, ref_tok):
    assert tok.engine == "gigatoken" and ref_tok.engine == "tokenizers"
    assert tok.vocab_size == 8192 and tok.eod == 0
    texts = [json.loads(line)["text"] for line in SAMPLE_CORPUS.open(encoding="utf-8")][:300] + TRICKY
    a_flat, a_len = tok.encode(texts)
    b_flat, b_len = ref_tok.encode(texts)
    assert np.array_equal(a_len, b_len) and np.array_equal(a_flat.astype(np.int64), b_flat)


def test_gigatoken_without_awkward_falls_back_to_the_reference_engine(tmp_path):
    """A --no-deps install of gigatoken (no awkward) returned lists that the fast path read as
    awkward arrays: prep-data died with "'list' object has no attribute 'layout'" (seen on the
    GPU machine). Now the tokenizer says why and uses the reference library, with the same ids."""
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"text": t} for t in TRICKY[:7]])
    script = (
        "import sys, json; sys.modules['awkward'] = None\n"
        "from workshop_lib.data.tokenizer import load_tokenizer\n"
        "from workshop_lib.data.prep import prep_data\n"
        f"tok = load_tokenizer('HuggingFaceTokenizer', {str(SAMPLE_TOKENIZER)!r})\n"
        f"res = prep_data([{str(corpus)!r}], {str(tmp_path / 'noawk')!r}, tok, append_eod_token=True, progress=False)\n"
        "print(json.dumps([tok.engine, tok.note, res.documents]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    engine, note, documents = json.loads(out.stdout.strip().splitlines()[-1])
    assert engine == "tokenizers" and "awkward" in note and documents == 7
    fast = load_tokenizer("HuggingFaceTokenizer", SAMPLE_TOKENIZER)
    assert fast.engine == "gigatoken"
    prep_data([str(corpus)], tmp_path / "fast", fast, append_eod_token=True, progress=False)
    assert files_bytes(tmp_path / "noawk_text_document") == files_bytes(tmp_path / "fast_text_document")


def test_round_trip_every_sample_document(tmp_path, tok):
    res = prep_data([str(SAMPLE_CORPUS)], tmp_path / "s", tok, append_eod_token=True, progress=False)
    texts = [json.loads(line)["text"] for line in SAMPLE_CORPUS.open(encoding="utf-8")]
    ds = IndexedDatasetReader(tmp_path / "s_text_document")
    assert res.documents == len(texts) == ds.header.document_count == len(ds)
    assert ds.header.dtype == np.uint16
    assert res.tokens == int(ds.lengths.sum())
    for d, text in enumerate(texts):
        ids = ds.document(d)
        assert ids[-1] == tok.eod
        assert tok.decode(ids[:-1]) == text


@pytest.mark.parametrize("eod", [False, True])
def test_tricky_text_fast_and_reference_paths_agree_and_round_trip(tmp_path, tok, ref_tok, eod):
    src = write_jsonl(tmp_path / "tricky.jsonl", [{"text": t} for t in TRICKY])
    a = prep_data([str(src)], tmp_path / "fast", tok, append_eod_token=eod, progress=False)
    b = prep_data([str(src)], tmp_path / "ref", ref_tok, append_eod_token=eod, progress=False)
    assert a.fast_chunks == 1 and b.slow_chunks == 1
    assert files_bytes(tmp_path / "fast_text_document") == files_bytes(tmp_path / "ref_text_document")
    ds = IndexedDatasetReader(tmp_path / "fast_text_document")
    # empty documents: a document boundary but no sequence (and no EOD)
    assert ds.header.document_count == len(TRICKY)
    assert len(ds) == sum(1 for t in TRICKY if t)
    for d, text in enumerate(TRICKY):
        ids = ds.document(d)
        if eod and text:
            assert ids[-1] == tok.eod
            ids = ids[:-1]
        assert tok.decode(ids) == text


def test_append_eod_is_vectorised_and_skips_empty_documents():
    flat = np.array([5, 6, 7, 8], dtype=np.uint32)
    out, lengths = append_eod(flat, np.array([2, 0, 1, 1]), 0)
    assert out.tolist() == [5, 6, 0, 7, 0, 8, 0] and lengths.tolist() == [3, 0, 2, 2]


BAD = [
    (b"not json at all", "not JSON"),
    (b"[1, 2, 3]", "not a JSON object"),
    (b'{"title": "no text key"}', "key 'text' missing"),
    (b'{"text": 42}', "key 'text' is a number, not a string"),
    (b'{"text": null}', "key 'text' is null, not a string"),
    (b'{"text": "bad \xff\xfe bytes"}', "invalid UTF-8"),
    (b'{"text": "lone \\ud800 surrogate"}', "unpaired surrogate"),
    (b"", "blank line"),
    (b'{"text": "truncated', "not JSON"),
]


def test_every_kind_of_bad_line_is_named_and_skipped(tmp_path, tok):
    src = write_jsonl(tmp_path / "bad.jsonl", [{"text": "good one"}], raw_lines=[b for b, _ in BAD])
    with open(src, "ab") as fh:
        fh.write(b'{"text": "good two"}\n')
    res = prep_data([str(src)], tmp_path / "o", tok, progress=False)
    assert res.documents == 2
    assert [b.line for b in res.bad_lines] == list(range(2, 2 + len(BAD)))
    for bad, (_, reason) in zip(res.bad_lines, BAD, strict=True):
        assert bad.file == str(src) and reason in bad.reason
    ds = IndexedDatasetReader(tmp_path / "o_text_document")
    assert [tok.decode(ds.document(i)) for i in range(2)] == ["good one", "good two"]


@pytest.mark.parametrize("bad_line", [b for b, _ in BAD])
def test_fail_stops_with_no_output_files(tmp_path, tok, bad_line):
    src = write_jsonl(tmp_path / "in.jsonl", [{"text": "fine"}] * 3, raw_lines=[bad_line])
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(UsageError, match=r"in\.jsonl:4: "):
        prep_data([str(src)], out / "p", tok, on_bad_line="fail", progress=False)
    assert list(out.iterdir()) == []


def test_gz_and_zst_give_the_same_bytes(tmp_path, tok):
    import zstandard

    raw = SAMPLE_CORPUS.read_bytes()[:400_000]
    raw = raw[: raw.rindex(b"\n") + 1]
    (tmp_path / "c.jsonl").write_bytes(raw)
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "c.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(raw))
    outs = []
    for name in ("c.jsonl", "c.jsonl.gz", "c.jsonl.zst"):
        prep_data([str(tmp_path / name)], tmp_path / name.replace(".", "_"), tok, progress=False)
        outs.append(files_bytes(tmp_path / f"{name.replace('.', '_')}_text_document"))
    assert outs[0] == outs[1] == outs[2]


def _zst_cut_at_a_line_boundary(raw: bytes) -> tuple[bytes, int]:
    """A .zst of ``raw`` cut right after a flushed block that ends on a line: what it decompresses to
    is whole lines, so only the unfinished frame shows the cut."""
    import zstandard

    head = raw[: raw.index(b"\n", len(raw) // 2) + 1]
    cobj = zstandard.ZstdCompressor().compressobj()
    part = cobj.compress(head) + cobj.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
    assert zstandard.ZstdDecompressor().decompressobj().decompress(part) == head
    return part, head.count(b"\n")


@pytest.mark.parametrize("damage", ["cut-mid-line", "cut-at-line-boundary", "garbage"])
@pytest.mark.parametrize("ext", ["gz", "zst"])
def test_damaged_compressed_input_is_one_line_exit_2_and_writes_nothing(tmp_path, cli, ext, damage):
    import zstandard

    raw = SAMPLE_CORPUS.read_bytes()[:300_000]
    raw = raw[: raw.rindex(b"\n") + 1]
    whole = gzip.compress(raw) if ext == "gz" else zstandard.ZstdCompressor().compress(raw)
    if damage == "cut-mid-line":
        data = whole[: len(whole) // 2]
    elif damage == "garbage":
        data = b"garbage\n"
    elif ext == "zst":
        data, _ = _zst_cut_at_a_line_boundary(raw)
    else:
        head = raw[: raw.index(b"\n", len(raw) // 2) + 1]
        cobj = zlib.compressobj(wbits=31)  # a gzip stream flushed on a line, never finished
        data = cobj.compress(head) + cobj.flush(zlib.Z_FULL_FLUSH)
    src = tmp_path / f"d.jsonl.{ext}"
    src.write_bytes(data)
    out = tmp_path / "out"
    res = cli("prep-data", "--input", src, "--output-prefix", out / "d", "--no-progress", "--json")
    assert res.code == 2, res.err
    assert res.out == "" and len(res.err.strip().splitlines()) == 1
    assert str(src) in res.err and "cannot decompress" in res.err
    assert not out.exists() or list(out.iterdir()) == []


def test_zst_of_several_frames_is_read_to_the_end(tmp_path, tok):
    import zstandard

    raw = SAMPLE_CORPUS.read_bytes()[:200_000]
    raw = raw[: raw.rindex(b"\n") + 1]
    cut = raw.index(b"\n", len(raw) // 3) + 1
    c = zstandard.ZstdCompressor()
    (tmp_path / "c.jsonl").write_bytes(raw)
    (tmp_path / "c.jsonl.zst").write_bytes(c.compress(raw[:cut]) + c.compress(raw[cut:]))
    prep_data([str(tmp_path / "c.jsonl")], tmp_path / "plain", tok, progress=False)
    res = prep_data([str(tmp_path / "c.jsonl.zst")], tmp_path / "zst", tok, progress=False)
    assert res.documents == raw.count(b"\n")
    assert files_bytes(tmp_path / "zst_text_document") == files_bytes(tmp_path / "plain_text_document")


def test_zst_reader_spots_a_cut_frame_even_in_small_reads(monkeypatch):
    import zstandard

    from workshop_lib import zstdframes

    raw = SAMPLE_CORPUS.read_bytes()[:100_000]
    whole = zstandard.ZstdCompressor().compress(raw)
    monkeypatch.setattr(zstdframes, "ZSTD_READ", 4096)
    monkeypatch.setattr(zstdframes, "ZSTD_FEED", 1000)
    assert io.BufferedReader(zstdframes.ZstdFrames(io.BytesIO(whole))).read() == raw
    cut, _ = _zst_cut_at_a_line_boundary(raw)
    with pytest.raises(EOFError, match="cut short"):
        io.BufferedReader(zstdframes.ZstdFrames(io.BytesIO(cut))).read()


def test_small_chunks_folders_and_globs_give_the_same_bytes(tmp_path, tok, monkeypatch):
    whole = prep_data([str(SAMPLE_CORPUS)], tmp_path / "whole", tok, append_eod_token=True, progress=False)
    lines = SAMPLE_CORPUS.read_bytes().splitlines(keepends=True)
    parts = tmp_path / "parts"
    parts.mkdir()
    for i in range(3):
        (parts / f"p{i}.jsonl").write_bytes(b"".join(lines[i * 800 : (i + 1) * 800]))
    monkeypatch.setattr(reader, "CHUNK_BYTES", 64 * 1024)  # many chunks: staging, prefetch, boundaries
    a = prep_data([str(parts)], tmp_path / "dir", tok, append_eod_token=True, progress=False)
    b = prep_data([str(parts / "p*.jsonl")], tmp_path / "glob", tok, append_eod_token=True, progress=False)
    assert a.fast_chunks > 10 and a.documents == b.documents == whole.documents
    ref = files_bytes(tmp_path / "whole_text_document")
    assert files_bytes(tmp_path / "dir_text_document") == ref == files_bytes(tmp_path / "glob_text_document")


def test_several_keys_write_every_index(tmp_path, tok):
    rows = [{"text": f"body {i} " * (i % 5), "title": f"Title {i}"} for i in range(50)]
    src = write_jsonl(tmp_path / "k.jsonl", rows)
    res = prep_data(
        [str(src)], tmp_path / "m", tok, json_keys=["text", "title"], append_eod_token=True, progress=False
    )
    assert sorted(Path(p).name for p in res.outputs) == [
        "m_text_document.bin",
        "m_text_document.idx",
        "m_title_document.bin",
        "m_title_document.idx",
    ]
    for key in ("text", "title"):
        prep_data(
            [str(src)], tmp_path / f"only_{key}", tok, json_keys=[key], append_eod_token=True, progress=False
        )
        assert files_bytes(tmp_path / f"m_{key}_document") == files_bytes(
            tmp_path / f"only_{key}_{key}_document"
        )
    assert res.tokens == sum(v["tokens"] for v in res.per_key.values())


def test_interrupt_leaves_no_outputs(tmp_path, tok, monkeypatch):
    monkeypatch.setattr(reader, "CHUNK_BYTES", 64 * 1024)
    calls = {"n": 0}
    real = tok.encode_jsonl

    def flaky(path, key):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real(path, key)

    monkeypatch.setattr(tok, "encode_jsonl", flaky)
    out = tmp_path / "o"
    with pytest.raises(KeyboardInterrupt):
        prep_data([str(SAMPLE_CORPUS)], out / "p", tok, progress=False)
    assert list(out.iterdir()) == []


# The ending of a two-key run: text's .bin and .idx renamed into place (calls 1, 2), then title's
# (3, 4), then the staging folder removed. A Ctrl-C in any of those moments once left half a pair,
# or a whole dataset with the command saying "interrupted", or the staging folder.
ENDINGS = {
    "before the first rename": ("os", "replace", 1),
    "between a .bin and its .idx": ("os", "replace", 2),
    "between the two keys' pairs": ("os", "replace", 3),
    "while the staging folder goes": ("shutil", "rmtree", 1),
}


@pytest.mark.parametrize("moment", list(ENDINGS))
def test_ctrl_c_while_the_outputs_are_committed_leaves_nothing(tmp_path, tok, monkeypatch, ctrl_c_at, moment):
    import shutil

    rows = [{"text": f"body {i}", "title": f"Title {i}"} for i in range(20)]
    src = write_jsonl(tmp_path / "k.jsonl", rows)
    module, name, nth = ENDINGS[moment]
    ctrl_c_at({"os": os, "shutil": shutil}[module], name, nth)
    out = tmp_path / "o"
    with pytest.raises(KeyboardInterrupt):
        prep_data([str(src)], out / "p", tok, json_keys=["text", "title"], progress=False)
    assert sorted(p.name for p in out.iterdir()) == []
    monkeypatch.undo()
    res = prep_data([str(src)], out / "p", tok, json_keys=["text", "title"], progress=False)
    assert len(res.outputs) == 4  # the prefix is not left locked


@pytest.mark.parametrize("info", ["dataset.json", "run"])  # --dataset-info: a .json path or a run directory
@pytest.mark.parametrize("step", ["write dataset.json", "print the summary"])
def test_ctrl_c_after_prep_data_committed_ends_interrupted_with_nothing(tmp_path, cli, ctrl_c_at, step, info):
    from workshop_lib import handover
    from workshop_lib.data import cli as data_cli

    src = write_jsonl(tmp_path / "k.jsonl", [{"text": f"body {i}"} for i in range(20)])
    out = tmp_path / "o"
    if step == "write dataset.json":
        ctrl_c_at(handover, "atomic_write_text")
    else:
        ctrl_c_at(data_cli, "print_json")
    r = cli("prep-data", "--input", src, "--output-prefix", out / "p", "--no-progress", "--json",
            "--dataset-info", out / info)  # fmt: skip
    assert r.code == 130, r.err
    assert r.err.strip().splitlines()[-1] == "workshop prep-data: interrupted"
    assert sorted(p.name for p in out.rglob("*") if not p.is_dir()) == []


def test_sigkill_mid_run_leaves_no_bin_or_idx(tmp_path):
    corpus = tmp_path / "big.jsonl"
    data = SAMPLE_CORPUS.read_bytes()
    with open(corpus, "wb") as fh:
        for _ in range(40):
            fh.write(data)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "workshop_lib.cli",
            "prep-data",
            "--input",
            str(corpus),
            "--output-prefix",
            str(out / "big"),
            "--workers",
            "1",
            "--no-progress",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
    )
    deadline = time.time() + 30
    while time.time() < deadline and not (out.exists() and any(".tmp-" in p.name for p in out.iterdir())):
        time.sleep(0.005)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    names = [p.name for p in out.iterdir()]
    assert not [n for n in names if n.endswith((".bin", ".idx"))], names


def test_worker_count_does_not_change_the_bytes(tmp_path, cli_proc):
    for w in (1, 2, 3):
        res = cli_proc(
            "prep-data",
            "--input",
            SAMPLE_CORPUS,
            "--output-prefix",
            tmp_path / f"w{w}",
            "--workers",
            w,
            "--append-eod",
            "--no-progress",
            "--json",
        )
        assert res.code == 0, res.err
    ref = files_bytes(tmp_path / "w1_text_document")
    assert files_bytes(tmp_path / "w2_text_document") == ref == files_bytes(tmp_path / "w3_text_document")


def test_cli_json_summary_and_dataset_info(tmp_path, cli):
    res = cli(
        "prep-data",
        "--input",
        SAMPLE_CORPUS,
        "--output-prefix",
        tmp_path / "data" / "techpulse",
        "--append-eod",
        "--json",
        "--no-progress",
        "--dataset-info",
        tmp_path,
    )
    assert res.code == 0, res.err
    out = res.json()
    for key in (
        "documents",
        "tokens",
        "skipped",
        "bad_lines",
        "outputs",
        "seconds",
        "documents_per_second",
        "megabytes_per_second",
        "tokenizer",
    ):
        assert key in out
    assert out["tokenizer"]["type"] == "HuggingFaceTokenizer" and out["tokenizer"]["vocab_size"] == 8192
    assert out["skipped"] == 0 and out["documents"] == 2167
    from workshop_lib.data.dataset_info import read_dataset_info

    info = read_dataset_info(tmp_path)
    assert info["data_path"] == str(tmp_path / "data" / "techpulse_text_document")
    assert info["eod_token_id"] == 0 and info["vocab_size"] == 8192 and info["tokens"] == out["tokens"]
    assert read_header(info["data_path"]).document_count == info["documents"]


def test_cli_errors_are_one_line_exit_2(tmp_path, cli):
    res = cli("prep-data", "--input", tmp_path / "missing.jsonl", "--output-prefix", tmp_path / "x")
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1 and "missing.jsonl" in res.err
    src = write_jsonl(tmp_path / "b.jsonl", [{"text": "ok"}], raw_lines=[b"{oops"])
    res = cli(
        "prep-data",
        "--input",
        src,
        "--output-prefix",
        tmp_path / "y",
        "--on-bad-line",
        "fail",
        "--no-progress",
        "--json",
    )
    assert res.code == 2 and res.out == "" and "b.jsonl:2" in res.err
    assert len(res.err.strip().splitlines()) == 1
    res = cli("prep-data", "--input", src, "--output-prefix", tmp_path / "z", "--no-progress", "--json")
    assert res.code == 0 and res.json()["bad_lines"] == [
        {"file": str(src), "line": 2, "reason": res.json()["bad_lines"][0]["reason"]}
    ]
    res = cli("prep-data", "--input", src, "--output-prefix", tmp_path / "t", "--tokenizer-model", tmp_path)
    assert res.code == 2 and "tokenizer.json" in res.err


def _gpt2_files(tmp_path: Path) -> tuple[Path, Path]:
    spec = json.loads((SAMPLE_TOKENIZER / "tokenizer.json").read_text())
    vocab = tmp_path / "vocab.json"
    vocab.write_text(json.dumps(spec["model"]["vocab"]))
    merges = tmp_path / "merges.txt"
    ms = spec["model"]["merges"]
    merges.write_text(
        "#version: 0.2\n" + "\n".join(m if isinstance(m, str) else " ".join(m) for m in ms) + "\n"
    )
    return vocab, merges


def test_gpt2_bpe_files_give_the_same_ids_as_the_hf_folder(tmp_path, tok):
    vocab, merges = _gpt2_files(tmp_path)
    gpt2 = load_tokenizer("GPT2BPETokenizer", vocab_file=str(vocab), merge_file=str(merges))
    assert gpt2.engine == "gigatoken" and gpt2.eod == 0 and gpt2.vocab_size == 8192
    prep_data([str(SAMPLE_CORPUS)], tmp_path / "g", gpt2, append_eod_token=True, progress=False)
    prep_data([str(SAMPLE_CORPUS)], tmp_path / "h", tok, append_eod_token=True, progress=False)
    assert files_bytes(tmp_path / "g_text_document") == files_bytes(tmp_path / "h_text_document")


def _tiktoken_ranks(tmp_path: Path) -> list[bytes]:
    """A byte-level rank list derived from the sample BPE: the 256 bytes, then its merges in order."""
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(str(SAMPLE_TOKENIZER / "tokenizer.json"))
    ranks = [bytes([i]) for i in range(256)]
    for i in range(257, hf.get_vocab_size()):
        b = hf.decode([i]).encode("utf-8", errors="surrogateescape")
        if "\ufffd" not in hf.decode([i]) and b not in ranks:
            ranks.append(b)
    return ranks


def test_tiktokenizer_megatron_json_and_openai_file(tmp_path, cli):
    import base64

    ranks = _tiktoken_ranks(tmp_path)
    mj = tmp_path / "tok.json"
    mj.write_text(
        json.dumps(
            [
                {"rank": i, "token_bytes": base64.b64encode(b).decode(), "token_str": ""}
                for i, b in enumerate(ranks)
            ]
        )
    )
    tt = load_tokenizer("TikTokenizer", mj)
    assert tt.eod == 2 and tt.vocab_size == len(ranks) + 1000 and tt.engine == "tiktoken"
    flat, lengths = tt.encode(["hello world", ""])
    assert lengths[1] == 0 and flat.min() >= 1000 and tt.decode(flat) == "hello world"
    flat, _ = tt.encode(["a</s>b<unk>"])  # Megatron encodes with allowed_special="all": </s> is 2
    assert 2 in flat.tolist() and 0 in flat.tolist() and tt.decode(flat) == "a</s>b<unk>"
    res = cli(
        "prep-data",
        "--input",
        SAMPLE_CORPUS,
        "--output-prefix",
        tmp_path / "tk",
        "--tokenizer-type",
        "TikTokenizer",
        "--tokenizer-model",
        mj,
        "--append-eod",
        "--json",
        "--no-progress",
    )
    assert res.code == 0 and "fast engine not used" in res.err
    ds = IndexedDatasetReader(tmp_path / "tk_text_document")
    first = json.loads(SAMPLE_CORPUS.open().readline())["text"]
    assert ds.document(0)[-1] == 2 and tt.decode(ds.document(0)[:-1]) == first
    oa = tmp_path / "r50k_base.tiktoken"
    oa.write_text("".join(f"{base64.b64encode(b).decode()} {i}\n" for i, b in enumerate(ranks)))
    t2 = load_tokenizer("TikTokenizer", oa)
    assert t2.decode(t2.encode(["caf\u00e9 \U0001f389"])[0]) == "caf\u00e9 \U0001f389"
    assert t2.eod == t2.reference.eot_token


@pytest.mark.parametrize(
    "data,expected",
    [
        (b'{"a":1}\n{"b":2}\n', (2, True)),
        (b'{"a":1}\r\n{"b":2}\r\n', (2, True)),
        (b'{"a":1}\n{"b":2}', (2, True)),
        (b'{"a":1}\n\n{"b":2}\n', (3, False)),
        (b'{"a":1} junk\n', (1, False)),
        (b"\n", (1, False)),
        (b"", (0, True)),
    ],
)
def test_scan_lines_counts_lines_and_spots_lines_not_ending_in_a_brace(data, expected):
    assert reader.scan_lines(data) == expected


def test_trailing_data_crlf_and_missing_final_newline(tmp_path, tok):
    src = tmp_path / "mixed.jsonl"
    src.write_bytes(b'{"text": "one"}\r\n{"text": "two"} trailing\r\n{"text": "three"}')
    res = prep_data([str(src)], tmp_path / "o", tok, progress=False)
    assert res.documents == 2 and [(b.line, b.reason.split(" (")[0]) for b in res.bad_lines] == [
        (2, "not JSON")
    ]
    ds = IndexedDatasetReader(tmp_path / "o_text_document")
    assert [tok.decode(ds.document(i)) for i in range(2)] == ["one", "three"]


def test_bad_line_in_a_staged_chunk_is_found_by_reading_the_chunk_again(tmp_path, tok, monkeypatch):
    monkeypatch.setattr(reader, "CHUNK_BYTES", 64 * 1024)
    lines = SAMPLE_CORPUS.read_bytes().splitlines(keepends=True)[:600]
    lines.insert(400, b'{"title": "ends with a brace but has no text"}\n')
    src = tmp_path / "c.jsonl"
    src.write_bytes(b"".join(lines))
    res = prep_data([str(src)], tmp_path / "o", tok, progress=False)
    assert [(b.line, b.reason.split(" (")[0]) for b in res.bad_lines] == [(401, "key 'text' missing")]
    assert res.documents == 600 and res.fast_chunks > 3 and res.slow_chunks == 1
    good = tmp_path / "good.jsonl"
    good.write_bytes(b"".join(lines[:400] + lines[401:]))
    prep_data([str(good)], tmp_path / "g", tok, progress=False)
    assert files_bytes(tmp_path / "o_text_document") == files_bytes(tmp_path / "g_text_document")


def _scan_reference(data: bytes) -> tuple[int, bool]:
    """scan_lines spelled out line by line: the answer the blocked, vectorised scan must give."""
    lines = data.split(b"\n")
    if data.endswith(b"\n") or not data:
        lines.pop()
    return len(lines), all((line[:-1] if line.endswith(b"\r") else line).endswith(b"}") for line in lines)


@pytest.mark.parametrize("block", [1, 2, 3, 5, 8, 64, reader.SCAN_BLOCK])
def test_scan_lines_in_blocks_matches_a_line_by_line_scan_and_stages_every_byte(block, monkeypatch, tmp_path):
    """Block edges must not matter: a line end, a CR or a brace may fall on either side of one."""
    monkeypatch.setattr(reader, "SCAN_BLOCK", block)
    rng = np.random.default_rng(block)
    cases = [b"", b"\n", b"\r\n", b"}", b"}\r", b"\r", b"}\n\n", b"}\n\r\n", b'{"a":1}\r\r\n']
    alphabet = np.frombuffer(b'{}\n\r"a ', dtype=np.uint8)
    cases += [rng.choice(alphabet, size=int(rng.integers(1, 40))).tobytes() for _ in range(300)]
    cases += [b"".join(rng.choice([b'{"t": 1}\n', b'{"t": 2}\r\n', b"{}\n"], size=20)) for _ in range(50)]
    sink = tmp_path / "staged"
    with open(sink, "w+b") as fh:
        for data in cases:
            assert reader.scan_lines(data) == _scan_reference(data), data
            fh.seek(0)
            assert reader.scan_lines(memoryview(data), fh) == _scan_reference(data), data
            fh.truncate()
            fh.flush()
            assert sink.read_bytes() == data


@pytest.mark.parametrize("key", ["x/../../../y", "a/b", "/abs", "..", ".", "nul\0key", ""])
def test_json_keys_that_cannot_be_in_a_file_name_are_refused_before_writing(tmp_path, cli, key):
    src = write_jsonl(tmp_path / "in.jsonl", [{"text": "ok", key: "doc"}])
    out = tmp_path / "deep" / "er" / "out"
    res = cli("prep-data", "--input", src, "--output-prefix", out / "p", "--json-keys", key, "--no-progress")
    assert res.code == 2 and res.out == "" and len(res.err.strip().splitlines()) == 1, res.err
    assert "--json-keys" in res.err and "file name" in res.err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["in.jsonl"]  # nothing written, anywhere


def test_render_prep_job_refuses_a_key_with_a_slash():
    from workshop_lib.data.shard import render_prep_job

    with pytest.raises(UsageError, match="file name"):
        render_prep_job(["/shared/x.jsonl"], "/shared/out", shards=2, json_keys=["x/../y"])


def test_keys_with_dots_and_spaces_are_plain_names(tmp_path, tok):
    src = write_jsonl(tmp_path / "in.jsonl", [{"a.b c": "hello there", "..x": "more"}])
    res = prep_data([str(src)], tmp_path / "p", tok, json_keys=["a.b c", "..x"], progress=False)
    assert res.documents == 1
    assert (tmp_path / "p_a.b c_document.bin").is_file() and (tmp_path / "p_..x_document.idx").is_file()


def test_empty_corpus_exits_0_but_warns_on_stderr_and_in_json(tmp_path, cli):
    (tmp_path / "empty.jsonl").write_bytes(b"")
    res = cli(
        "prep-data",
        "--input",
        tmp_path / "empty.jsonl",
        "--output-prefix",
        tmp_path / "e",
        "--no-progress",
        "--json",
    )
    assert res.code == 0, res.err
    out = res.json()
    assert out["documents"] == 0 and len(out["warnings"]) == 1 and "empty dataset" in out["warnings"][0]
    assert "prep-data: warning: wrote an empty dataset" in res.err
    assert read_header(tmp_path / "e_text_document").document_count == 0

    src = write_jsonl(tmp_path / "blank.jsonl", [{"text": ""}, {"text": ""}])
    res = cli("prep-data", "--input", src, "--output-prefix", tmp_path / "b", "--no-progress", "--json")
    assert res.code == 0 and res.json()["documents"] == 2 and res.json()["tokens"] == 0
    assert "2 documents but 0 tokens" in res.json()["warnings"][0] and "0 tokens" in res.err

    src = write_jsonl(tmp_path / "ok.jsonl", [{"text": "some words"}])
    res = cli("prep-data", "--input", src, "--output-prefix", tmp_path / "k", "--no-progress", "--json")
    assert res.code == 0 and res.json()["warnings"] == [] and "warning" not in res.err


def test_sharding_one_file_warns_that_sharding_is_by_file(tmp_path, cli):
    src = write_jsonl(tmp_path / "one.jsonl", [{"text": f"doc {i}"} for i in range(10)])
    outs = []
    for i in range(2):
        res = cli(
            "prep-data",
            "--input",
            src,
            "--output-prefix",
            tmp_path / f"s{i}",
            "--num-shards",
            2,
            "--shard-index",
            i,
            "--no-progress",
            "--json",
        )
        assert res.code == 0, res.err
        outs.append(res.json())
        assert "1 input file(s) for 2 shards: sharding is by whole file" in res.err
    assert outs[0]["documents"] == 0 and outs[1]["documents"] == 10
    assert any("shard 0 of 2 gets no input file" in w for w in outs[0]["warnings"])
    assert not any("gets no input file" in w for w in outs[1]["warnings"])
    two = [write_jsonl(tmp_path / f"p{i}.jsonl", [{"text": "x"}]) for i in range(2)]
    res = cli(
        "prep-data", "--input", *two, "--output-prefix", tmp_path / "t", "--num-shards", 2, "--shard-index", 1,
        "--no-progress", "--json",
    )  # fmt: skip
    assert res.code == 0 and res.json()["warnings"] == [] and "warning" not in res.err
    res = cli("prep-data", "--help")
    assert "by whole file" in " ".join(res.out.split())
