"""CPU-capable modules for megatron-core's local layer spec: core attention and norms.

megatron-core's local ``DotProductAttention`` takes its score buffer from a global CUDA memory
buffer; this module has the same constructor and ``forward`` contract (``[s, b, heads, dim]`` in,
``[s, b, heads*dim]`` out) and computes causal attention with PyTorch's
``scaled_dot_product_attention``, which runs on any device. The trainer puts it in the layer spec
as ``core_attention`` when Transformer Engine or CUDA is missing.
"""

from __future__ import annotations

import math
from contextlib import nullcontext

import torch
from megatron.core import tensor_parallel
from megatron.core.transformer.enums import AttnMaskType
from megatron.core.transformer.module import MegatronModule
from megatron.core.transformer.transformer_config import TransformerConfig
from megatron.core.utils import divide


class SDPACoreAttention(MegatronModule):
    """Causal (or padding-masked) dot-product attention over this rank's heads."""

    def __init__(
        self,
        config: TransformerConfig,
        layer_number: int,
        attn_mask_type: AttnMaskType,
        attention_type: str,
        attention_dropout: float | None = None,
        softmax_scale: float | None = None,
        cp_comm_type: str | None = None,
        pg_collection=None,
    ):
        super().__init__(config=config)
        if config.context_parallel_size != 1:
            raise ValueError("context parallelism needs Transformer Engine attention (GPU)")
        tp_size = (
            tensor_parallel.get_tensor_model_parallel_world_size()
            if pg_collection is None
            else pg_collection.tp.size()
        )
        self.attn_mask_type = attn_mask_type
        self.heads = divide(config.num_attention_heads, tp_size)
        self.groups = divide(config.num_query_groups, tp_size)
        head_dim = config.kv_channels
        self.softmax_scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(head_dim)
        self.dropout_p = config.attention_dropout if attention_dropout is None else attention_dropout

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        attn_mask_type: AttnMaskType | None = None,
        attention_bias: torch.Tensor | None = None,
        packed_seq_params=None,
    ) -> torch.Tensor:
        if packed_seq_params is not None or attention_bias is not None:
            raise ValueError("packed sequences and attention bias need Transformer Engine attention")
        sq, b = query.shape[0], query.shape[1]
        # Grouped-query attention: SDPA shares each K/V head among its query heads itself
        # (``enable_gqa``), so K and V are kept for backward at their own size, as Transformer
        # Engine and the plan keep them, not repeated to every head.
        gqa = self.heads != self.groups
        # [s, b, h, d] -> [b, h, s, d]
        q, k, v = (t.permute(1, 2, 0, 3) for t in (query, key, value))
        mask_type = attn_mask_type or self.attn_mask_type
        causal = mask_type == AttnMaskType.causal or attention_mask is None
        mask = None
        if not causal and attention_mask is not None:
            mask = ~attention_mask  # megatron masks are True where attention is NOT allowed
        dropout = self.dropout_p if self.training else 0.0
        # Dropout draws from the tensor-parallel RNG stream except under sequence parallelism, as
        # megatron-core's own attention does.
        rng = (
            tensor_parallel.get_cuda_rng_tracker().fork()
            if dropout and not self.config.sequence_parallel
            else nullcontext()
        )
        with rng:
            out = torch.nn.functional.scaled_dot_product_attention(
                q,
                k,
                v,
                attn_mask=mask,
                dropout_p=dropout,
                is_causal=causal,
                scale=self.softmax_scale,
                enable_gqa=gqa,
            )
        # [b, h, s, d] -> [s, b, h*d]
        return out.permute(2, 0, 1, 3).reshape(sq, b, -1)


class SequenceParallelNorm:
    """LayerNorm/RMSNorm from PyTorch that also works with sequence parallelism.

    megatron-core's local fallback (``WrappedTorchNorm``) refuses ``--sequence-parallel``; with
    sequence parallelism each TP rank normalises its slice of the sequence with the same weights,
    so the weights' gradients must be summed over the TP group. Marking them ``sequence_parallel``
    makes megatron-core's ``finalize_model_grads`` do exactly that (as Apex's and TE's norms do).
    """

    def __new__(cls, config: TransformerConfig, hidden_size: int, eps: float = 1e-5):
        norm_cls = torch.nn.RMSNorm if config.normalization == "RMSNorm" else torch.nn.LayerNorm
        norm = norm_cls(hidden_size, eps=eps, dtype=config.params_dtype)
        for param in norm.parameters():
            param.sequence_parallel = config.sequence_parallel
        return norm
