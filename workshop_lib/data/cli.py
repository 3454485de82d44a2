"""Subcommands of the ``data`` room (registered by ``workshop_lib.cli``): prep-data, blend, inspect-data,
merge-data, render-prep-job. Handlers import their implementation lazily so ``workshop`` starts fast."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..cli_output import emit_text, print_json


def _add_tokenizer_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("tokenizer (Megatron-LM's flags)")
    g.add_argument(
        "--tokenizer-type",
        default="HuggingFaceTokenizer",
        choices=["HuggingFaceTokenizer", "GPT2BPETokenizer", "TikTokenizer"],
    )
    g.add_argument(
        "--tokenizer-model",
        default=None,
        help="HF tokenizer folder or tokenizer.json (default: the sample tokenizer under data/), "
        "or the tiktoken file for TikTokenizer",
    )
    g.add_argument("--vocab-file", default=None, help="GPT2BPETokenizer: vocab.json")
    g.add_argument("--merge-file", default=None, help="GPT2BPETokenizer: merges.txt")
    g.add_argument(
        "--vocab-size",
        type=int,
        default=None,
        help="TikTokenizer (Megatron JSON): vocabulary size, 1,000 specials included",
    )


def register(sub: argparse._SubParsersAction) -> None:
    """Add this room's subcommands; handlers import their implementation lazily."""
    p = sub.add_parser(
        "prep-data",
        help="tokenize JSONL corpora into Megatron .bin/.idx datasets",
        description="Tokenize .jsonl/.jsonl.gz/.jsonl.zst files (folders, globs) into "
        "{PREFIX}_{KEY}_document.bin/.idx, byte-identical to Megatron-LM's tools/preprocess_data.py.",
    )
    p.add_argument("--input", nargs="+", required=True, metavar="PATH", help="files, folders or globs")
    p.add_argument("--output-prefix", required=True)
    p.add_argument("--json-keys", nargs="+", default=["text"], metavar="KEY")
    _add_tokenizer_flags(p)
    p.add_argument(
        "--append-eod", action="store_true", help="end every non-empty document with the EOD token"
    )
    p.add_argument(
        "--workers", type=int, default=None, help="tokenizer threads (default: all cores; at most 4 per core)"
    )
    p.add_argument("--on-bad-line", choices=["skip", "fail"], default="skip")
    p.add_argument(
        "--max-line-bytes",
        type=int,
        default=None,
        metavar="N",
        help="skip (and name) a line longer than this; it is never held in memory (default 64 MiB)",
    )
    p.add_argument(
        "--engine",
        choices=["auto", "gigatoken", "reference"],
        default="auto",
        help="auto: gigatoken where it gives the reference ids, else the reference library",
    )
    p.add_argument(
        "--dataset-info",
        default=None,
        metavar="PATH",
        help="also write dataset.json (a run directory or a .json path) for the first key",
    )
    p.add_argument(
        "--num-shards",
        type=int,
        default=1,
        help="split the input files into this many contiguous groups (by whole file: a file is never "
        "split, so give at least this many files; a group with no file writes an empty dataset)",
    )
    p.add_argument(
        "--shard-index",
        type=int,
        default=None,
        help="the group this run tokenizes (default: $JOB_COMPLETION_INDEX, else 0)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(func=_prep_data)

    b = sub.add_parser(
        "blend",
        help="compose Megatron's --data-path and check the epochs a run takes",
        description="PREFIX:WEIGHT pairs -> the --data-path string, tokens and epochs per dataset.",
    )
    b.add_argument("datasets", nargs="+", metavar="PREFIX:WEIGHT")
    b.add_argument("--seq-length", type=int, required=True)
    b.add_argument("--global-batch-size", type=int, required=True)
    b.add_argument("--train-iters", type=int, required=True)
    b.add_argument(
        "--split", default="969,30,1", help="train,valid,test weights (Megatron's default 969,30,1)"
    )
    b.add_argument("--eval-iters", type=int, default=100, help="Megatron's --eval-iters (default 100)")
    b.add_argument(
        "--eval-interval", type=int, default=1000, help="Megatron's --eval-interval (default 1000)"
    )
    b.add_argument("--max-epochs", type=float, default=4.0, help="warn when a dataset is read more often")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=_blend)

    i = sub.add_parser(
        "inspect-data", help="documents, tokens, lengths and a few decoded documents of a dataset"
    )
    i.add_argument("prefix", metavar="PREFIX", help="dataset prefix (…_text_document), .bin or .idx")
    _add_tokenizer_flags(i)
    i.add_argument("--samples", type=int, default=3, help="documents to decode")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=_inspect)

    m = sub.add_parser("merge-data", help="concatenate shard datasets into one (in the order given)")
    m.add_argument("--output-prefix", required=True, help="merged dataset prefix (…_text_document)")
    m.add_argument("shards", nargs="+", metavar="SHARD_PREFIX")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=_merge)

    r = sub.add_parser(
        "render-prep-job", help="render a Kubernetes Indexed Job that runs prep-data on shards"
    )
    r.add_argument(
        "--input",
        nargs="+",
        required=True,
        metavar="PATH",
        help="input files as the pods see them (on the shared volume)",
    )
    r.add_argument("--output-prefix", required=True, help="each pod writes {PREFIX}_shard{i}_{key}_document")
    r.add_argument(
        "--shards",
        type=int,
        required=True,
        help="pods; each takes a contiguous group of whole input files, so give at least this many files",
    )
    r.add_argument("--name", default="prep-data")
    r.add_argument("--namespace", default="megatron-workshop")
    r.add_argument("--image", default="123456789012.dkr.ecr.us-east-2.amazonaws.com/megatron-training:latest")
    r.add_argument("--pvc", default="fsx-shared-pvc")
    r.add_argument("--mount-path", default="/shared")
    r.add_argument("--cpus", type=int, default=8)
    r.add_argument("--memory", default="16Gi")
    r.add_argument("--parallelism", type=int, default=None)
    r.add_argument("--json-keys", nargs="+", default=["text"], metavar="KEY")
    r.add_argument(
        "--prep-args",
        default="",
        help="extra prep-data flags, e.g. '--append-eod --tokenizer-model /shared/tok'",
    )
    r.add_argument("--out", default=None, help="write the YAML here instead of stdout")
    r.set_defaults(func=_render_job)


def _emit(args: argparse.Namespace, obj: dict, text) -> int:
    """``--json``: the object on stdout; otherwise ``text(obj)`` for people."""
    if args.json:
        print_json(obj)
    else:
        print(text(obj))
    return 0


def _load_tok(args: argparse.Namespace, engine: str = "auto"):
    from .tokenizer import load_tokenizer

    return load_tokenizer(
        args.tokenizer_type,
        args.tokenizer_model,
        vocab_file=args.vocab_file,
        merge_file=args.merge_file,
        vocab_size=args.vocab_size,
        engine=engine,
    )


MAX_WORKERS_PER_CORE = 4  # --workers above this many threads per core is refused


def _install_sigterm() -> None:
    """A pod eviction (SIGTERM) cleans up like Ctrl-C: temporary outputs are removed."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():

        def handler(signum, frame):  # noqa: ARG001
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, handler)


def _prep_data(args: argparse.Namespace) -> int:
    import os

    from ..errors import UsageError
    from .reader import MAX_LINE_BYTES
    from .tokenizer import set_threads

    cores = os.cpu_count() or 1
    if args.workers is not None:
        if not 1 <= args.workers <= MAX_WORKERS_PER_CORE * cores:
            raise UsageError(
                f"--workers {args.workers}: use 1 to {MAX_WORKERS_PER_CORE * cores} "
                f"({MAX_WORKERS_PER_CORE} per CPU core, {cores} cores here); more threads only add overhead"
            )
        set_threads(args.workers)
    else:
        set_threads(cores)
    max_line = MAX_LINE_BYTES if args.max_line_bytes is None else args.max_line_bytes
    if max_line < 1:
        raise UsageError(f"--max-line-bytes {max_line}: use a positive number of bytes (default 64 MiB)")
    _install_sigterm()
    from ..handover import dataset_info_path
    from .dataset_info import check_dataset_info_target, dataset_info_from_summary, write_dataset_info
    from .prep import prep_data

    if args.dataset_info:
        check_dataset_info_target(args.dataset_info)  # before the work, not after the dataset is written

    shard_index = args.shard_index
    if shard_index is None:
        env = os.environ.get("JOB_COMPLETION_INDEX", "0")
        if not env.isdigit():
            raise UsageError(f"JOB_COMPLETION_INDEX={env!r}: not a shard index; pass --shard-index")
        shard_index = int(env)
    tok = _load_tok(args, args.engine)
    result = prep_data(
        args.input,
        args.output_prefix,
        tok,
        json_keys=args.json_keys,
        append_eod_token=args.append_eod,
        on_bad_line=args.on_bad_line,
        progress=not args.no_progress,
        num_shards=args.num_shards,
        shard_index=shard_index,
        max_line_bytes=max_line,
    )
    try:
        summary = result.summary()
        if args.dataset_info:
            try:
                path = write_dataset_info(
                    args.dataset_info, **dataset_info_from_summary(summary, args.json_keys[0])
                )
            except BaseException:
                # A failure is reported with nothing left behind: a dataset without its
                # dataset.json would look finished to the next notebook.
                _remove_outputs(result.outputs)
                raise
            summary["dataset_info"] = str(path)
        return _emit(args, summary, _format_prep)
    except KeyboardInterrupt:
        info = [str(dataset_info_path(args.dataset_info))] if args.dataset_info else []
        _remove_outputs([*result.outputs, *info])
        raise


def _remove_outputs(paths: list[str]) -> None:
    """Remove what a run wrote, once it ends "interrupted" or failed: exit 130 or 2 leaves nothing.

    Signals are held meanwhile, so a second Ctrl-C cannot leave half the files behind.
    """
    from ..fsutil import held_stop_signals

    with held_stop_signals():
        for out in paths:
            Path(out).unlink(missing_ok=True)


def _format_prep(s: dict) -> str:
    head = (
        f"{s['documents']:,} documents, {s['tokens']:,} tokens, {s['skipped']} bad lines skipped, "
        f"{s['seconds']:.2f} s ({s['megabytes_per_second']:.1f} MB/s, engine {s['engine']})"
    )
    return "\n".join([head, *(f"  {out}" for out in s["outputs"])])


def _blend(args: argparse.Namespace) -> int:
    from .blend import blend_report, format_blend

    report = blend_report(
        args.datasets,
        seq_length=args.seq_length,
        global_batch_size=args.global_batch_size,
        train_iters=args.train_iters,
        split=args.split,
        eval_iters=args.eval_iters,
        eval_interval=args.eval_interval,
        max_epochs=args.max_epochs,
    )
    for w in report["warnings"]:
        print(f"workshop blend: warning: {w}", file=sys.stderr)
    return _emit(args, report, format_blend)


def _inspect(args: argparse.Namespace) -> int:
    from .inspect import format_inspect, inspect_dataset

    tok = None
    if args.samples > 0:
        tok = _load_tok(args, "reference")
    report = inspect_dataset(args.prefix, tokenizer=tok, samples=args.samples)
    return _emit(args, report, format_inspect)


def _merge(args: argparse.Namespace) -> int:
    from .shard import merge_datasets

    _install_sigterm()
    out = merge_datasets(args.shards, args.output_prefix)
    try:
        return _emit(
            args,
            out,
            lambda o: (
                f"merged {len(o['shards'])} shards: {o['documents']:,} documents, {o['tokens']:,} "
                f"tokens -> {o['outputs'][0]}"
            ),
        )
    except KeyboardInterrupt:
        _remove_outputs(out["outputs"])
        raise


def _render_job(args: argparse.Namespace) -> int:
    import shlex

    from ..errors import UsageError
    from .shard import planned_files_warning, render_prep_job, to_yaml

    try:
        prep_args = shlex.split(args.prep_args)
    except ValueError as exc:  # shlex: 'No closing quotation', 'No escaped character'
        raise UsageError(
            f"--prep-args {args.prep_args!r}: {exc} (it is split like a shell line; "
            "close every quote, e.g. --prep-args \"--tokenizer-model '/shared/my tok'\")"
        ) from None
    job = render_prep_job(
        args.input,
        args.output_prefix,
        shards=args.shards,
        name=args.name,
        namespace=args.namespace,
        image=args.image,
        pvc=args.pvc,
        mount_path=args.mount_path,
        cpus=args.cpus,
        memory=args.memory,
        parallelism=args.parallelism,
        json_keys=args.json_keys,
        prep_args=prep_args,
    )
    text = to_yaml(job)
    warning = planned_files_warning(args.input, args.shards)
    if warning:
        print(f"workshop render-prep-job: warning: {warning}", file=sys.stderr)
    emit_text(text, args.out)
    return 0
