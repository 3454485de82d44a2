"""Which Hugging Face tensors make which megatron-core checkpoint tensor, and where.

Standard library only. A megatron-core ``torch_dist`` checkpoint stores *global* tensors: one key
per parameter kind with the layers stacked on a leading axis (``decoder.layers.…`` of shape
``(num_layers, …)``) and, for experts, a second axis ``(num_layers, num_experts, …)``, whatever TP
and PP the model was trained with. This table is that layout for the GPTModel the trainer builds
(local spec; the TE spec uses the same keys), written as pieces: each piece is one block of a
global tensor and the Hugging Face tensors it is computed from. Import writes piece by piece;
export reads the same pieces back and inverts them.

Transforms:

* ``copy``   one HF tensor, as is;
* ``qkv``    q, k, v (weights or biases) interleaved per query group, as megatron-core's fused
             ``linear_qkv`` expects: for each group its ``heads/groups`` query heads, then its key
             head, then its value head;
* ``zeros``  vocabulary padding rows (no HF tensor; dropped on export).

SwiGLU's ``linear_fc1`` is ``[gate; up]`` along its rows (megatron-core chunks it in two and applies
SiLU to the first half), so it is two ``copy`` pieces.
"""

from __future__ import annotations

from dataclasses import dataclass

from .hfconfig import ModelSpec


@dataclass(frozen=True)
class Piece:
    """One block of a global tensor: ``offsets``/``sizes`` in it, made from ``source`` by ``kind``."""

    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    source: tuple[str, ...]
    kind: str  # copy | qkv | zeros


@dataclass(frozen=True)
class Entry:
    """One tensor of the checkpoint's ``model`` section."""

    key: str
    shape: tuple[int, ...]
    pieces: tuple[Piece, ...]


def _layer_names(spec: ModelSpec, layer: int) -> dict[str, str]:
    p = f"model.layers.{layer}."
    return {
        "in_norm": p + "input_layernorm.weight",
        "post_norm": p + "post_attention_layernorm.weight",
        "q": p + "self_attn.q_proj.weight",
        "k": p + "self_attn.k_proj.weight",
        "v": p + "self_attn.v_proj.weight",
        "o": p + "self_attn.o_proj.weight",
        "qb": p + "self_attn.q_proj.bias",
        "kb": p + "self_attn.k_proj.bias",
        "vb": p + "self_attn.v_proj.bias",
        "gate": p + "mlp.gate_proj.weight",
        "up": p + "mlp.up_proj.weight",
        "down": p + "mlp.down_proj.weight",
        "router": p + "block_sparse_moe.gate.weight",
    }


def expert_names(layer: int, expert: int) -> tuple[str, str, str]:
    """Mixtral's (w1 = gate, w3 = up, w2 = down) names on the Hub."""
    p = f"model.layers.{layer}.block_sparse_moe.experts.{expert}."
    return p + "w1.weight", p + "w3.weight", p + "w2.weight"


def entries(spec: ModelSpec, padded_vocab_size: int) -> list[Entry]:
    """Every tensor of the model section, in a stable order (embedding, layers, final norm, output)."""
    L, H, F = spec.num_layers, spec.hidden_size, spec.ffn_hidden_size
    N, G, D, V = spec.num_attention_heads, spec.num_query_groups, spec.kv_channels, spec.vocab_size
    qkv_rows = (N + 2 * G) * D
    out: list[Entry] = []

    def vocab_entry(key: str, name: str) -> Entry:
        pieces = [Piece((0, 0), (V, H), (name,), "copy")]
        if padded_vocab_size > V:
            pieces.append(Piece((V, 0), (padded_vocab_size - V, H), (), "zeros"))
        return Entry(key, (padded_vocab_size, H), tuple(pieces))

    def stacked(key: str, per_layer: tuple[int, ...], make) -> Entry:
        pieces = []
        for layer in range(L):
            pieces.extend(make(layer, _layer_names(spec, layer)))
        return Entry(key, (L, *per_layer), tuple(pieces))

    out.append(vocab_entry("embedding.word_embeddings.weight", "model.embed_tokens.weight"))
    att = "decoder.layers.self_attention."
    out.append(
        stacked(
            att + "linear_qkv.layer_norm_weight",
            (H,),
            lambda i, n: [Piece((i, 0), (1, H), (n["in_norm"],), "copy")],
        )
    )
    out.append(
        stacked(
            att + "linear_qkv.weight",
            (qkv_rows, H),
            lambda i, n: [Piece((i, 0, 0), (1, qkv_rows, H), (n["q"], n["k"], n["v"]), "qkv")],
        )
    )
    if spec.qkv_bias:
        out.append(
            stacked(
                att + "linear_qkv.bias",
                (qkv_rows,),
                lambda i, n: [Piece((i, 0), (1, qkv_rows), (n["qb"], n["kb"], n["vb"]), "qkv")],
            )
        )
    out.append(
        stacked(
            att + "linear_proj.weight",
            (H, N * D),
            lambda i, n: [Piece((i, 0, 0), (1, H, N * D), (n["o"],), "copy")],
        )
    )
    mlp = "decoder.layers.mlp."
    out.append(
        stacked(
            mlp + "linear_fc1.layer_norm_weight",
            (H,),
            lambda i, n: [Piece((i, 0), (1, H), (n["post_norm"],), "copy")],
        )
    )
    if spec.num_experts:
        E = spec.num_experts
        out.append(
            stacked(
                mlp + "router.weight",
                (E, H),
                lambda i, n: [Piece((i, 0, 0), (1, E, H), (n["router"],), "copy")],
            )
        )

        def fc1(i, n):
            ps = []
            for e in range(E):
                w1, w3, _ = expert_names(i, e)
                ps += [
                    Piece((i, e, 0, 0), (1, 1, F, H), (w1,), "copy"),
                    Piece((i, e, F, 0), (1, 1, F, H), (w3,), "copy"),
                ]
            return ps

        def fc2(i, n):
            return [Piece((i, e, 0, 0), (1, 1, H, F), (expert_names(i, e)[2],), "copy") for e in range(E)]

        out.append(stacked(mlp + "experts.experts.linear_fc1.weight", (E, 2 * F, H), fc1))
        out.append(stacked(mlp + "experts.experts.linear_fc2.weight", (E, H, F), fc2))
    else:
        out.append(
            stacked(
                mlp + "linear_fc1.weight",
                (2 * F, H),
                lambda i, n: [
                    Piece((i, 0, 0), (1, F, H), (n["gate"],), "copy"),
                    Piece((i, F, 0), (1, F, H), (n["up"],), "copy"),
                ],
            )
        )
        out.append(
            stacked(
                mlp + "linear_fc2.weight",
                (H, F),
                lambda i, n: [Piece((i, 0, 0), (1, H, F), (n["down"],), "copy")],
            )
        )
    out.append(
        Entry("decoder.final_layernorm.weight", (H,), (Piece((0,), (H,), ("model.norm.weight",), "copy"),))
    )
    if not spec.tied:
        out.append(vocab_entry("output_layer.weight", "lm_head.weight"))
    return out


def extra_state_keys(spec: ModelSpec) -> list[str]:
    """The ``_extra_state`` objects megatron-core's linear layers add (None on the local spec).

    They are part of ``GPTModel.sharded_state_dict()``, so a checkpoint the trainer loads strictly
    must hold them; their keys carry the layer (and expert) position, never TP or PP.
    """
    L = spec.num_layers
    keys = []
    for layer in range(L):
        for name in ("self_attention.linear_proj", "self_attention.linear_qkv"):
            keys.append(f"decoder.layers.{name}._extra_state/shard_{layer}_{L}")
        if spec.num_experts:
            E = spec.num_experts
            for e in range(E):
                for name in ("linear_fc1", "linear_fc2"):
                    keys.append(
                        f"decoder.layers.mlp.experts.experts.{name}._extra_state/shard_{layer}.{e}_{L}.{E}"
                    )
        else:
            for name in ("linear_fc1", "linear_fc2"):
                keys.append(f"decoder.layers.mlp.{name}._extra_state/shard_{layer}_{L}")
    return keys


def hf_shapes(spec: ModelSpec) -> dict[str, tuple[int, ...]]:
    """Every tensor a Hugging Face checkpoint of this model holds, with its shape (tied: no lm_head)."""
    H, F, V = spec.hidden_size, spec.ffn_hidden_size, spec.vocab_size
    N, G, D = spec.num_attention_heads, spec.num_query_groups, spec.kv_channels
    want: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (V, H), "model.norm.weight": (H,)}
    if not spec.tied:
        want["lm_head.weight"] = (V, H)
    for i in range(spec.num_layers):
        n = _layer_names(spec, i)
        want.update({n["in_norm"]: (H,), n["post_norm"]: (H,), n["q"]: (N * D, H), n["k"]: (G * D, H)})
        want.update({n["v"]: (G * D, H), n["o"]: (H, N * D)})
        if spec.qkv_bias:
            want.update({n["qb"]: (N * D,), n["kb"]: (G * D,), n["vb"]: (G * D,)})
        if spec.num_experts:
            want[n["router"]] = (spec.num_experts, H)
            for e in range(spec.num_experts):
                w1, w3, w2 = expert_names(i, e)
                want.update({w1: (F, H), w3: (F, H), w2: (H, F)})
        else:
            want.update({n["gate"]: (F, H), n["up"]: (F, H), n["down"]: (H, F)})
    return want
