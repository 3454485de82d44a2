"""``python -m workshop_lib.train [Megatron-LM flags]``: the trainer entry point (run it under torchrun)."""

from __future__ import annotations

import sys
import warnings

# megatron-core warns at import that Apex/Transformer Engine are missing; on CPU that is expected.
warnings.filterwarnings("ignore", message=".*(Apex|Transformer Engine).*")
warnings.filterwarnings("ignore", message="full scope is deprecated")  # megatron-core's own default
warnings.filterwarnings("ignore", category=FutureWarning, module=r"megatron\.core\.dist_checkpointing.*")

if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        from workshop_lib.train.arguments import build_parser

        build_parser().print_help()
        sys.exit(0)
    from workshop_lib.train.trainer import main

    sys.exit(main())
