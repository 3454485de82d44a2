"""What continued pre-training of the workshop's base model learns and forgets, by learning rate and replay.

``.venv/bin/python -m benchmarks.bench_cpt`` prepares a run directory as notebooks 01 and 03 do (the
domain corpus, the general corpus, the held-out sets, the imported base model), then for each
(learning rate, replay share) trains the local run's 30 iterations (2 processes, TP=2, 8 x 128 tokens)
from the base model and scores base and result on the held-out domain and general text with
``workshop evaluate``. Quality, not speed: the table is the evidence behind the workshop's defaults
(``launch.backends.local.CPT_LR`` and notebook 01's ``replay_weight``). Writes
``benchmarks/results/cpt.md``. About a minute per configuration on 2 idle cores.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "cpt.md"
CONFIGS = [(1e-3, 0.2), (1e-3, 0.4), (5e-4, 0.2), (5e-4, 0.4), (3e-4, 0.3)]


def main() -> int:
    from workshop_lib.convert import api as convert_api
    from workshop_lib.data import api as data_api
    from workshop_lib.launch.backends.local import TINY, base_model_args, local_args
    from workshop_lib.launch.jobspec import flag_tokens
    from workshop_lib.paths import RunDir
    from workshop_lib.train.evaluate import evaluate
    from workshop_lib.train.launcher import local_env, torchrun_command

    work = Path(tempfile.mkdtemp(prefix="bench-cpt-"))
    run = RunDir(work / "run")
    data_api.prepare_dataset(run.root)
    data_api.prepare_replay_and_heldout(run.root, replay_weight=0.2)
    convert_api.import_base_model(run.root)
    from workshop_lib.data.dataset_info import read_dataset_info

    info = read_dataset_info(run)
    held = [info["heldout"]["domain"], info["heldout"]["general"]]
    seq = int(TINY["seq-length"])
    base = [r["loss"] for r in evaluate(run.base, held, seq_length=seq)["results"]]
    rows = []
    for lr, replay in CONFIGS:
        out = work / f"lr{lr}-replay{replay}"
        args = local_args({"tensor-model-parallel-size": 2}, info, run, 30, base_model_args(run))
        args.update(
            {
                "lr": lr,
                "min-lr": lr / 10,
                "save": str(out),
                "data-path": f"{1 - replay:g} {info['data_path']} {replay:g} {info['replay']['data_path']}",
            }
        )
        proc = subprocess.run(
            torchrun_command(2, flag_tokens(args)),
            env=local_env(os.environ, nproc_per_node=2),
            cwd=work,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            return 1
        after = [r["loss"] for r in evaluate(out, held, seq_length=seq)["results"]]
        rows.append((lr, replay, after))
        print(
            f"lr {lr:g} replay {replay:g}: domain {base[0]:.3f} -> {after[0]:.3f}, general {base[1]:.3f} -> {after[1]:.3f}"
        )
    lines = [
        "# Continued pre-training of the workshop base model: learning rate and replay",
        "",
        f"`python -m benchmarks.bench_cpt`, {datetime.now(timezone.utc):%Y-%m-%d}, {platform.machine()}, "
        f"{os.cpu_count()} cores. Base model `data/base_model` (trained on general text only); 30 iterations "
        f"x 8 x {seq} tokens from it, 2 processes, TP=2, cosine decay to lr/10; held-out loss in nats per token "
        f"(`workshop evaluate`, every token once, seq {seq}).",
        "",
        f"| lr | replay | held-out domain (base {base[0]:.3f}) | held-out general (base {base[1]:.3f}) |",
        "|---|---|---|---|",
    ]
    for lr, replay, after in rows:
        lines.append(
            f"| {lr:g} | {replay:.0%} | {after[0]:.3f} ({after[0] - base[0]:+.3f}) | "
            f"{after[1]:.3f} ({after[1] - base[1]:+.3f}) |"
        )
    lines += [
        "",
        "More replay costs a little domain progress and keeps more of the general loss; a lower learning rate",
        "forgets less and learns less. The workshop runs lr 5e-4 with 40 % replay.",
    ]
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
