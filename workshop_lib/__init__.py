"""Megatron-on-Kubernetes workshop kit.

Rooms (see docs/architecture.md): ``facts`` (tables), ``data`` (corpora to indexed datasets),
``plan`` (parallelism math), ``monitor`` (logs, health, checkpoints), ``train`` (the Megatron-Core
trainer), ``launch`` (job rendering, checks, backends), ``widgets`` (ipywidgets views) and ``cli``.

Importing this package is cheap on purpose: nothing here imports torch, megatron-core or the
Kubernetes client, so the planning and rendering commands start in well under a second.
"""

__version__ = "0.1.0"
