"""The trainer on a real GPU, held against the calculator: memory, step time, MFU, and a resume.

``python -m benchmarks.bench_gpu --out DIR`` (on a machine with CUDA; the lent H100 here) runs
``workshop train --nproc-per-node 1`` (NCCL, bf16) for a 1.25B Llama-shaped GPT at sequence 2048
with several micro-batch sizes, recompute choices and attention backends, and for each compares:

* the memory after the first iteration (weights, fp32 main grads, Adam states) with the plan's
  ``weights + gradients + optimizer``, and the peak with the plan's ``total``; the growth of the
  peak per micro-batch sample with the plan's activations per sample;
* the steady time per iteration and the trainer's TFLOP/s with the plan's estimate and MFU.

Then it imports the shipped base model (``workshop import-hf``), continues its pre-training on the
GPU with a save half-way, resumes from that save, and compares the resumed losses with an
uninterrupted run (the CUDA RNG state and optimizer round-trip that CPU tests cannot reach).

Each run's log and the JSON and Markdown tables are written to ``--out`` as they finish, so a run
cut short still leaves what it measured. Without CUDA it says so and exits 0 (``make bench`` on CPU
machines), unless ``--tiny``, which runs the same steps with a tiny model on the CPU to check the
script itself. The measured tables are kept in ``benchmarks/results/gpu_h100.md`` (and ``.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from workshop_lib.facts.megatron_flags import format_flags

REPO = Path(__file__).resolve().parents[1]
TOKENIZER = REPO / "data" / "tokenizer"
CORPUS = REPO / "data" / "techpulse_sample.jsonl"
BASE_MODEL = REPO / "data" / "base_model"
MIB = 1024**2

# A Llama-shaped 1.25B model (vocabulary: the shipped 8k tokenizer), and a 2-layer one for --tiny.
FULL_MODEL = {
    "num-layers": 24, "hidden-size": 2048, "num-attention-heads": 16, "ffn-hidden-size": 5632,
    "seq-length": 2048, "max-position-embeddings": 2048, "position-embedding-type": "rope",
    "normalization": "RMSNorm", "swiglu": True, "disable-bias-linear": True,
    "attention-dropout": 0.0, "hidden-dropout": 0.0, "bf16": True,
}  # fmt: skip
TINY_MODEL = {**FULL_MODEL, "num-layers": 2, "hidden-size": 64, "num-attention-heads": 4,
              "ffn-hidden-size": 176, "seq-length": 128, "max-position-embeddings": 128, "bf16": False}  # fmt: skip
GLOBAL_BATCH = 8
GQA_MODEL = {
    "num-layers": 22,
    "num-attention-heads": 32,
    "group-query-attention": True,
    "num-query-groups": 4,
}
# name, what changes from the model's flags. Without Transformer Engine, "unfused" is megatron-core's
# local attention (it keeps the score matrix); "flash" and "auto" are PyTorch's SDPA (it does not).
UNFUSED = {"attention-backend": "unfused"}
# megatron-core's fused SwiGLU is the trainer's default on GPUs; this is the plain-ops form.
PLAIN_SWIGLU = {"attention-backend": "flash", "no-bias-swiglu-fusion": True}
FULL_RECOMPUTE = {"recompute-granularity": "full", "recompute-method": "uniform", "recompute-num-layers": 1}
VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("mbs1", {"micro-batch-size": 1, **UNFUSED}),
    ("mbs2", {"micro-batch-size": 2, **UNFUSED}),
    ("mbs4", {"micro-batch-size": 4, **UNFUSED}),
    ("mbs4-selective", {"micro-batch-size": 4, "recompute-granularity": "selective", **UNFUSED}),
    ("mbs4-full", {"micro-batch-size": 4, **FULL_RECOMPUTE, **UNFUSED}),
    ("mbs1-flash", {"micro-batch-size": 1, "attention-backend": "flash"}),
    ("mbs2-flash", {"micro-batch-size": 2, "attention-backend": "flash"}),
    ("mbs4-flash", {"micro-batch-size": 4, "attention-backend": "flash"}),
    ("mbs2-auto", {"micro-batch-size": 2}),  # the trainer's default: SDPA without TE, as flash
    ("mbs1-flash-plain-swiglu", {"micro-batch-size": 1, **PLAIN_SWIGLU}),
    ("mbs4-flash-plain-swiglu", {"micro-batch-size": 4, **PLAIN_SWIGLU}),
    # A shape the plan was not fitted on: TinyLlama-1.1B's (22 layers, 32 heads sharing 4 K/V heads).
    ("gqa-mbs2", {"micro-batch-size": 2, **GQA_MODEL}),
    ("gqa-mbs4", {"micro-batch-size": 4, **GQA_MODEL}),
]
# The cases benchmarks/saved_activations.py counts on the device: one layer of the model above with
# the trainer's default layers, with plain SwiGLU, with megatron-core's local attention, and with GQA.
SAVED_CASES = [
    {**FULL_MODEL, "micro-batch-size": 1},
    {**FULL_MODEL, "micro-batch-size": 1, "no-bias-swiglu-fusion": True},
    {**FULL_MODEL, "micro-batch-size": 1, "attention-backend": "unfused"},
    {**FULL_MODEL, "micro-batch-size": 1, **GQA_MODEL},
]
TRAIN_ONLY = (
    "attention-dropout",
    "hidden-dropout",
    "no-bias-swiglu-fusion",
)  # the planner does not take these
# Megatron prints its memory report once, after the first log interval. After iteration 1 the
# peak misses Adam's moments (created by the first optimizer step, 8 bytes a parameter), so the
# report must come later for a steady-state peak: every 4th iteration is logged, the first
# interval (warm-up) is left out of the step time.
LOG_INTERVAL = 4


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "workshop_lib.cli", *args]


def run_logged(cmd: list[str], log: Path, timeout: float) -> tuple[int, float]:
    """Run ``cmd`` with its output in ``log``; (exit status, seconds). A run past ``timeout`` is stopped."""
    start = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()  # workshop train passes SIGTERM to its ranks and waits for them
            try:
                code = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
    return code, time.perf_counter() - start


def prep_data(out: Path, timeout: float) -> str | None:
    """The sample corpus tokenized into ``out/data`` by ``workshop prep-data`` (its output in
    ``out/prep_data.log``): the data prefix for ``--data-path``, or None when prep-data failed."""
    prefix = out / "data" / "techpulse"
    code, _ = run_logged(
        cli("prep-data", "--input", str(CORPUS), "--output-prefix", str(prefix), "--append-eod",
            "--tokenizer-model", str(TOKENIZER), "--json"),
        out / "prep_data.log", timeout,
    )  # fmt: skip
    return f"{prefix}_text_document" if code == 0 else None


def environment() -> dict[str, Any]:
    import torch

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
    }
    try:
        from importlib.metadata import version

        env["megatron_core"] = version("megatron-core")
    except Exception:  # noqa: BLE001 - reported as unknown
        env["megatron_core"] = None
    if torch.cuda.is_available():
        env["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        env["device_memory_bytes"] = torch.cuda.get_device_properties(0).total_memory
    from workshop_lib.train.model import have_te

    env["transformer_engine"] = have_te()
    return env


def planned(model: dict[str, Any], variant: dict[str, Any], vocab: int, gpu: str, te: bool) -> dict[str, Any]:
    """``workshop plan``'s answer for this run on one GPU (``--transformer-impl local`` where the
    device has no Transformer Engine: the trainer then runs megatron-core's local layers)."""
    from workshop_lib.plan.api import plan_from_megatron_args

    flags = {k: v for k, v in {**model, **variant}.items() if k not in TRAIN_ONLY}
    if not te:
        flags["transformer-impl"] = "local"
    flags["vocab-size"] = vocab
    flags["global-batch-size"] = GLOBAL_BATCH
    return plan_from_megatron_args(flags, gpu=gpu, gpus_per_node=1, nodes=1)


def measure(log: Path) -> dict[str, Any]:
    from workshop_lib.monitor.parse import parse_log

    parsed = parse_log(log)
    recs = parsed.records
    steady = [r["elapsed_ms"] for r in recs[1:] if r.get("elapsed_ms")]  # the first interval warms up
    tflops = [r["tflops_per_gpu"] for r in recs[1:] if r.get("tflops_per_gpu")]
    memory = parsed.memory[0] if parsed.memory else {}
    return {
        "iterations": len(recs),
        "losses": [r.get("lm_loss") for r in recs],
        "ms_per_iteration": statistics.median(steady) if steady else None,
        "tflops_per_gpu": statistics.median(tflops) if tflops else None,
        "allocated_bytes": memory.get("allocated_bytes"),
        "max_allocated_bytes": memory.get("max_allocated_bytes"),
        "max_reserved_bytes": memory.get("max_reserved_bytes"),
    }


def train_flags(model: dict[str, Any], variant: dict[str, Any], data: str, iters: int) -> list[str]:
    return format_flags({**model, **variant}) + [
        "--global-batch-size", str(GLOBAL_BATCH), "--train-iters", str(iters), "--lr", "1e-4",
        "--min-lr", "1e-5", "--lr-warmup-iters", "2", "--data-path", data, "--split", "100,0,0",
        "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", str(TOKENIZER),
        "--log-interval", str(LOG_INTERVAL), "--eval-iters", "0", "--seed", "1234",
    ]  # fmt: skip


def resume_check(out: Path, data: str, results: dict[str, Any], timeout: float) -> None:
    """Continued pre-training of the shipped base model on this device: save at 4, resume to 8."""
    base = out / "base"
    code, _ = run_logged(cli("import-hf", "--hf-dir", str(BASE_MODEL), "--save", str(base)),
                         out / "import_hf.log", timeout)  # fmt: skip
    if code != 0:
        results["resume"] = {"error": f"import-hf exited {code}"}
        return
    model_flags = json.loads((base / "workshop_model.json").read_text())["megatron_flags"]
    common = model_flags + [
        "--seq-length", "256", "--micro-batch-size", "4", "--global-batch-size", "16", "--lr", "3e-4",
        "--min-lr", "3e-5", "--lr-warmup-iters", "2", "--lr-decay-iters", "8", "--data-path", data,
        "--split", "100,0,0", "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model",
        str(TOKENIZER), "--log-interval", "1", "--eval-iters", "0", "--seed", "1234", "--bf16",
        "--pretrained-checkpoint", str(base),
    ]  # fmt: skip
    ckpt = str(out / "ckpt")
    runs = {
        "straight": [*common, "--train-iters", "8"],
        "first_half": [
            *common,
            "--train-iters",
            "8",
            "--exit-interval",
            "4",
            "--save",
            ckpt,
            "--save-interval",
            "4",
        ],
        "resumed": [*common, "--train-iters", "8", "--load", ckpt, "--save", ckpt],
    }
    losses: dict[str, list[float | None]] = {}
    for name, flags in runs.items():
        code, _ = run_logged(
            cli("train", "--nproc-per-node", "1", "--", *flags), out / f"cpt_{name}.log", timeout
        )
        if code != 0:
            results["resume"] = {"error": f"{name} exited {code}", "losses": losses}
            return
        losses[name] = measure(out / f"cpt_{name}.log")["losses"]
    straight, resumed = losses["straight"][4:], losses["resumed"]
    diffs = [
        abs(a - b) / abs(a) for a, b in zip(straight, resumed[-len(straight) :], strict=False) if a and b
    ]
    results["resume"] = {
        "losses": losses,
        "max_relative_difference": max(diffs) if diffs else None,
        "first_loss": losses["straight"][0],
        "last_loss": losses["straight"][-1],
    }


def saved_activations(cases: list[dict[str, Any]], out: Path, timeout: float) -> dict[str, Any]:
    """One layer's saved-for-backward bytes of each case, counted by ``benchmarks.saved_activations``."""
    cmd = [sys.executable, "-m", "benchmarks.saved_activations", json.dumps(cases)]
    log = out / "saved_activations.log"
    code, _ = run_logged(cmd, log, timeout)
    lines = [ln for ln in log.read_text().splitlines() if ln.startswith("[{")]
    if code != 0 or not lines:
        return {"error": f"exit {code}; see {log.name}"}
    return {"cases": json.loads(lines[-1])}


def sdpa_gqa(repeats: int = 10) -> dict[str, Any]:
    """PyTorch SDPA with K/V repeated to every head against ``enable_gqa``: time and memory, fwd+bwd.

    TinyLlama's attention (32 query heads, 4 K/V heads, head dim 64) at sequence 2048, micro-batch
    4, bf16, causal: the trainer's ``SDPACoreAttention`` switched from the first to the second.
    """
    import torch
    import torch.nn.functional as F

    b, s, a, g, d = 4, 2048, 32, 4, 64
    dev = torch.device("cuda")
    q = torch.randn(b, a, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(b, g, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(b, g, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)

    def repeat():
        kr, vr = (t.repeat_interleave(a // g, dim=1) for t in (k, v))
        return F.scaled_dot_product_attention(q, kr, vr, is_causal=True)

    def native():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    result: dict[str, Any] = {"shape": {"b": b, "s": s, "heads": a, "groups": g, "head_dim": d}}
    outs = {}
    for name, fn in (("repeat", repeat), ("enable_gqa", native)):
        for _ in range(3):
            fn().sum().backward()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            out = fn()
            out.sum().backward()
        end.record()
        torch.cuda.synchronize()
        outs[name] = fn().detach().float()
        result[name] = {"ms_fwd_bwd": start.elapsed_time(end) / repeats,
                        "peak_extra_bytes": torch.cuda.max_memory_allocated() - base}  # fmt: skip
    result["max_abs_difference"] = float((outs["repeat"] - outs["enable_gqa"]).abs().max())
    return result


def swiglu_fusion(repeats: int = 50) -> dict[str, Any]:
    """megatron-core's fused SwiGLU (``bias_swiglu_impl``, ``torch.compile``d) against plain ops, fwd+bwd.

    The 1.25B model's MLP activation (ffn 5632) for 2,048 and 8,192 tokens, bf16: milliseconds a call
    (GPU and wall clock) and how many times dynamo compiled.
    """
    import torch
    import torch.nn.functional as F
    from megatron.core.fusions.fused_bias_swiglu import bias_swiglu_impl

    def plain(x):
        a, b = torch.chunk(x, 2, dim=-1)
        return F.silu(a) * b

    def fused(x):
        return bias_swiglu_impl(x, None)

    result: dict[str, Any] = {}
    for tokens in (2048, 8192):
        for name, fn in (("plain", plain), ("fused", fused)):
            x = torch.randn(tokens, 1, 2 * 5632, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            for _ in range(5):
                fn(x).sum().backward()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            wall = time.perf_counter()
            start.record()
            for _ in range(repeats):
                fn(x).sum().backward()
            end.record()
            torch.cuda.synchronize()
            wall = (time.perf_counter() - wall) / repeats * 1000
            result[f"{name}_{tokens}"] = {"gpu_ms": start.elapsed_time(end) / repeats, "wall_ms": wall}
    try:
        from torch._dynamo.utils import counters

        result["dynamo_counters"] = {k: dict(v) for k, v in counters.items() if v}
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        result["dynamo_counters"] = repr(exc)
    return result


def activation_slopes(runs: dict[str, Any]) -> dict[str, Any]:
    """Peak growth per micro-batch sample, measured and planned, from each family's smallest to largest run."""
    slopes = {}
    for family, names in {
        "unfused": ("mbs1", "mbs2", "mbs4"),
        "flash": ("mbs1-flash", "mbs2-flash", "mbs4-flash"),
    }.items():
        ok = [
            n
            for n in names
            if runs.get(n, {}).get("exit") == 0 and runs[n]["measured"]["max_allocated_bytes"]
        ]
        if len(ok) < 2:
            continue
        lo, hi = runs[ok[0]], runs[ok[-1]]
        samples = hi["flags"]["micro-batch-size"] - lo["flags"]["micro-batch-size"]
        slopes[family] = {
            "runs": [ok[0], ok[-1]],
            "measured_bytes": (hi["measured"]["max_allocated_bytes"] - lo["measured"]["max_allocated_bytes"]) / samples,
            "planned_bytes": (hi["plan"]["memory_per_gpu_bytes"]["activations"]
                              - lo["plan"]["memory_per_gpu_bytes"]["activations"]) / samples,
        }  # fmt: skip
    return slopes


def write_markdown(out: Path, results: dict[str, Any]) -> None:
    env = results["environment"]
    lines = [
        f"# {env['device']}: the trainer against `workshop plan`",
        "",
        f"torch {env['torch']} (CUDA {env.get('cuda')}, NCCL {env.get('nccl')}), megatron-core "
        f"{env['megatron_core']}, Transformer Engine: {'yes' if env['transformer_engine'] else 'no'}; "
        f"Python {env['python']}. Model: {results['model']}; global batch {GLOBAL_BATCH}, "
        f"{results['iterations']} iterations logged every {LOG_INTERVAL} (memory report after the first "
        f"{LOG_INTERVAL}); steady time = median of the intervals after the first.",
        "",
        "| run | plan: weights+grads+optimizer (GiB) | allocated at the report (GiB) | plan: activations (GiB) "
        "| plan: total (GiB) | peak allocated (GiB) | peak reserved (GiB) | plan: s/iter | measured s/iter "
        "| plan MFU | measured TFLOP/s (MFU) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    gib = lambda b: f"{b / 1024**3:.2f}" if b else "-"  # noqa: E731
    peak_tflops = results.get("peak_bf16_tflops")
    for name, r in results["runs"].items():
        p, m = r["plan"], r["measured"]
        mem = p["memory_per_gpu_bytes"]
        static = (mem["weights"] or 0) + (mem["gradients"] or 0) + (mem["optimizer"] or 0)
        t = m.get("tflops_per_gpu")
        mfu = f"{t:.0f} ({t / peak_tflops:.2f})" if t and peak_tflops else "-"
        ms = m.get("ms_per_iteration")
        lines.append(
            f"| {name} | {gib(static)} | {gib(m.get('allocated_bytes'))} | {gib(mem['activations'])} "
            f"| {gib(mem['total'])} | {gib(m.get('max_allocated_bytes'))} | {gib(m.get('max_reserved_bytes'))} "
            f"| {p['estimate']['seconds_per_iteration']:.3f} | {ms / 1000 if ms else float('nan'):.3f} "
            f"| {p['estimate']['mfu']:.2f} | {mfu} |"
            if r.get("exit") == 0
            else f"| {name} | {gib(static)} | exit {r.get('exit')} | {gib(mem['activations'])} | {gib(mem['total'])} "
            f"| - | - | {p['estimate']['seconds_per_iteration']:.3f} | - | {p['estimate']['mfu']:.2f} | - |"
        )
    for family, sl in results.get("activation_slope", {}).items():
        lines += ["", f"Peak growth per micro-batch sample ({family}, {sl['runs'][0]} to {sl['runs'][1]}): "
                  f"measured {gib(sl['measured_bytes'])} GiB, plan {gib(sl['planned_bytes'])} GiB."]  # fmt: skip
    if "resume" in results:
        lines += ["", f"Resume on this device: {json.dumps(results['resume'])}"]
    (out / "results.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/bench_gpu", help="folder for logs and results")
    ap.add_argument("--gpu", default="h100-80gb", help="the plan's --gpu for this device")
    ap.add_argument("--tiny", action="store_true", help="a 2-layer model (checks the script on a CPU)")
    ap.add_argument("--only", nargs="*", help="run only these variants")
    ap.add_argument(
        "--data-prefix", help="a prep-data output (..._text_document) to use instead of preparing one"
    )
    ap.add_argument("--iters", type=int, default=3 * LOG_INTERVAL)
    ap.add_argument("--timeout", type=float, default=150.0, help="seconds for each run")
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available() and not args.tiny:
        print("bench_gpu: no CUDA device here; skipped (run it on a GPU machine, or --tiny on a CPU)")
        return 0
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    model = TINY_MODEL if args.tiny else FULL_MODEL
    from workshop_lib.facts.hardware import gpu as lookup_gpu

    results: dict[str, Any] = {
        "environment": environment(),
        "model": " ".join(format_flags(model)),
        "iterations": args.iters,
        "peak_bf16_tflops": lookup_gpu(args.gpu).bf16_tflops,
        "runs": {},
    }
    data = args.data_prefix or prep_data(out, args.timeout)
    if not data:
        print(f"bench_gpu: prep-data failed; see {out / 'prep_data.log'}", file=sys.stderr)
        return 1
    vocab = json.loads((TOKENIZER / "tokenizer.json").read_text())["model"]["vocab"]
    if args.only and "saved" in args.only:
        cases = [{**c, "seq-length": 128, "hidden-size": 256, "ffn-hidden-size": 704, "num-attention-heads": 4,
                  **({"num-attention-heads": 8, "num-query-groups": 2} if "num-query-groups" in c else {})}
                 for c in SAVED_CASES] if args.tiny else SAVED_CASES  # fmt: skip
        results["saved_activations"] = saved_activations(cases, out, args.timeout)
        print(f"saved: {json.dumps(results['saved_activations'])[:2000]}", flush=True)
    if args.only and "sdpa-gqa" in args.only and torch.cuda.is_available():
        results["sdpa_gqa"] = sdpa_gqa()
        print(f"sdpa-gqa: {results['sdpa_gqa']}", flush=True)
    if args.only and "swiglu" in args.only and torch.cuda.is_available():
        results["swiglu_fusion"] = swiglu_fusion()
        print(f"swiglu: {json.dumps(results['swiglu_fusion'], default=str)[:3000]}", flush=True)
    for name, variant in VARIANTS:
        if args.only and name not in args.only:
            continue
        log = out / f"{name}.log"
        cmd = cli("train", "--nproc-per-node", "1", "--", *train_flags(model, variant, data, args.iters))
        code, secs = run_logged(cmd, log, args.timeout)
        results["runs"][name] = {
            "flags": variant,
            "exit": code,
            "seconds": secs,
            "plan": planned(
                model, variant, len(vocab), args.gpu, results["environment"]["transformer_engine"]
            ),
            "measured": measure(log),
        }
        print(f"{name}: exit {code} in {secs:.0f} s: {results['runs'][name]['measured']}", flush=True)
        (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
        write_markdown(out, results)
    results["activation_slope"] = activation_slopes(results["runs"])
    if not args.only or "resume" in args.only:
        resume_check(out, data, results, args.timeout)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    write_markdown(out, results)
    print((out / "results.md").read_text())
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
