"""The trainer room: Megatron-Core GPT pre-training with Megatron-LM's flags, on CPU or GPUs.

=====================  ==================================================================
``arguments``          the flag table (Megatron-LM names, defaults, checks); stdlib only
``launcher``           ``torchrun_command``, ``local_env``, ``run_local`` (``workshop train``)
``trainer``            the loop: process groups, model, optimizer, data, logs, checkpoints
``model``              TransformerConfig, layer specs (TE on GPUs, local + CPU modules otherwise)
``attention``          SDPA attention (CPU, GPUs without TE), sequence-parallel norms
``device``             CUDA + NCCL or CPU + gloo, and the CPU adaptations of megatron-core
``data``               GPTDataset via BlendedMegatronDatasetBuilder, split check, micro-batches
``tokenizer``          vocabulary size and EOD id from the tokenizer files
``checkpointing``      ``iter_XXXXXXX/`` + ``latest_checkpointed_iteration.txt`` (dist_checkpointing)
``log``                Megatron-LM's iteration/validation lines, TensorBoard scalars
``selfcheck``          the image's NCCL / aws-ofi-nccl / libfabric report
``agent``              torchrun's front: a stop request reaches the ranks as "save, then stop"
``lifeline``           stop requests, dying with the parent, recognising our own processes
=====================  ==================================================================

Entry point: ``python -m workshop_lib.train [flags]`` under torchrun.
"""
