"""Run under torchrun (CPU, gloo): load imported checkpoints into the trainer's model, save logits.

``python -m torch.distributed.run --nproc-per-node 2 tests/convert_worker.py JOBS.json``

``JOBS.json`` = ``{"tokens": "tokens.pt", "jobs": [{"load": DIR, "tp": 1, "pp": 1, "out": "x.pt"}, ...]}``.
Every job in one process group (one spawn for many assertions): the model parallel groups are
rebuilt per job, ranks beyond TP x PP are data-parallel replicas. For each job the model is built
by the trainer's own ``build_model`` from the flags in ``workshop_model.json`` (local spec, CPU),
loaded with the trainer's ``load_checkpoint`` (strict), and run forward on the tokens; the full
(TP-gathered, last-stage) logits go to ``out``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch


def _flags(load: str, tp: int, pp: int, seq: int, batch: int, ep: int = 1) -> list[str]:
    desc = json.loads((Path(load) / "workshop_model.json").read_text())
    return [
        *desc["megatron_flags"],
        "--tensor-model-parallel-size", str(tp), "--pipeline-model-parallel-size", str(pp),
        "--expert-model-parallel-size", str(ep),
        "--seq-length", str(seq), "--lr", "1e-4", "--train-iters", "1", "--mock-data",
        "--tokenizer-type", "NullTokenizer", "--transformer-impl", "local", "--load", load,
        "--micro-batch-size", str(batch), "--no-load-rng",
    ]  # fmt: skip


def main() -> None:
    from megatron.core import parallel_state as ps
    from megatron.core.pipeline_parallel import get_forward_backward_func
    from megatron.core.tensor_parallel import gather_from_tensor_model_parallel_region

    from workshop_lib.train import arguments, checkpointing, model
    from workshop_lib.train.device import detect, seed_everything, use_cpu

    spec = json.loads(Path(sys.argv[1]).read_text())
    tokens = torch.load(spec["tokens"], weights_only=True)
    device = detect(None)
    use_cpu()
    torch.distributed.init_process_group("gloo")
    world = torch.distributed.get_world_size()
    for job in spec["jobs"]:
        args = arguments.parse_args(
            _flags(job["load"], job["tp"], job["pp"], tokens.shape[1], tokens.shape[0], job.get("ep", 1))
        )
        arguments.finalize_parallel(args, world)
        ps.destroy_model_parallel()
        ps.initialize_model_parallel(
            tensor_model_parallel_size=args.tensor_model_parallel_size,
            pipeline_model_parallel_size=args.pipeline_model_parallel_size,
            expert_model_parallel_size=args.expert_model_parallel_size,
        )
        seed_everything(args.seed, cuda=False)
        desc = json.loads((Path(job["load"]) / "workshop_model.json").read_text())
        padded = model.padded_vocab_size(desc["vocab_size"], args)
        chunks, config = model.build_model(args, device, padded)
        state = checkpointing.load_checkpoint(args, chunks, None, None, cuda=False)
        assert state is not None and state.iteration == 0
        for c in chunks:
            c.eval()
        captured = {}

        def loss_func(output, captured=captured):
            full = gather_from_tensor_model_parallel_region(output)
            captured["logits"] = full.detach().clone()
            return output.sum() * 0, {"x": torch.zeros(2)}

        def forward_step(data_iterator, m):
            batch = next(data_iterator)
            pos = torch.arange(batch.shape[1]).unsqueeze(0).expand_as(batch)
            return m(batch, pos, None), loss_func

        with torch.no_grad():
            get_forward_backward_func()(
                forward_step_func=forward_step,
                data_iterator=iter([tokens] * 1),
                model=chunks,
                num_microbatches=1,
                seq_length=tokens.shape[1],
                micro_batch_size=tokens.shape[0],
                forward_only=True,
            )
        if (
            ps.is_pipeline_last_stage()
            and ps.get_tensor_model_parallel_rank() == 0
            and ps.get_data_parallel_rank() == 0
        ):
            torch.save(captured["logits"], job["out"])
        torch.distributed.barrier()
        del chunks, config
    ps.destroy_model_parallel()
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
