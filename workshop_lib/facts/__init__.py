"""The tables the rest of the kit reads, and nothing else.

One fact, one place: GPU specs and instance types (``hardware``), and, as the rooms add them,
NCCL/EFA rules, failure signatures, storage bandwidths and model presets. Code and notebooks both
read these tables; nothing here imports anything heavier than the standard library.
"""
