"""Subcommands of the ``monitor`` room (registered by ``workshop_lib.cli``).

``workshop monitor parse | diagnose | plot | nccl | gpu`` and ``workshop checkpoints``. Handlers
import their implementation (and pandas, matplotlib, tensorboard, kubernetes) only when they run.
"""

from __future__ import annotations

import argparse
import sys

from ..cli_output import print_json


def register(sub: argparse._SubParsersAction) -> None:
    """Add this room's subcommands; handlers import their implementation lazily."""
    mon = sub.add_parser("monitor", help="read training logs: parse, diagnose, plot, NCCL and GPU health")
    msub = mon.add_subparsers(dest="monitor_command", metavar="SUBCOMMAND", parser_class=type(mon))
    msub.required = True

    p = msub.add_parser("parse", help="iteration/validation lines of a Megatron log to JSON (or a table)")
    p.add_argument("log", nargs="?", help="the training log (e.g. runs/workshop/train/train.log)")
    p.add_argument(
        "--tensorboard", metavar="DIR", help="read TensorBoard event files instead of (or without) a log"
    )
    p.add_argument("--gpu", help="GPU model for MFU (a10g, a100-40gb, a100-80gb, h100-80gb, h200, b200)")
    p.add_argument(
        "--seq-length", type=int, help="sequence length for tokens/s (default: read from the log's arguments)"
    )
    _max_line_flag(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_parse, command="monitor parse")

    p = msub.add_parser(
        "diagnose", help="the primary root cause of a failed run, its evidence lines and fix, then the rest"
    )
    p.add_argument("log")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_diagnose, command="monitor diagnose")

    p = msub.add_parser("plot", help="loss, learning rate, grad norm, loss scale and throughput to a PNG")
    p.add_argument("log", nargs="?")
    p.add_argument("--out", required=True, help="the image to write: .png, .svg or .pdf")
    p.add_argument("--tensorboard", metavar="DIR", help="plot TensorBoard event files instead of a log")
    _max_line_flag(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_plot, command="monitor plot")

    p = msub.add_parser(
        "nccl", help="NCCL/EFA health from NCCL INFO lines: versions, network, GPUDirect, verdict"
    )
    p.add_argument("log")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_nccl, command="monitor nccl")

    p = msub.add_parser("gpu", help="GPU utilisation from nvidia-smi dmon / --query-gpu csv output")
    p.add_argument(
        "file", nargs="?", help="saved nvidia-smi output (omit with --namespace to collect from pods)"
    )
    p.add_argument(
        "--namespace", help="collect from the pods of this namespace through the Kubernetes exec API"
    )
    p.add_argument("--selector", help="label selector of the pods (with --namespace)")
    p.add_argument("--kubeconfig")
    p.add_argument("--context")
    p.add_argument("--threshold", type=float, default=None, help="flag GPUs under this SM %% (default 50)")
    p.add_argument("--out", help="also write a bar chart (.png, .svg or .pdf)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_gpu, command="monitor gpu")

    c = sub.add_parser(
        "checkpoints", help="Megatron checkpoints: iterations, latest, sizes, completeness, clean-up"
    )
    c.add_argument("directory", help="Megatron's --save directory")
    c.add_argument("--keep-last", type=int, metavar="N", help="plan removing all but the newest N (dry run)")
    c.add_argument("--delete", action="store_true", help="with --keep-last: really delete")
    c.add_argument(
        "--storage", default=None, help="storage tier for the save-time estimate (default fsx-persistent-250)"
    )
    c.add_argument("--storage-capacity-tib", type=float, help="file system size in TiB (default: the tier's)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=_checkpoints, command="checkpoints")


def _max_line_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-line-bytes",
        type=int,
        default=1 << 20,
        metavar="N",
        help="skip (and name) a log line longer than this; it is never held whole (default 1 MiB)",
    )


def _warn_long_lines(command: str, log) -> None:
    """One stderr line when over-long lines were skipped (they are also in the JSON summary)."""
    if log.long_line_count:
        first = log.long_lines[0]
        print(
            f"workshop {command}: warning: skipped {log.long_line_count} line(s) longer than --max-line-bytes "
            f"(first: line {first['line_number']}, {first['chars']:,} characters)",
            file=sys.stderr,
        )


def _fmt(x, spec: str = ".4g") -> str:
    return "-" if x is None else format(x, spec)


def _parse(args) -> int:
    from ..errors import UsageError
    from .parse import check_max_line_bytes, check_seq_length

    check_seq_length(args.seq_length)
    check_max_line_bytes(args.max_line_bytes)
    if args.tensorboard:
        from .plot import read_tensorboard

        log = read_tensorboard(args.tensorboard)
        log.gpu, log.seq_length = args.gpu, args.seq_length
    elif args.log:
        from .parse import parse_log

        log = parse_log(
            args.log, gpu=args.gpu, seq_length=args.seq_length, max_line_bytes=args.max_line_bytes
        )
    else:
        raise UsageError("pass a LOG file or --tensorboard DIR")
    _warn_long_lines("monitor parse", log)
    if args.json:
        log.write_json(sys.stdout)  # streamed: a million iterations never become one string
        sys.stdout.flush()
        return 0
    s = log.summary
    print(
        f"{s['iterations_logged']} iterations logged ({_fmt(s['first_iteration'])}..{_fmt(s['last_iteration'])} of {_fmt(s['train_iters'])})"
    )
    print(f"loss: last {_fmt(s['last_loss'])}, best {_fmt(s['best_loss'])} at {_fmt(s['best_loss_iteration'])}, "
          f"smoothed {_fmt(s['smoothed_loss'])}, trend {s['loss_trend'] or '-'}")  # fmt: skip
    print(f"speed: {_fmt(s['mean_elapsed_ms'], '.1f')} ms/iteration, {_fmt(s['mean_tflops_per_gpu'], '.1f')} TFLOP/s/GPU, "
          f"{_fmt(s['tokens_per_second'], ',.0f')} tokens/s, MFU {_fmt(s['mfu'], '.1%')}")  # fmt: skip
    print(f"skipped {s['skipped_iterations']}, NaN iterations {s['nan_iterations']}, "
          f"non-finite losses {len(s['nonfinite_loss_iterations'])}, ETA {_fmt(s['eta_seconds'], '.0f')} s")  # fmt: skip
    for v in log.validation[-3:]:
        print(f"validation at {v['iteration']}: lm loss {_fmt(v['lm_loss'])}, PPL {_fmt(v['lm_loss_ppl'])}")
    return 0


def _diagnose(args) -> int:
    from pathlib import Path

    from .diagnose import verdict

    v = verdict(Path(args.log))
    if args.json:
        print_json(v.to_dict())
        return 0
    print(f"{args.log}: {v.render()}")
    return 0


def _plot(args) -> int:
    from ..errors import UsageError
    from .plot import check_plot_out, plot_training, read_tensorboard

    check_plot_out(args.out)  # before parsing a possibly large log
    if args.tensorboard:
        log = read_tensorboard(args.tensorboard)
    elif args.log:
        from .parse import parse_log

        log = parse_log(args.log, max_line_bytes=args.max_line_bytes)
    else:
        raise UsageError("pass a LOG file or --tensorboard DIR")
    _warn_long_lines("monitor plot", log)
    plot_training(log, args.out)
    if args.json:
        print_json({"out": str(args.out), "iterations": len(log.records), "validation": len(log.validation)})
    else:
        print(f"wrote {args.out} ({len(log.records)} iterations)", file=sys.stderr)
    return 0


def _nccl(args) -> int:
    from .nccl import nccl_health

    h = nccl_health(args.log)
    if args.json:
        print_json(h.to_dict())
    else:
        print(h.message)
    return 0


def _gpu(args) -> int:
    from ..errors import UsageError
    from ..facts.failures import LOW_GPU_UTIL_PERCENT
    from .gpu import collect_from_pods, gpu_report, gpu_stats, parse_nvidia_smi, plot_gpu, read_gpu_file

    threshold = LOW_GPU_UTIL_PERCENT if args.threshold is None else args.threshold
    if not 0 <= threshold <= 100:  # also refuses nan (every comparison with nan is false)
        raise UsageError(f"--threshold {args.threshold}: use an SM utilisation percentage from 0 to 100")
    if args.out:
        from .plot import check_plot_out

        check_plot_out(args.out)  # before collecting from pods
    if args.file:
        text = read_gpu_file(args.file)
    elif args.namespace:
        text = collect_from_pods(args.namespace, label_selector=args.selector, kubeconfig=args.kubeconfig,
                                 context=args.context)  # fmt: skip
    else:
        raise UsageError("pass a FILE with nvidia-smi output, or --namespace NS to collect it from pods")
    source_name = args.file or f"pods of {args.namespace}"
    report = gpu_report(text, threshold, source_name)
    if args.out:
        plot_gpu(gpu_stats(parse_nvidia_smi(text, source_name), threshold), args.out, threshold)
    if args.json:
        print_json(report)
        return 0
    print(report["verdict"])
    for g in report["gpus"]:
        name = f"{g['source']}:" if g["source"] else ""
        print(f"  {name}GPU{g['gpu']}: SM {_fmt(g['sm_mean'], '.0f')}%  memory {_fmt(g['mem_mean'], '.0f')}%"
              f"{'  <- low' if g['low'] else ''}")  # fmt: skip
    for cause in report["likely_causes"]:
        print(f"  check: {cause}")
    return 0


def _checkpoints(args) -> int:
    from ..errors import UsageError
    from ..facts.storage import DEFAULT_STORAGE
    from .checkpoints import format_table, human_bytes, human_seconds, scan_checkpoints

    if args.delete and args.keep_last is None:
        raise UsageError("--delete needs --keep-last N (the number of newest checkpoints to keep)")
    cap = args.storage_capacity_tib
    if cap is not None and not 0 < cap < 1e6:  # nan and inf fail this too
        raise UsageError(f"--storage-capacity-tib {cap}: use the file system's size in TiB, e.g. 4.8")
    report = scan_checkpoints(args.directory, keep_last=args.keep_last, delete=args.delete,
                              storage=args.storage or DEFAULT_STORAGE, storage_capacity_tib=args.storage_capacity_tib)  # fmt: skip
    if args.json:
        print_json(report)
        return 0
    if not report["checkpoints"]:
        print(f"{args.directory}: no iter_* checkpoints yet")
    else:
        print(format_table(report))
    print(f"latest (tracker): {report['latest']}; latest complete: {report['latest_complete']}; "
          f"total {human_bytes(report['total_bytes'])}")  # fmt: skip
    st = report["storage"]
    if report["save_seconds_estimate"] is not None:
        print(f"one save ({human_bytes(report['checkpoint_bytes'])}) takes at least "
              f"{human_seconds(report['save_seconds_estimate'])} on {st['service']} {st['tier']} "
              f"({st['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s)")  # fmt: skip
    for p in report["problems"]:
        print(f"problem: {p}")
    if "cleanup" in report:
        c = report["cleanup"]
        verb = "would delete" if c["dry_run"] else "deleted"
        print(f"{verb} {len(c['delete'])} checkpoint(s), {human_bytes(c['freed_bytes'])}"
              + (" (dry run: add --delete)" if c["dry_run"] else ""))  # fmt: skip
        for path in c["delete"]:
            print(f"  {path}")
    return 0
