"""``python -m workshop_lib.train [Megatron-LM flags]``: the trainer entry point (run it under torchrun).

The flags are checked before torch and megatron-core are imported, so a bad flag is one line on
stderr and exit status 2 within a fraction of a second.

Before anything else a rank records stop requests (SIGTERM, SIGINT: the trainer saves and exits at
its next agreement point, even when the request came during start-up) and, under a torchrun
agent, asks to die with it, so a killed launcher leaves no orphaned rank writing checkpoints.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    from workshop_lib.train import lifeline

    lifeline.install_stop_handler()
    if lifeline.AGENT_ENV in os.environ or "TORCHELASTIC_RUN_ID" in os.environ:
        lifeline.die_with_parent(lifeline.parent_from_env(lifeline.AGENT_ENV))

if __name__ == "__main__":
    from workshop_lib.errors import UsageError
    from workshop_lib.train.arguments import build_parser, parse_args

    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        build_parser().print_help()
        sys.exit(0)
    try:
        parse_args(sys.argv[1:])
    except UsageError as exc:
        if os.environ.get("RANK", "0") == "0":
            print(f"workshop train: error: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)
    # megatron-core warns at import that Apex/Transformer Engine are missing; on CPU that is expected.
    # Each such note is filtered by its exact category, message and module (facts/library_warnings.py),
    # after the flags are checked (--help and a bad flag stay instant) and before megatron-core loads.
    from workshop_lib.train.log import ignore_known_warnings

    ignore_known_warnings()
    from workshop_lib.train.trainer import main

    sys.exit(main())
