"""Building the GPT model from megatron-core's parts.

``transformer_config(args, device)`` maps Megatron-LM flags onto megatron-core's
``TransformerConfig``; ``stage_spec`` picks the Transformer Engine spec where TE and CUDA are
present and the local spec otherwise (with :class:`SDPACoreAttention` on the CPU, and on GPUs
unless ``--attention-backend unfused`` asks for megatron-core's own);
``build_model`` returns the model chunks (one per virtual pipeline stage) wrapped in megatron-core's
``DistributedDataParallel``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import replace

import torch

from ..errors import UsageError
from .device import Device


def have_te() -> bool:
    try:
        import transformer_engine  # noqa: F401
        from megatron.core.extensions import transformer_engine as te_ext  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "no TE"
        return False
    return True


# Transformer Engine picks its attention kernel by three opt-out switches in the environment, and
# megatron-core's LanguageModule sets them for the chosen backend (flash, fused, unfused, local, auto:
# 1 = allowed). It asserts that a value already exported agrees, so a stale `export NVTE_FUSED_ATTN=0`
# from another recipe (or the image) stops every rank inside the model's constructor with a bare
# AssertionError; the trainer says it first, as a flag error.
NVTE_ATTENTION_SWITCHES: tuple[str, ...] = ("NVTE_FLASH_ATTN", "NVTE_FUSED_ATTN", "NVTE_UNFUSED_ATTN")
NVTE_SWITCHES_FOR_BACKEND: dict[str, tuple[int, int, int]] = {
    "flash": (1, 0, 0), "fused": (0, 1, 0), "unfused": (0, 0, 1), "local": (0, 0, 0), "auto": (1, 1, 1),
}  # fmt: skip


def check_attention_environment(backend: str, requested: str, env: Mapping[str, str] = os.environ) -> None:
    """Refuse NVTE_*_ATTN values that contradict ``backend`` (what megatron-core would assert).

    ``requested`` is --attention-backend; without Transformer Engine the trainer uses ``local``.
    """
    wanted = NVTE_SWITCHES_FOR_BACKEND[backend]
    clashes = [
        f"{name}={env[name][:40]!r}"
        for name, value in zip(NVTE_ATTENTION_SWITCHES, wanted, strict=True)
        if name in env and env[name] != str(value)
    ]
    if clashes:
        where = "" if backend == requested else " (the one used without Transformer Engine)"
        raise UsageError(
            f"{', '.join(clashes)} in the environment contradicts attention backend {backend}{where}; "
            f"unset {', '.join(NVTE_ATTENTION_SWITCHES)} and choose with --attention-backend "
            f"{'|'.join(NVTE_SWITCHES_FOR_BACKEND)}"
        )


def dtype_of(args: argparse.Namespace) -> torch.dtype:
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.params_dtype]


def transformer_config(args: argparse.Namespace, device: Device):
    """megatron-core's TransformerConfig for these flags."""
    import torch.nn.functional as F
    from megatron.core.transformer import TransformerConfig
    from megatron.core.transformer.enums import AttnBackend

    use_te = device.cuda and args.transformer_impl == "transformer_engine" and have_te()
    if args.fp8_format and not use_te:
        raise UsageError("--fp8-format needs Transformer Engine on GPUs (Hopper or newer); drop it here")
    if args.context_parallel_size > 1 and not use_te:
        raise UsageError("--context-parallel-size > 1 needs Transformer Engine attention on GPUs")
    if args.num_experts and args.moe_token_dispatcher_type == "alltoall" and not device.cuda:
        raise UsageError(
            "--moe-token-dispatcher-type alltoall needs CUDA streams; on CPU use --moe-token-dispatcher-type allgather"
        )
    if args.moe_grouped_gemm and not use_te:
        raise UsageError("--moe-grouped-gemm needs Transformer Engine on GPUs; drop it here")
    dtype = dtype_of(args)
    backend = AttnBackend[args.attention_backend] if use_te else AttnBackend.local
    check_attention_environment(backend.name, args.attention_backend)
    return TransformerConfig(
        num_layers=args.num_layers,
        hidden_size=args.hidden_size,
        ffn_hidden_size=args.ffn_hidden_size,
        num_attention_heads=args.num_attention_heads,
        num_query_groups=args.num_query_groups,
        kv_channels=args.kv_channels,
        hidden_dropout=args.hidden_dropout,
        attention_dropout=args.attention_dropout,
        normalization=args.normalization,
        layernorm_epsilon=args.norm_epsilon,
        add_bias_linear=not args.disable_bias_linear,
        add_qkv_bias=getattr(args, "add_qkv_bias", False),
        gated_linear_unit=args.swiglu,
        activation_func=F.silu if args.swiglu else F.gelu,
        bias_activation_fusion=activation_fusion(args, device),
        masked_softmax_fusion=use_te,
        bias_dropout_fusion=use_te,
        apply_rope_fusion=use_te and args.position_embedding_type == "rope",
        persist_layer_norm=use_te,
        gradient_accumulation_fusion=use_te,  # TE linears accumulate wgrad straight into DDP's main_grad
        cross_entropy_loss_fusion=False,
        init_method_std=args.init_method_std,
        qk_layernorm=args.qk_layernorm,
        apply_query_key_layer_scaling=args.apply_query_key_layer_scaling,
        attention_softmax_in_fp32=True,
        attention_backend=backend,
        tensor_model_parallel_size=args.tensor_model_parallel_size,
        pipeline_model_parallel_size=args.pipeline_model_parallel_size,
        virtual_pipeline_model_parallel_size=args.virtual_pipeline_model_parallel_size,
        context_parallel_size=args.context_parallel_size,
        expert_model_parallel_size=args.expert_model_parallel_size,
        expert_tensor_parallel_size=args.expert_tensor_parallel_size,
        sequence_parallel=args.sequence_parallel,
        num_moe_experts=args.num_experts,
        moe_router_topk=args.moe_router_topk,
        moe_ffn_hidden_size=args.moe_ffn_hidden_size if args.num_experts else None,
        moe_router_load_balancing_type=args.moe_router_load_balancing_type,
        moe_aux_loss_coeff=args.moe_aux_loss_coeff,
        moe_token_dispatcher_type=args.moe_token_dispatcher_type,
        moe_grouped_gemm=args.moe_grouped_gemm,
        moe_layer_freq=args.moe_layer_freq,
        moe_shared_expert_intermediate_size=args.moe_shared_expert_intermediate_size,
        bf16=args.bf16,
        fp16=args.fp16,
        params_dtype=dtype,
        pipeline_dtype=dtype,
        autocast_dtype=dtype,
        use_cpu_initialization=not device.cuda,
        recompute_granularity=args.recompute_granularity,
        recompute_method=args.recompute_method,
        recompute_num_layers=args.recompute_num_layers,
        fp8=args.fp8_format,
        fp8_amax_history_len=args.fp8_amax_history_len,
        fp8_amax_compute_algo=args.fp8_amax_compute_algo,
        deallocate_pipeline_outputs=True,
        variable_seq_lengths=False,
    ), use_te


def activation_fusion(args: argparse.Namespace, device: Device) -> bool:
    """Whether the MLP's activation runs as megatron-core's fused kernel, as Megatron-LM decides it.

    Megatron-LM fuses by default (``--bias-swiglu-fusion``/``--bias-gelu-fusion``, with or without
    Transformer Engine): the fused SwiGLU saves only its input for backward, where the plain
    ``silu(x1) * x2`` keeps 4 bytes x ffn more a token and layer. On an H100 that was 4.1 GiB at
    micro-batch 4 for a 1.25B model, and with it the trainer's activations are what ``workshop plan``
    counts (benchmarks/results/gpu_h100.md). The GELU kernel needs a bias. Both are
    ``torch.compile``d, so the CPU keeps the plain ops: compiling them in every rank would cost a
    local run more start-up time than it saves.
    """
    if not device.cuda:
        return False
    if args.swiglu:
        return not args.no_bias_swiglu_fusion
    return not args.disable_bias_linear and not args.no_bias_gelu_fusion


# --attention-backend values that mean PyTorch's scaled_dot_product_attention on GPUs without TE.
SDPA_BACKENDS = ("flash", "auto")


def stage_spec(args: argparse.Namespace, config, use_te: bool, vp_stage: int | None):
    """The layer spec(s) of this pipeline stage, as megatron-core's ``pretrain_gpt`` picks them.

    Transformer Engine's spec with TE + CUDA, megatron-core's local spec otherwise; MoE models
    use ``get_gpt_decoder_block_spec`` (dense and expert layers by ``--moe-layer-freq``). Without
    CUDA every layer gets :class:`SDPACoreAttention` and :class:`SequenceParallelNorm`, and the
    block's final norm too. On GPUs without TE, ``--attention-backend flash`` or ``auto`` (the
    default) puts :class:`SDPACoreAttention` in too: PyTorch's flash kernel keeps no ``s x s`` score
    matrix, as ``workshop plan`` assumes for both. ``unfused``/``local`` keep megatron-core's local
    attention, which does keep it: on an H100 (benchmarks/results/gpu_h100.md) that cost 14 GiB a
    sample at sequence 2048 against 4.6 GiB, and ran at 0.44x the speed (both with plain SwiGLU).
    """
    from megatron.core.models.gpt.gpt_layer_specs import (
        get_gpt_decoder_block_spec,
        get_gpt_layer_local_spec,
        get_gpt_layer_with_transformer_engine_spec,
    )
    from megatron.core.transformer.transformer_block import (
        TransformerBlockSubmodules,
        get_num_layers_to_build,
    )

    from .attention import SDPACoreAttention, SequenceParallelNorm

    on_gpu = torch.cuda.is_available()
    sdpa_on_gpu = on_gpu and args.attention_backend in SDPA_BACKENDS
    if args.num_experts:
        block = get_gpt_decoder_block_spec(
            config, use_transformer_engine=use_te, normalization=args.normalization, vp_stage=vp_stage
        )
        if use_te:
            return block
    elif use_te:
        return get_gpt_layer_with_transformer_engine_spec(
            qk_layernorm=args.qk_layernorm, moe_grouped_gemm=args.moe_grouped_gemm
        )
    else:
        layer = get_gpt_layer_local_spec(qk_layernorm=args.qk_layernorm, normalization=args.normalization)
        if on_gpu:
            return _swap_attention(layer, core_attention=SDPACoreAttention) if sdpa_on_gpu else layer
        n = get_num_layers_to_build(config, vp_stage=vp_stage)
        block = TransformerBlockSubmodules(layer_specs=[layer] * n, layer_norm=None)
    specs = {id(s): s for s in block.layer_specs}.values()  # MoE blocks share a spec between layers
    if on_gpu:
        if sdpa_on_gpu:
            for spec in specs:
                _swap_attention(spec, core_attention=SDPACoreAttention)
        return block
    from megatron.core.transformer.identity_op import IdentityOp

    for spec in specs:
        swap = {"core_attention": SDPACoreAttention}
        for norm in ("q_layernorm", "k_layernorm"):  # --qk-layernorm (their grads are summed over TP)
            if getattr(spec.submodules.self_attention.submodules, norm, None) not in (None, IdentityOp):
                swap[norm] = SequenceParallelNorm
        _swap_attention(spec, **swap)
        spec.submodules = replace(
            spec.submodules, input_layernorm=SequenceParallelNorm, pre_mlp_layernorm=SequenceParallelNorm
        )
    return TransformerBlockSubmodules(layer_specs=block.layer_specs, layer_norm=SequenceParallelNorm)


def _swap_attention(layer_spec, **submodules):
    """``layer_spec`` (changed in place, and returned) with these self-attention submodules swapped."""
    attention = layer_spec.submodules.self_attention
    attention.submodules = replace(attention.submodules, **submodules)
    return layer_spec


def padded_vocab_size(vocab_size: int, args: argparse.Namespace) -> int:
    """Megatron-LM's ``_vocab_size_with_padding``: a multiple of divisible-by x TP."""
    multiple = args.make_vocab_size_divisible_by * args.tensor_model_parallel_size
    return ((vocab_size + multiple - 1) // multiple) * multiple


def build_model(args: argparse.Namespace, device: Device, vocab_size: int):
    """The GPT model chunks of this rank, each wrapped in megatron-core's DDP."""
    from megatron.core import parallel_state as ps
    from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
    from megatron.core.models.gpt import GPTModel

    config, use_te = transformer_config(args, device)
    vp = args.virtual_pipeline_model_parallel_size
    chunks = []
    for vp_stage in range(vp or 1):
        stage = vp_stage if vp else None
        model = GPTModel(
            config=config,
            transformer_layer_spec=stage_spec(args, config, use_te, stage),
            vocab_size=vocab_size,
            max_sequence_length=args.max_position_embeddings,
            pre_process=ps.is_pipeline_first_stage(ignore_virtual=False, vp_stage=stage),
            post_process=ps.is_pipeline_last_stage(ignore_virtual=False, vp_stage=stage),
            parallel_output=True,
            share_embeddings_and_output_weights=not args.untie_embeddings_and_output_weights,
            position_embedding_type=args.position_embedding_type,
            rotary_percent=args.rotary_percent,
            rotary_base=args.rotary_base,
            rope_scaling=args.use_rope_scaling,
            rope_scaling_factor=args.rope_scaling_factor,
            seq_len_interpolation_factor=getattr(args, "rotary_seq_len_interpolation_factor", None),
            vp_stage=stage,
        )
        model.model_type = _encoder_or_decoder()
        if device.cuda:
            model.cuda(torch.cuda.current_device())
        if args.bf16 or args.fp16:
            from megatron.core.transformer.module import Float16Module

            model = Float16Module(config, model)
        chunks.append(model)

    ddp_config = DistributedDataParallelConfig(
        grad_reduce_in_fp32=args.bf16 or args.fp16 or args.accumulate_allreduce_grads_in_fp32,
        overlap_grad_reduce=args.overlap_grad_reduce and device.cuda,
        overlap_param_gather=args.overlap_param_gather and device.cuda,
        use_distributed_optimizer=args.use_distributed_optimizer,
        check_for_nan_in_grad=False,
        bucket_size=None if not device.cuda else 40_000_000,
    )
    wrapped = []
    for i, chunk in enumerate(chunks):
        wrapped.append(
            DistributedDataParallel(
                config=config,
                ddp_config=ddp_config,
                module=chunk,
                disable_bucketing=(i > 0) or not device.cuda,
            )
        )
    for w in wrapped:
        w.broadcast_params()
    return wrapped, config


def _encoder_or_decoder():
    from megatron.core.enums import ModelType

    return ModelType.encoder_or_decoder


def count_parameters(chunks) -> int:
    """Parameters on this rank (shared embedding counted once per chunk that holds it)."""
    return sum(p.numel() for c in chunks for p in c.parameters())
