"""Where things live: the shipped sample data and the run directory that links the notebooks.

Each notebook hands the next what it needs through files under one run directory
(``runs/workshop`` at the repository root by default, or ``$WORKSHOP_RUN_DIR``), so any notebook can
be re-run alone. :class:`RunDir` is the one place that names a path under it; what the hand-over
files hold, and the one reader and writer of each, are in ``workshop_lib/handover.py``.

=====================================  ==========================================
``<run>/data/``                        01's indexed datasets (domain, replay, held-out) and ``dataset.json``
``<run>/plan/job.yaml``                02's chosen config as the launch job YAML
``<run>/base/``                        03's import of the base model (``workshop import-hf``)
``<run>/train/``                       03's log (``train.log``), ``checkpoints/`` and ``tensorboard/``
``<run>/monitor/``                     04's plots, reports and ``evaluation.json``
``<run>/export/hf/``                   04's export of the trained model (``workshop export-hf``)
=====================================  ==========================================

Two names for a dataset, never mixed:

* an **output prefix** (``<run>/data/techpulse``) is what ``workshop prep-data --output-prefix``
  takes; prep-data writes ``{output prefix}_{key}_document.bin/.idx`` for each JSON key;
* a **data path** (``<run>/data/techpulse_text_document``) is one dataset as Megatron's
  ``--data-path`` names it, the file name without ``.bin``/``.idx``; ``dataset.json``'s
  ``data_path``, ``blend``, ``replay`` and ``heldout`` all hold data paths.

:func:`data_path_for` turns the first into the second; ``workshop blend`` and ``workshop evaluate``
take data paths (the CLI of ``blend`` also accepts an output prefix, and says so).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
DATA_DIR = Path(os.environ.get("WORKSHOP_DATA_DIR", REPO_ROOT / "data"))
SAMPLE_CORPUS = DATA_DIR / "techpulse_sample.jsonl"
SAMPLE_TOKENIZER = DATA_DIR / "tokenizer"
# Continued pre-training: the base model (a Hugging Face folder, trained on general text only), the
# general corpus replayed beside the domain, and held-out text of both kinds that no run trains on.
SAMPLE_BASE_MODEL = DATA_DIR / "base_model"
SAMPLE_GENERAL_CORPUS = DATA_DIR / "general_sample.jsonl"
SAMPLE_HELDOUT = {
    "domain": DATA_DIR / "techpulse_heldout.jsonl",
    "general": DATA_DIR / "general_heldout.jsonl",
}
# Shipped example logs and nvidia-smi samples that notebook 04 illustrates with (data/examples/README.md).
EXAMPLES_DIR = DATA_DIR / "examples"
# The file ``workshop import-hf`` writes beside an imported checkpoint (the model's Megatron flags,
# vocabulary and source): the importer writes it, the trainer and the exporter read it.
MODEL_JSON = "workshop_model.json"
# Megatron's checkpoint tracker: the file in a --save/--load folder that names the latest iteration
# ("release" for converted weights). The trainer, import-hf, evaluate and the trust check look for it.
CHECKPOINT_TRACKER = "latest_checkpointed_iteration.txt"
DEFAULT_RUN_DIR = Path(os.environ.get("WORKSHOP_RUN_DIR", REPO_ROOT / "runs" / "workshop"))

# The output prefixes notebook 01 gives prep-data, by dataset (under ``<run>/data``).
_OUTPUT_NAMES = {
    "domain": "techpulse",
    "general": "general",
    "heldout_domain": "techpulse_heldout",
    "heldout_general": "general_heldout",
}


def data_path_for(output_prefix: str | os.PathLike[str], key: str = "text") -> str:
    """``{output prefix}_{key}_document``: the data path prep-data (and Megatron-LM's
    ``tools/preprocess_data.py``) writes for one JSON key."""
    return f"{output_prefix}_{key}_document"


@dataclass(frozen=True)
class RunDir:
    """The files one workshop run passes from notebook to notebook: every path under it is named here."""

    root: Path = DEFAULT_RUN_DIR

    @classmethod
    def at(cls, run_dir: str | os.PathLike[str] | RunDir | None = None) -> RunDir:
        """The run directory a notebook parameter or ``--run-dir`` names: the path given (made
        absolute), or the default (``runs/workshop`` at the repository root, or ``$WORKSHOP_RUN_DIR``)
        for None or "". Absolute, so a kernel started in ``notebooks/`` finds the same files."""
        if isinstance(run_dir, RunDir):
            return run_dir
        return cls(Path(run_dir).resolve()) if run_dir else cls(DEFAULT_RUN_DIR.resolve())

    # ---- data/: notebook 01 ----------------------------------------------------------------------
    @property
    def data(self) -> Path:
        return self.root / "data"

    def output_prefix(self, dataset: str = "domain") -> Path:
        """The output prefix prep-data is given for ``dataset`` (``domain``, ``general``,
        ``heldout_domain``, ``heldout_general``)."""
        return self.data / _OUTPUT_NAMES[dataset]

    def data_path(self, dataset: str = "domain") -> str:
        """The data path (Megatron's ``--data-path``, ``..._text_document``) of ``dataset``."""
        return data_path_for(self.output_prefix(dataset))

    @property
    def dataset_info(self) -> Path:
        return self.data / "dataset.json"

    # ---- plan/: notebook 02 ----------------------------------------------------------------------
    @property
    def plan(self) -> Path:
        return self.root / "plan"

    @property
    def job_yaml(self) -> Path:
        return self.plan / "job.yaml"

    # ---- base/: notebook 03's import ------------------------------------------------------------
    @property
    def base(self) -> Path:
        """The imported base model: a Megatron checkpoint the training run starts from."""
        return self.root / "base"

    @property
    def base_model_json(self) -> Path:
        """``workshop import-hf``'s description of the base model (its Megatron flags)."""
        return self.base / MODEL_JSON

    # ---- train/: notebook 03's run ----------------------------------------------------------------
    @property
    def train(self) -> Path:
        return self.root / "train"

    @property
    def train_log(self) -> Path:
        return self.train / "train.log"

    @property
    def checkpoints(self) -> Path:
        return self.train / "checkpoints"

    @property
    def tensorboard(self) -> Path:
        return self.train / "tensorboard"

    @property
    def local_job(self) -> Path:
        """The local backend's record of its run (pid, start time, command line)."""
        return self.train / "local_job.json"

    # ---- monitor/ and export/: notebook 04 ------------------------------------------------------
    @property
    def monitor(self) -> Path:
        return self.root / "monitor"

    @property
    def evaluation(self) -> Path:
        """Notebook 04's before/after evaluation (``workshop evaluate`` of the base and the trained model)."""
        return self.monitor / "evaluation.json"

    @property
    def export_hf(self) -> Path:
        """The trained model exported back to a Hugging Face folder."""
        return self.root / "export" / "hf"
