"""The trainer's flags: Megatron-LM's names and meanings, the guides' flags accepted, bad flags refused."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest

from workshop_lib.errors import UsageError
from workshop_lib.train import arguments

# The training flags of the guides in docs/sources.md, verbatim (the EKS guide's PyTorchJob, the usage notes'
# Pattern 1 and Pattern 2 scripts, the HyperPod GPT-3 template's sample-based schedule).
SEED_PYTORCHJOB = [
    "--num-layers=32",
    "--hidden-size=4096",
    "--num-attention-heads=32",
    "--seq-length=4096",
    "--max-position-embeddings=4096",
    "--tensor-model-parallel-size=2",
    "--pipeline-model-parallel-size=1",
    "--micro-batch-size=2",
    "--global-batch-size=512",
    "--train-iters=10000",
    "--lr=1e-5",
    "--lr-decay-style=cosine",
    "--min-lr=1e-6",
    "--weight-decay=0.1",
    "--clip-grad=1.0",
    "--bf16",
    "--data-path=/shared/data/megatron/techpulse_text_document",
    "--tokenizer-type=HuggingFaceTokenizer",
    "--tokenizer-model=/shared/tokenizer/llama-3.1-8b",
    "--split=98,2,0",
    "--save=/shared/checkpoints/techpulse-cpt",
    "--save-interval=500",
    "--load=/shared/checkpoints/techpulse-cpt",
    "--log-interval=10",
    "--eval-interval=500",
    "--eval-iters=20",
]

SEED_PATTERN_2 = [
    "--num-layers=80",
    "--hidden-size=8192",
    "--num-attention-heads=64",
    "--seq-length=2048",
    "--max-position-embeddings=2048",
    "--micro-batch-size=1",
    "--global-batch-size=128",
    "--tensor-model-parallel-size=8",
    "--pipeline-model-parallel-size=4",
    "--sequence-parallel",
    "--use-distributed-optimizer",
    "--train-iters=100000",
    "--lr=1.0e-4",
    "--min-lr=1.0e-5",
    "--lr-decay-style=cosine",
    "--lr-warmup-iters=2000",
    "--weight-decay=0.1",
    "--clip-grad=1.0",
    "--bf16",
    "--data-path=/scratch/data/pile_text_document",
    "--split=949,50,1",
    "--tokenizer-type=GPT2BPETokenizer",
    "--vocab-file=/data/vocab/gpt2-vocab.json",
    "--merge-file=/data/vocab/gpt2-merges.txt",
    "--save=/scratch/checkpoints/gpt-70b",
    "--load=/scratch/checkpoints/gpt-70b",
    "--save-interval=500",
    "--eval-interval=100",
    "--eval-iters=10",
    "--log-interval=1",
    "--tensorboard-dir=/scratch/logs/gpt-70b",
    "--wandb-project=gpt-70b-training",
    "--distributed-backend=nccl",
]

SEED_OPTIMIZATIONS = [
    "--num-layers=32",
    "--hidden-size=4096",
    "--num-attention-heads=32",
    "--seq-length=2048",
    "--max-position-embeddings=2048",
    "--micro-batch-size=2",
    "--global-batch-size=256",
    "--tensor-model-parallel-size=4",
    "--pipeline-model-parallel-size=2",
    "--train-iters=100000",
    "--lr=1.5e-4",
    "--bf16",
    "--use-flash-attn",
    "--sequence-parallel",
    "--use-distributed-optimizer",
    "--overlap-grad-reduce",
    "--overlap-param-gather",
    "--untie-embeddings-and-output-weights",
    "--recompute-granularity=full",
    "--recompute-method=block",
    "--recompute-num-layers=1",
    "--num-workers=8",
    "--data-path=/nvme/data/dataset",
    "--tokenizer-type=GPT2BPETokenizer",
    "--vocab-file=gpt2-vocab.json",
    "--merge-file=gpt2-merges.txt",
    "--lr-warmup-init=1.0e-7",
    "--no-load-optim",
    "--no-load-rng",
    "--wandb-entity=my-org",
]

SEED_SAMPLES = [
    "--tensor-model-parallel-size",
    "8",
    "--pipeline-model-parallel-size",
    "1",
    "--num-layers",
    "36",
    "--hidden-size",
    "4096",
    "--num-attention-heads",
    "32",
    "--seq-length",
    "2048",
    "--max-position-embeddings",
    "2048",
    "--micro-batch-size",
    "1",
    "--global-batch-size",
    "288",
    "--train-samples",
    "146484375",
    "--lr-decay-samples",
    "126953125",
    "--lr-warmup-samples",
    "183105",
    "--lr",
    "6.0e-5",
    "--min-lr",
    "6.0e-6",
    "--lr-decay-style",
    "cosine",
    "--log-interval",
    "1",
    "--eval-iters",
    "0",
    "--split",
    "100,0,0",
    "--data-path",
    "/fsx/gpt2/my-gpt2_text_document",
    "--vocab-file",
    "v.json",
    "--merge-file",
    "m.txt",
    "--tokenizer-type",
    "GPT2BPETokenizer",
    "--fp16",
    "--checkpoint-activations",
    "--checkpoint-num-layers",
    "1",
    "--adam-beta1",
    "0.9",
    "--adam-beta2",
    "0.95",
    "--init-method-std",
    "0.006",
]

TINY = [
    "--num-layers",
    "2",
    "--hidden-size",
    "64",
    "--num-attention-heads",
    "4",
    "--seq-length",
    "64",
    "--micro-batch-size",
    "2",
    "--train-iters",
    "10",
    "--lr",
    "1e-3",
    "--data-path",
    "/d/x_text_document",
    "--tokenizer-type",
    "NullTokenizer",
    "--vocab-size",
    "100",
]


@pytest.mark.parametrize(
    "flags,world",
    [(SEED_PYTORCHJOB, 16), (SEED_PATTERN_2, 128), (SEED_OPTIMIZATIONS, 16), (SEED_SAMPLES, 16)],
    ids=["pytorchjob", "pattern2", "optimizations", "sample-schedule"],
)
def test_seed_manifest_flags_are_accepted(flags, world):
    args = arguments.parse_args(flags)
    arguments.finalize_parallel(args, world)
    assert args.data_parallel_size == world // (
        args.tensor_model_parallel_size * args.pipeline_model_parallel_size
    )
    assert args.num_microbatches * args.micro_batch_size * args.data_parallel_size == args.global_batch_size


def test_seed_meanings_follow_megatron():
    a = arguments.parse_args(SEED_PYTORCHJOB)
    arguments.finalize_parallel(a, 16)
    assert (a.bf16, a.params_dtype, a.lr_decay_iters, a.lr_warmup_iters) == (True, "bf16", 10000, 0)
    assert a.blend == (["/shared/data/megatron/techpulse_text_document"], None)
    assert a.split_weights == pytest.approx([0.98, 0.02, 0.0])
    assert a.ffn_hidden_size == 4 * 4096 and a.num_query_groups == 32 and a.kv_channels == 128

    s = arguments.parse_args(SEED_SAMPLES)
    arguments.finalize_parallel(s, 16)
    # sample-based schedule converted to iterations as Megatron does
    assert s.train_iters == 146484375 // 288 and s.lr_decay_iters == 126953125 // 288
    assert s.lr_warmup_iters == 183105 // 288
    # legacy --checkpoint-activations is full/uniform recomputation
    assert (s.recompute_granularity, s.recompute_method, s.recompute_num_layers) == ("full", "uniform", 1)

    o = arguments.parse_args(SEED_OPTIMIZATIONS)
    assert o.attention_backend == "flash" and o.recompute_method == "block"


def test_nan_check_is_on_unless_turned_off_and_the_older_spelling_is_accepted():
    """Megatron-LM's default is to stop at the first NaN loss; its older scripts still pass the
    positive flag, which names that default."""
    assert not arguments.parse_args(SEED_PYTORCHJOB).no_check_for_nan_in_loss_and_grad
    assert not arguments.parse_args(
        [*SEED_PYTORCHJOB, "--check-for-nan-in-loss-and-grad"]
    ).no_check_for_nan_in_loss_and_grad
    assert arguments.parse_args(
        [*SEED_PYTORCHJOB, "--no-check-for-nan-in-loss-and-grad"]
    ).no_check_for_nan_in_loss_and_grad


def test_llama_style_flags():
    a = arguments.parse_args(
        TINY
        + [
            "--swiglu",
            "--position-embedding-type",
            "rope",
            "--normalization",
            "RMSNorm",
            "--group-query-attention",
            "--num-query-groups",
            "2",
            "--disable-bias-linear",
            "--untie-embeddings-and-output-weights",
        ]
    )
    assert a.ffn_hidden_size == int((4 * 64 * 2 / 3) / 64) * 64  # Megatron's SwiGLU default
    assert a.num_query_groups == 2 and a.position_embedding_type == "rope"
    assert arguments.parse_args(TINY + ["--use-rotary-position-embeddings"]).position_embedding_type == "rope"


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--foo", "1"], "unknown flag --foo"),
        (["--num-layer", "2"], "did you mean --num-layers"),
        (["--zero-stage", "3"], "DeepSpeed"),
        (["--datacenter-id", "dc1"], "not a Megatron-LM flag"),
        (["--new-lr", "5e-5"], "--override-opt_param-scheduler"),
        (["--bf16", "--fp16"], "mutually exclusive"),
        (["--tensor-model-parallel-size", "3"], "not divisible by --tensor-model-parallel-size 3"),
        (["--split", "a,b"], "--split"),
        (["--recompute-method", "block"], "--recompute-granularity full"),
        (["--train-samples", "100"], "exactly one of --train-iters and --train-samples"),
        (["--reset-attention-mask"], "not supported"),
    ],
)
def test_bad_flags_are_one_clear_error(extra, needle):
    with pytest.raises(UsageError, match=None) as exc:
        arguments.parse_args(TINY + extra)
    assert needle in str(exc.value)
    assert "\n" not in str(exc.value)


def test_blend_forms():
    assert arguments.parse_blend(["/a"]) == (["/a"], None)
    assert arguments.parse_blend(["/a", "/b"]) == (["/a", "/b"], None)
    assert arguments.parse_blend(["0.7", "/a", "0.3", "/b"]) == (["/a", "/b"], [0.7, 0.3])
    assert arguments.parse_blend(["0.7 /a 0.3 /b"]) == (["/a", "/b"], [0.7, 0.3])  # one quoted token
    for bad in (["A", "0.5", "B", "0.5"], ["0.5", "A", "B"], ["0.5", "0.5"], ["-1", "/a"]):
        with pytest.raises(UsageError, match="--data-path"):
            arguments.parse_blend(bad)


def test_split_forms():
    def split(text):
        return arguments.parse_args([*TINY, "--split", text]).split_weights

    assert split("98,2,0") == pytest.approx([0.98, 0.02, 0.0])
    assert split("969, 30, 1") == pytest.approx([0.969, 0.030, 0.001])
    assert split("100") == pytest.approx([1.0, 0.0, 0.0])
    with pytest.raises(UsageError, match="--split"):
        split("0,0,0")


def test_batch_arithmetic_against_world_size():
    a = arguments.parse_args(TINY + ["--global-batch-size", "6", "--tensor-model-parallel-size", "2"])
    with pytest.raises(UsageError, match="world size 3 is not divisible"):
        arguments.finalize_parallel(copy.copy(a), 3)
    with pytest.raises(UsageError, match="--global-batch-size 6 is not divisible"):
        arguments.finalize_parallel(copy.copy(a), 4)
    arguments.finalize_parallel(a, 2)
    assert (a.data_parallel_size, a.num_microbatches) == (1, 3)
    b = arguments.parse_args(TINY + ["--data-parallel-size", "4"])
    with pytest.raises(UsageError, match="--data-parallel-size 4 does not match"):
        arguments.finalize_parallel(b, 2)


def test_module_entry_point_refuses_unknown_flag_with_exit_2():
    proc = subprocess.run(
        [sys.executable, "-m", "workshop_lib.train", *TINY, "--no-such-flag"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "unknown flag --no-such-flag" in errors[0]
    assert "Traceback" not in proc.stderr


def test_help_lists_megatron_flags():
    proc = subprocess.run(
        [sys.executable, "-m", "workshop_lib.train", "--help"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0
    for flag in (
        "--tensor-model-parallel-size",
        "--data-path",
        "--recompute-granularity",
        "--tensorboard-dir",
    ):
        assert flag in proc.stdout
