"""The warnings torch and megatron-core print on every healthy CPU run of the workshop, and what the kit does with each.

Each entry names one warning exactly: its category, its whole message and the module Python
attributes it to (``warnings`` reports the caller's module, so a deprecated torch function called
through torch's own wrapper is attributed to that wrapper). Two treatments:

* ``IGNORE``: filtered in the trainer's ranks before megatron-core loads (``train/log.py``'s
  :func:`~workshop_lib.train.log.ignore_known_warnings`, called from ``train/__main__.py``): notes
  about what a CPU machine does not have, printed at import by every rank, never in ``train.log``;
* ``HIDE``: kept in ``train.log`` (the monitor and ``diagnose`` read everything), and only counted
  in the notebook's view of the run (``launch/readable.py``), which names the log for the full text.

A warning that is not here is shown everywhere, as it is printed: a new library version's new
deprecation is news, not noise.
"""

from __future__ import annotations

import re
from typing import NamedTuple

IGNORE = "ignore"
HIDE = "hide"


class KnownWarning(NamedTuple):
    """One known warning (a NamedTuple: ``dataclasses`` would pull ``inspect`` into every start-up)."""

    category: str  # the class name Python prints, e.g. "FutureWarning"
    message: str  # the whole message, exactly as printed
    module: str  # regular expression for the whole module name Python attributes it to
    action: str  # IGNORE or HIDE
    why: str  # why it is harmless on the workshop's CPU run


_NO_TE_APEX = "Transformer Engine and Apex are not installed. "
_LOCAL_KERNELS = "Falling back to local implementations of multi_tensor_applier and multi_tensor_scale"

KNOWN: tuple[KnownWarning, ...] = (
    KnownWarning("UserWarning", _NO_TE_APEX + "Falling back to Torch optimizers.", r"megatron\.core\.optimizer",
                 IGNORE, "no Transformer Engine or Apex on a CPU: torch's own Adam, as intended"),
    KnownWarning("UserWarning", _NO_TE_APEX + _LOCAL_KERNELS, r"megatron\.core\.optimizer\.optimizer",
                 IGNORE, "no Apex fused kernels on a CPU: megatron-core's local ones"),
    KnownWarning("UserWarning", _NO_TE_APEX + _LOCAL_KERNELS,
                 r"megatron\.core\.distributed\.fsdp\.src\.megatron_fsdp\.mixed_precision",
                 IGNORE, "the FSDP module's copy of the same note (FSDP is not used here)"),
    KnownWarning("UserWarning",
                 _NO_TE_APEX + "Falling back to local implementations of multi_tensor_applier, "
                 "multi_tensor_l2norm, and multi_tensor_scale",
                 r"megatron\.core\.optimizer\.clip_grads", IGNORE, "gradient clipping with local kernels"),
    KnownWarning("UserWarning", "Apex is not installed. Falling back to Torch Norm", r"megatron\.core\.models\..*",
                 IGNORE, "the layer specs' LayerNorm/RMSNorm come from torch (the local spec)"),
    KnownWarning("UserWarning", "full scope is deprecated. Use empty cuda_graph_scope to capture the whole layer.",
                 r"megatron\.core\.transformer\.transformer_config",
                 IGNORE, "megatron-core's own default for cuda_graph_scope; no CUDA graphs on a CPU"),
    KnownWarning("FutureWarning",
                 "`load_state_dict` is deprecated and will be removed in future versions. Please use `load` instead.",
                 r"megatron\.core\.dist_checkpointing\..*",
                 IGNORE, "megatron-core's checkpoint loader calls torch.distributed.checkpoint by its old name"),
    KnownWarning("FutureWarning",
                 "`save_state_dict` is deprecated and will be removed in future versions.Please use `save` instead.",
                 r"megatron\.core\.dist_checkpointing\..*",
                 IGNORE, "megatron-core's checkpoint saver calls torch.distributed.checkpoint by its old name"),
    KnownWarning("FutureWarning", "Please use DTensor instead and we are deprecating ShardedTensor.",
                 r"workshop_lib\.train\.device",
                 HIDE, "megatron-core's dist_checkpointing builds torch ShardedTensors to load the base model; "
                 "attributed to the CPU device mode that forwards torch calls"),
    KnownWarning("FutureWarning",
                 "`torch.distributed.reduce_scatter_tensor` is deprecated. "
                 "Please use `torch.distributed.reduce_scatter_single` instead.",
                 r"torch\.distributed\.c10d_logger",
                 HIDE, "megatron-core's sequence-parallel collectives use torch's old name for the same operation"),
    KnownWarning("FutureWarning",
                 "`torch.distributed.all_gather_into_tensor` is deprecated. "
                 "Please use `torch.distributed.all_gather_single` instead.",
                 r"torch\.distributed\.c10d_logger",
                 HIDE, "megatron-core's sequence-parallel collectives use torch's old name for the same operation"),
)  # fmt: skip

# Lines megatron-core's logger prints as warnings on every local run; kept in train.log, counted in the view.
KNOWN_LOG_LINES: dict[str, str] = {
    "Cannot save the BlendedDataset indexes because path_to_cache is None": (
        "the local run keeps no dataset index cache, so megatron-core rebuilds the blend's index in memory"
    ),
}

# How Python's warnings module prints a warning: "FILE:LINE: CATEGORY: MESSAGE", then the source line.
WARNING_LINE = re.compile(
    r"^(?P<file>\S.*?):(?P<line>\d+): (?P<category>[A-Za-z_]\w*Warning): (?P<message>.*)$"
)


def module_pattern(entry: KnownWarning) -> re.Pattern[str]:
    """The entry's module as a pattern over a printed file path (``torch/distributed/c10d_logger.py``)."""
    path = entry.module.replace(r"\.", "/")
    return re.compile(rf"(?:^|/){path}(?:\.py|/__init__\.py)$")


def match_printed(category: str, message: str, file: str) -> KnownWarning | None:
    """The entry a printed warning is, by category, whole message and the file it names (None: unknown)."""
    for entry in KNOWN:
        if entry.category == category and entry.message == message and module_pattern(entry).search(file):
            return entry
    return None
