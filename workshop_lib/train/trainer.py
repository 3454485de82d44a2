"""The training loop: Megatron-LM's ``pretrain`` for a GPT model, from megatron-core's parts.

One process per GPU (or per CPU rank) under torchrun. The order is Megatron-LM's: flags,
process groups (``parallel_state.initialize_model_parallel``), seeds, model (+ DDP), optimizer
(``get_megatron_optimizer``) and ``OptimizerParamScheduler``, checkpoint, datasets, then the
loop of ``get_forward_backward_func()`` + ``optimizer.step()``, with iteration and validation
log lines, TensorBoard scalars, periodic checkpoints, and a checkpoint on SIGTERM.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
from datetime import timedelta
from functools import partial

import torch

from ..errors import UsageError
from . import arguments, lifeline, log


def _print_rank0(msg: str) -> None:
    if torch.distributed.get_rank() == 0:
        print(msg, flush=True)


def _is_last_rank() -> bool:
    return torch.distributed.get_rank() == torch.distributed.get_world_size() - 1


class SigtermFlag:
    """Set by SIGTERM/SIGINT; all ranks agree on it at the end of an iteration (Megatron's handler).

    The handler is ``lifeline``'s, installed by ``__main__`` before torch is imported, so a request
    that arrives during start-up is kept too (the rank used to die of it, half-way through).
    """

    def __init__(self) -> None:
        lifeline.install_stop_handler()

    @property
    def received(self) -> bool:
        return lifeline.stop_signal() is not None

    def any_rank(self, device: torch.device) -> bool:
        flag = torch.tensor([1.0 if self.received else 0.0], device=device)
        torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
        return bool(flag.item())


def _init_distributed(args: argparse.Namespace):
    from .device import detect, use_cpu

    for key, default in (
        ("RANK", "0"),
        ("WORLD_SIZE", "1"),
        ("LOCAL_RANK", "0"),
        ("MASTER_ADDR", "127.0.0.1"),
    ):
        os.environ.setdefault(key, default)
    os.environ.setdefault("MASTER_PORT", "29500")
    device = detect(args.distributed_backend)
    if not device.cuda:
        use_cpu()
    # On GPUs the process group is bound to this rank's device (``device_id``): torch then creates
    # NCCL's communicator at once, and each barrier knows its device instead of guessing it with a
    # warning on every rank ("barrier(): using the device under current context").
    torch.distributed.init_process_group(
        backend=device.backend,
        timeout=timedelta(minutes=args.distributed_timeout_minutes),
        **({"device_id": device.torch_device} if device.cuda else {}),
    )
    arguments.finalize_parallel(args, torch.distributed.get_world_size())
    from megatron.core import parallel_state as ps

    ps.initialize_model_parallel(
        tensor_model_parallel_size=args.tensor_model_parallel_size,
        pipeline_model_parallel_size=args.pipeline_model_parallel_size,
        virtual_pipeline_model_parallel_size=args.virtual_pipeline_model_parallel_size,
        context_parallel_size=args.context_parallel_size,
        expert_model_parallel_size=args.expert_model_parallel_size,
        expert_tensor_parallel_size=args.expert_tensor_parallel_size,
        distributed_timeout_minutes=args.distributed_timeout_minutes,
    )
    return device


def _optimizer(args: argparse.Namespace, model):
    from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer
    from megatron.core.optimizer_param_scheduler import OptimizerParamScheduler

    from .model import dtype_of

    config = OptimizerConfig(
        optimizer=args.optimizer,
        lr=args.lr,
        min_lr=args.min_lr,
        weight_decay=args.weight_decay,
        adam_beta1=args.adam_beta1,
        adam_beta2=args.adam_beta2,
        adam_eps=args.adam_eps,
        sgd_momentum=args.sgd_momentum,
        clip_grad=args.clip_grad,
        bf16=args.bf16,
        fp16=args.fp16,
        params_dtype=dtype_of(args),
        loss_scale=args.loss_scale,
        initial_loss_scale=args.initial_loss_scale,
        use_distributed_optimizer=args.use_distributed_optimizer,
        overlap_param_gather=args.overlap_param_gather and torch.cuda.is_available(),
        log_num_zeros_in_grad=False,
    )
    optimizer = get_megatron_optimizer(config, model)
    scheduler = OptimizerParamScheduler(optimizer, **scheduler_kwargs(args))
    return optimizer, scheduler


def scheduler_kwargs(args: argparse.Namespace) -> dict:
    """``OptimizerParamScheduler``'s arguments from the flags (the launcher checks a resume with them)."""
    gbs = args.global_batch_size
    return dict(
        init_lr=args.lr_warmup_init,
        max_lr=args.lr,
        min_lr=args.min_lr,
        lr_warmup_steps=args.lr_warmup_iters * gbs,
        lr_decay_steps=args.lr_decay_iters * gbs,
        lr_decay_style=args.lr_decay_style,
        start_wd=args.start_weight_decay,
        end_wd=args.end_weight_decay,
        wd_incr_steps=args.train_iters * gbs,
        wd_incr_style=args.weight_decay_incr_style,
        use_checkpoint_opt_param_scheduler=args.use_checkpoint_opt_param_scheduler,
        override_opt_param_scheduler=args.override_opt_param_scheduler,
        wsd_decay_steps=(args.lr_wsd_decay_iters * gbs) if args.lr_wsd_decay_iters else None,
        lr_wsd_decay_style=args.lr_wsd_decay_style,
    )


_SCHED_MISMATCH = re.compile(r"class input value (.+?) and checkpoint\s*value (.+?) for (.+?) do not match")


def scheduler_mismatch(exc: AssertionError, load: str) -> UsageError | None:
    """megatron-core's "OptimizerParamScheduler ... do not match" assertion as one usage line.

    A resume whose flags give another schedule than the checkpoint's (a different ``--train-iters``
    moves the weight-decay horizon) has exactly two ways out, and the line names both.
    """
    m = _SCHED_MISMATCH.search(str(exc))
    if not m:
        return None
    return UsageError(
        f"--load {load}: these flags give another learning-rate/weight-decay schedule than the checkpoint's "
        f"({m.group(3)}: flags {m.group(1)}, checkpoint {m.group(2)}; e.g. a different --train-iters, --lr "
        "or --lr-decay-iters); pass --override-opt_param-scheduler to follow the flags, or "
        "--use-checkpoint-opt_param-scheduler to keep the checkpoint's schedule"
    )


def _flops_per_iteration(args: argparse.Namespace, vocab_size: int) -> float:
    """Megatron-LM's ``num_floating_point_operations`` for one global batch (the plan room's formula,
    on the plan room's reading of the same flags)."""
    from ..plan.config import model_from_args, normalize_args
    from ..plan.flops import megatron_flops

    m, _missing = model_from_args(normalize_args({**vars(args), "vocab_size": vocab_size}))
    return megatron_flops(m.with_(vocab_pad_tp=args.tensor_model_parallel_size), args.global_batch_size)


def _loss_func(loss_mask: torch.Tensor, output_tensor: torch.Tensor):
    """Per-token cross-entropy summed over the unmasked tokens (Megatron's pretrain_gpt loss)."""
    losses = output_tensor.float().view(-1)
    mask = loss_mask.view(-1).float()
    loss = torch.sum(losses * mask)
    num_tokens = mask.sum().clone().detach().to(torch.int)
    reporting = torch.cat([loss.clone().detach().view(1), num_tokens.view(1).float()])
    return loss, num_tokens, {"lm loss": reporting}


def _forward_step(device: torch.device, data_iterator, model):
    batch = next(data_iterator)
    tokens = batch["tokens"].to(device, non_blocking=True)
    labels = batch["labels"].to(device, non_blocking=True)
    loss_mask = batch["loss_mask"].to(device, non_blocking=True)
    position_ids = batch["position_ids"].to(device, non_blocking=True)
    output = model(tokens, position_ids, None, labels=labels)
    return output, partial(_loss_func, loss_mask)


def _reduce_losses(losses_reduced: list[dict], device: torch.device) -> dict[str, float]:
    """Sum numerators and token counts over micro-batches and data-parallel ranks (last stage)."""
    from megatron.core import parallel_state as ps

    out = {}
    if not losses_reduced:
        return out
    for key in losses_reduced[0]:
        val = torch.vstack([x[key].view(-1) for x in losses_reduced]).sum(dim=0).to(device)
        torch.distributed.all_reduce(val, group=ps.get_data_parallel_group(with_context_parallel=True))
        out[key] = (val[0] / val[1].clamp(min=1)).item()
    return out


class Trainer:
    """State and steps of one training run."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.device = _init_distributed(args)
        from megatron.core import parallel_state as ps
        from megatron.core.pipeline_parallel import get_forward_backward_func

        from . import checkpointing, data, model
        from .device import seed_everything
        from .tokenizer import build_tokenizer

        self.ps = ps
        self.checkpointing = checkpointing
        t0 = time.time()
        seed_everything(args.seed, cuda=self.device.cuda)
        start = checkpointing.resolve_start(args)
        adopted = False
        if start and start.vocab_size and args.vocab_size is None and args.tokenizer_type != "NullTokenizer":
            args.vocab_size, adopted = start.vocab_size, True  # the model's rows may exceed the tokenizer's
        if start:
            checkpointing.check_tokenizer(args, start)
        try:
            self.tokenizer = build_tokenizer(args)
        except UsageError as exc:
            if not adopted:
                raise
            raise UsageError(
                f"the tokenizer does not fit the model in {start.root} ({start.vocab_size} tokens): {exc}; "
                f"use the model's own tokenizer ({start.root / 'tokenizer'})"
            ) from None
        args.padded_vocab_size = model.padded_vocab_size(self.tokenizer.vocab_size, args)
        if start:
            checkpointing.check_model_flags(
                args,
                start,
                # NullTokenizer counts its EOD past --vocab-size (Megatron's N + 1); the model has N
                args.vocab_size if args.tokenizer_type == "NullTokenizer" else self.tokenizer.vocab_size,
            )
        if not args.mock_data:
            summary = data.check_split_plan(args)
        _print_rank0(
            f"> world size {args.world_size} ({self.device.name}, {self.device.backend}): tensor parallel "
            f"{args.tensor_model_parallel_size}, pipeline parallel {args.pipeline_model_parallel_size}, "
            f"context parallel {args.context_parallel_size}, data parallel {args.data_parallel_size}"
        )
        _print_rank0(
            f"> building {self.tokenizer.name} tokenizer: padded vocab (size: {self.tokenizer.vocab_size}) "
            f"with {args.padded_vocab_size - self.tokenizer.vocab_size} dummy tokens "
            f"(new size: {args.padded_vocab_size})"
        )
        self.model, self.config = model.build_model(args, self.device, args.padded_vocab_size)
        if ps.get_data_parallel_rank() == 0:  # one line per (TP, PP) rank, as Megatron-LM prints it
            print(
                f" > number of parameters on (tensor, pipeline) model parallel rank "
                f"({ps.get_tensor_model_parallel_rank()}, {ps.get_pipeline_model_parallel_rank()}): "
                f"{model.count_parameters(self.model)}",
                flush=True,
            )
        self.optimizer, self.scheduler = _optimizer(args, self.model)
        self.state = checkpointing.TrainState()
        if start and start.kind == "pretrained":
            checkpointing.load_pretrained(
                args, self.model, self.optimizer, self.scheduler, start, self.device.cuda
            )
            _print_rank0(
                f"  loaded pretrained weights from {start.ckpt} (weights only: iteration 0, "
                "fresh optimizer and learning-rate schedule)"
            )
        elif args.load:
            from .trust import check_checkpoint_trusted

            check_checkpoint_trusted(args.load)  # loading unpickles: only files no one else could write
            if start:
                checkpointing.check_shapes(self.model, start)
            try:
                loaded = checkpointing.load_checkpoint(
                    args, self.model, self.optimizer, self.scheduler, self.device.cuda
                )
            except AssertionError as exc:  # megatron-core's scheduler check: one line, not a traceback
                raise scheduler_mismatch(exc, args.load) or exc from None
            if loaded is None:
                _print_rank0(
                    f"WARNING: could not find the metadata file {args.load}/{checkpointing.TRACKER}; "
                    "will not load any checkpoints and will start from random"
                )
            else:
                self.state = loaded
                _print_rank0(
                    f"  successfully loaded checkpoint from {args.load} at iteration {self.state.iteration}"
                )
        self.last_saved = self.state.iteration if args.load else -1
        train_ds, valid_ds, _test_ds = data.build_datasets(args, self.tokenizer)
        if not args.mock_data:
            for prefix, info in summary.items():
                _print_rank0(f"> dataset {prefix}: {info['documents']} documents, {info['tokens']} tokens")
        dp_rank = ps.get_data_parallel_rank()

        def batches(dataset, consumed: int, cyclic: bool):
            """One iterator per model chunk (virtual pipeline stages each read every micro-batch)."""
            its = [
                data.PretrainingBatches(dataset, consumed, args, dp_rank, cyclic=cyclic)
                for _ in range(len(self.model))
            ]
            return its if len(its) > 1 else its[0]

        self.train_iter = batches(train_ds, self.state.consumed_train_samples, cyclic=False)
        self.valid_iter = (
            batches(valid_ds, self.state.consumed_valid_samples, cyclic=True)
            if valid_ds is not None and args.eval_iters > 0
            else None
        )
        self.forward_backward = get_forward_backward_func()
        self.flops_per_iteration = _flops_per_iteration(args, self.tokenizer.vocab_size)
        self._configure_hooks()
        self.scalars = log.Scalars(args, enabled=_is_last_rank())
        _print_rank0(f"time to initialize (seconds): {time.time() - t0:.3f}")

    def _configure_hooks(self) -> None:
        from megatron.core.distributed import finalize_model_grads

        config = self.config
        config.grad_scale_func = self.optimizer.scale_loss
        config.finalize_model_grads_func = finalize_model_grads
        config.timers = None
        if self.args.overlap_grad_reduce and self.device.cuda:
            no_sync = [m.no_sync for m in self.model]
            config.no_sync_func = no_sync[0] if len(no_sync) == 1 else no_sync
        if self.args.overlap_param_gather and self.device.cuda:
            sync = [lambda x, i=i: self.optimizer.finish_param_sync(i, x) for i in range(len(self.model))]
            config.param_sync_func = sync[0] if len(sync) == 1 else sync

    def train_step(self):
        args = self.args
        for m in self.model:
            m.zero_grad_buffer()
        self.optimizer.zero_grad()
        losses = self.forward_backward(
            forward_step_func=partial(_forward_step, self.device.torch_device),
            data_iterator=self.train_iter,
            model=self.model,
            num_microbatches=args.num_microbatches,
            seq_length=args.seq_length,
            micro_batch_size=args.micro_batch_size,
            decoder_seq_length=args.seq_length,
            forward_only=False,
        )
        update_ok, grad_norm, _zeros = self.optimizer.step()
        if update_ok:
            self.scheduler.step(increment=args.global_batch_size)
        loss = (
            _reduce_losses(losses, self.device.torch_device)
            if self.ps.is_pipeline_last_stage(ignore_virtual=True)
            else {}
        )
        return loss, not update_ok, grad_norm

    def evaluate(self) -> dict[str, float]:
        args = self.args
        for m in self.model:
            m.eval()
        totals: dict[str, torch.Tensor] = {}
        with torch.no_grad():
            for _ in range(args.eval_iters):
                losses = self.forward_backward(
                    forward_step_func=partial(_forward_step, self.device.torch_device),
                    data_iterator=self.valid_iter,
                    model=self.model,
                    num_microbatches=args.num_microbatches,
                    seq_length=args.seq_length,
                    micro_batch_size=args.micro_batch_size,
                    decoder_seq_length=args.seq_length,
                    forward_only=True,
                )
                for d in losses:
                    for key, v in d.items():
                        totals[key] = totals.get(key, 0) + v.view(-1).float()
                self.state.consumed_valid_samples += args.global_batch_size
        for m in self.model:
            m.train()
        out = {}
        if self.ps.is_pipeline_last_stage(ignore_virtual=True):
            for key, val in totals.items():
                val = val.to(self.device.torch_device)
                torch.distributed.all_reduce(
                    val, group=self.ps.get_data_parallel_group(with_context_parallel=True)
                )
                out[key] = (val[0] / val[1].clamp(min=1)).item()
        return out

    def save(self, reason: str = "") -> None:
        if not self.args.save or self.last_saved == self.state.iteration:
            return
        t0 = time.time()
        path = self.checkpointing.save_checkpoint(
            self.args, self.model, self.optimizer, self.scheduler, self.state, self.device.cuda
        )
        self.last_saved = self.state.iteration
        _print_rank0(
            f"  successfully saved checkpoint from iteration {self.state.iteration:7d} to {path.parent} "
            f"[ t {time.time() - t0:.2f}s ]{reason}"
        )

    def _report_memory(self, iteration: int) -> None:
        """Megatron-LM's one memory report, after the first logged interval, from data-parallel rank 0.

        Its peak is the steady state's only from the second iteration on: Adam's moments are created
        by the first optimizer step, after that iteration's backward pass, so with ``--log-interval 1``
        the peak misses 8 bytes a parameter (9.3 GiB for 1.25B on the H100,
        benchmarks/results/gpu_h100.md). Hold a later interval's report against ``workshop plan``.
        """
        from megatron.core import parallel_state as ps

        if ps.get_data_parallel_rank() == 0:
            line = log.memory_report_line(torch.distributed.get_rank(), iteration, log.cuda_memory_stats())
            print(line, flush=True)

    def run(self, stop: SigtermFlag) -> int:
        args, state = self.args, self.state
        interval_loss: dict[str, float] = {}
        interval_iters = skipped = nan_iters = 0
        memory_reported = False  # Megatron-LM reports memory once, after the first logged interval
        t_interval = time.time()
        for m in self.model:
            m.train()
        _print_rank0(f"[before the start of training step] iteration {state.iteration}/{args.train_iters}")
        if stop.any_rank(self.device.torch_device):  # asked to stop during start-up: nothing new to save
            _print_rank0(
                f"exiting program after receiving SIGTERM before training (iteration {state.iteration})"
            )
            return 0
        while state.iteration < args.train_iters:
            loss, was_skipped, grad_norm = self.train_step()
            state.iteration += 1
            state.consumed_train_samples += args.global_batch_size
            state.floating_point_operations_so_far += self.flops_per_iteration
            if was_skipped:
                state.skipped_iterations += 1
                skipped += 1
            else:
                interval_iters += 1
                for k, v in loss.items():
                    if math.isnan(v) or math.isinf(v):
                        nan_iters += 1
                    else:
                        interval_loss[k] = interval_loss.get(k, 0.0) + v
            if state.iteration % args.log_interval == 0:
                elapsed = (time.time() - t_interval) / args.log_interval
                lr = self.optimizer.param_groups[0]["lr"]
                avg = {k: v / max(1, interval_iters) for k, v in interval_loss.items()}
                if _is_last_rank():
                    loss_scale = float(self.optimizer.get_loss_scale().item())
                    tflops = self.flops_per_iteration / (elapsed * 1e12 * args.world_size)
                    print(
                        log.iteration_line(
                            iteration=state.iteration,
                            train_iters=args.train_iters,
                            consumed_samples=state.consumed_train_samples,
                            elapsed_ms=elapsed * 1000.0,
                            tflops_per_gpu=tflops,
                            learning_rate=lr,
                            global_batch_size=args.global_batch_size,
                            losses=avg,
                            loss_scale=loss_scale,
                            grad_norm=grad_norm,
                            skipped_iterations=skipped,
                            nan_iterations=nan_iters,
                        ),
                        flush=True,
                    )
                    self.scalars.train(
                        state.iteration,
                        state.consumed_train_samples,
                        {
                            "learning-rate": lr,
                            "batch-size": args.global_batch_size,
                            **avg,
                            "loss-scale": loss_scale,
                            "grad-norm": grad_norm,
                            "iteration-time": elapsed if args.log_timers_to_tensorboard else None,
                            "throughput": tflops if args.log_timers_to_tensorboard else None,
                        },
                    )
                if self.device.cuda and not memory_reported:
                    self._report_memory(state.iteration)
                    memory_reported = True
                interval_loss, interval_iters, skipped, nan_iters = {}, 0, 0, 0
                t_interval = time.time()
            if not args.no_check_for_nan_in_loss_and_grad and self._diverged(loss, grad_norm, was_skipped):
                return 1
            if (
                self.valid_iter is not None
                and args.eval_interval
                and state.iteration % args.eval_interval == 0
            ):
                losses = self.evaluate()
                if _is_last_rank():
                    for line in log.validation_lines(state.iteration, losses):
                        print(line, flush=True)
                    self.scalars.validation(state.iteration, state.consumed_train_samples, losses)
                t_interval = time.time()
            if args.save and args.save_interval and state.iteration % args.save_interval == 0:
                self.save()
                t_interval = time.time()
            if stop.any_rank(self.device.torch_device):
                _print_rank0(f"exiting program after receiving SIGTERM at iteration {state.iteration}")
                self.save(" (on SIGTERM)")
                return 0
            if args.exit_interval and state.iteration % args.exit_interval == 0:
                _print_rank0(f"exiting program at iteration {state.iteration} (--exit-interval)")
                self.save()
                return 0
        self.save()
        _print_rank0(f"[after training is done] iteration {state.iteration}/{args.train_iters}")
        return 0

    def _diverged(self, loss: dict[str, float], grad_norm: float | None, skipped: bool) -> bool:
        """Whether any rank's loss of this iteration is NaN or Inf, or an update it applied had a
        NaN/Inf gradient norm (one all-reduce, every rank). A skipped fp16 step's Inf gradients are
        the loss scale's business, not a divergence.

        Megatron-LM stops a run at its first NaN loss by default (``--no-check-for-nan-in-loss-and-grad``
        turns that off): its weights are NaN from then on, and every later iteration, and every
        checkpoint saved, only costs GPU hours. All ranks agree before any of them saves, so the
        last good checkpoint stays the newest; the last rank says so in one line (exit 1).
        """
        bad = {k: v for k, v in loss.items() if math.isnan(v) or math.isinf(v)}
        if grad_norm is not None and not skipped and (math.isnan(grad_norm) or math.isinf(grad_norm)):
            bad["grad norm"] = grad_norm
        flag = torch.tensor([1.0 if bad else 0.0], device=self.device.torch_device)
        torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
        if not flag.item():
            return False
        if bad and _is_last_rank():
            losses = ", ".join(f"{k} is {v}" for k, v in bad.items())
            print(
                f"[rank {torch.distributed.get_rank()}] workshop train: error: the run diverged at iteration "
                f"{self.state.iteration} ({losses}); nothing of this iteration was saved. Resume from the last "
                "checkpoint with a lower --lr or longer --lr-warmup-iters (--bf16 rather than --fp16, "
                "--clip-grad 1.0), or pass --no-check-for-nan-in-loss-and-grad to train on regardless",
                file=sys.stderr,
                flush=True,
            )
        return True

    def close(self) -> None:
        self.scalars.close()
        self.ps.destroy_model_parallel()
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    """``python -m workshop_lib.train FLAGS``: exit 0 when done, 2 for bad flags or data, 1 otherwise."""
    argv = sys.argv[1:] if argv is None else argv
    stop = SigtermFlag()
    rank = os.environ.get("RANK", "0")
    try:
        args = arguments.parse_args(argv)
        trainer = Trainer(args)
        try:
            return trainer.run(stop)
        finally:
            trainer.close()
    except UsageError as exc:
        print(f"[rank {rank}] workshop train: error: {exc}", file=sys.stderr, flush=True)
        return 2
