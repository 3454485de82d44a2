"""Pre-train the workshop's tiny *base model* and save it as a Hugging Face folder (``data/base_model``).

Continued pre-training starts from somebody else's weights. On the cluster that is Llama 3.1 8B or
Mistral 7B from the Hub; here it must be small enough to ship and to train on a laptop CPU, yet
real: a ``LlamaForCausalLM`` (RMSNorm, RoPE, SwiGLU, grouped-query attention, tied embeddings as in
Llama 3.2) trained by this script with plain PyTorch on the *general* corpus only
(``data/general_sample.jsonl``), never on the TechPulse domain text. The workshop then imports it
(``workshop import-hf``), continues pre-training on the domain with general text replayed, and
shows the domain loss fall while the general loss holds.

The tokenizer is the kit's BPE (``data/tokenizer``), copied into the folder, so the model folder is
self-contained as a Hub download is. Weights are stored in bfloat16 (about 4 MB). Deterministic for
a given torch build (fixed seed, one thread)::

    .venv/bin/python data/scripts/train_base_model.py            # ~10-15 min on a 2-core CPU
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parents[1]

# The model: Llama-shaped, as small as still learns something in minutes.
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 128,
    "intermediate_size": 384,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "hidden_act": "silu",
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "tie_word_embeddings": True,
    "attention_bias": False,
    "mlp_bias": False,
    "bos_token_id": 0,
    "eos_token_id": 0,
}


def token_stream(path: Path, tokenizer_dir: Path) -> np.ndarray:
    """Every document's ids followed by the end-of-document token, concatenated (as GPTDataset packs)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    eod = tok.token_to_id("<|endoftext|>")
    texts = [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line]
    ids: list[int] = []
    for enc in tok.encode_batch(texts):
        ids.extend(enc.ids)
        ids.append(eod)
    return np.asarray(ids, dtype=np.int64), tok.get_vocab_size()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=HERE / "general_sample.jsonl")
    ap.add_argument("--tokenizer", type=Path, default=HERE / "tokenizer")
    ap.add_argument("--out", type=Path, default=HERE / "base_model")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq-length", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    ids, vocab = token_stream(args.corpus, args.tokenizer)
    config = LlamaConfig(**{**CONFIG, "vocab_size": vocab})
    model = LlamaForCausalLM(config)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    warmup = args.steps // 20
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: min(1.0, (s + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * s / args.steps))),
    )
    rng = np.random.default_rng(args.seed)
    window = args.seq_length + 1
    t0 = time.time()
    model.train()
    for step in range(args.steps):
        starts = rng.integers(0, len(ids) - window, size=args.batch)
        batch = torch.from_numpy(np.stack([ids[s : s + window] for s in starts]))
        out = model(input_ids=batch[:, :-1], labels=batch[:, :-1].clone())
        # HF shifts the labels inside; feeding the inputs as labels gives next-token loss over s-1 tokens
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        if step % 100 == 0 or step == args.steps - 1:
            print(f"step {step:5d}  loss {out.loss.item():.4f}  {time.time() - t0:6.1f}s", flush=True)

    tmp = args.out.with_name(args.out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.to(torch.bfloat16).save_pretrained(tmp, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy2(args.tokenizer / name, tmp / name)
    (tmp / "TRAINING.md").write_text(
        f"Trained by data/scripts/train_base_model.py: {args.steps} steps x {args.batch} x "
        f"{args.seq_length} tokens of {args.corpus.name} ({len(ids)} tokens), AdamW lr {args.lr}, "
        f"seed {args.seed}, torch {torch.__version__}.\n"
    )
    shutil.rmtree(args.out, ignore_errors=True)
    tmp.rename(args.out)
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
