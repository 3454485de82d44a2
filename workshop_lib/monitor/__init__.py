"""Monitor and debug a Megatron run: one module per question.

* ``parse``: iteration/validation lines to numbers (pandas, JSON), streaming with ``LogFollower``;
* ``diagnose``: one verdict per log (primary root cause, evidence, fix; unknown error lines) from the
  signature table in ``facts/failures.py``: ``verdict(text | lines | Path)``;
* ``nccl``: NCCL/EFA health and a one-line verdict from NCCL INFO lines;
* ``gpu``: ``nvidia-smi`` dmon/csv parsing, idle-GPU flags, collection from pods (Kubernetes exec);
* ``checkpoints``: Megatron checkpoint layouts, completeness, sizes, save time, keep-last-N clean-up;
* ``plot``: training curves (matplotlib) and TensorBoard event files as a second source.

Nothing heavy is imported here: pandas, matplotlib, tensorboard and the Kubernetes client are
imported inside the functions that need them.
"""
