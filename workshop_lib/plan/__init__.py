"""The parallelism planner: pure functions, standard library only.

* :mod:`.config` — the model, parallel layout and cluster, read from Megatron flags with Megatron's defaults;
* :mod:`.model` — parameter counts exactly as megatron-core builds them (total, active, per stage, per GPU);
* :mod:`.flops` — Megatron-LM's ``num_floating_point_operations`` and Narayanan et al.'s closed form;
* :mod:`.memory` — weights, gradients, optimizer states, activations (Korthikanti et al.) and the allowance;
* :mod:`.validity` — every sizing rule Megatron enforces, with the fix to suggest (:class:`PlanIssue`);
* :mod:`.timing` — compute and communication time, bubble, tokens/s, MFU, days and cost;
* :mod:`.search` — every layout, valid and fitting ones ranked by estimated throughput;
* :mod:`.api` — ``plan_from_megatron_args`` / ``check_megatron_args`` (what launch and the widgets call);
* :mod:`.jobfile` — the chosen plan as the launch job YAML; :mod:`.report` — text tables; :mod:`.cli` — ``workshop plan``.
"""
