"""Where things live: the shipped sample data and the run directory that links the notebooks.

Each notebook hands the next what it needs through files under one run directory
(``runs/workshop`` by default, or ``$WORKSHOP_RUN_DIR``), so any notebook can be re-run alone:

=====================================  ==========================================
``<run>/data/``                        01's indexed datasets (domain, replay, held-out) and ``dataset.json``
``<run>/plan/job.yaml``                02's chosen config as the launch job YAML
``<run>/base/``                        03's import of the base model (``workshop import-hf``)
``<run>/train/``                       03's logs (``train.log``) and ``checkpoints/``
``<run>/monitor/``                     04's plots, reports and ``evaluation.json``
``<run>/export/hf/``                   04's export of the trained model (``workshop export-hf``)
=====================================  ==========================================
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
DEFAULT_RUN_DIR = Path(os.environ.get("WORKSHOP_RUN_DIR", REPO_ROOT / "runs" / "workshop"))


@dataclass(frozen=True)
class RunDir:
    """The files one workshop run passes from notebook to notebook."""

    root: Path = DEFAULT_RUN_DIR

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def dataset_prefix(self) -> Path:
        """Prefix given to prep-data; the files are ``<prefix>_text_document.bin/.idx``."""
        return self.data / "techpulse"

    @property
    def general_prefix(self) -> Path:
        """Prefix of the general (replay) corpus, tokenized with the same tokenizer."""
        return self.data / "general"

    def heldout_prefix(self, kind: str) -> Path:
        """Prefix of a held-out set (``domain`` or ``general``) given to prep-data."""
        return self.data / {"domain": "techpulse_heldout", "general": "general_heldout"}[kind]

    @property
    def base(self) -> Path:
        """The imported base model: a Megatron checkpoint the training run starts from."""
        return self.root / "base"

    @property
    def export_hf(self) -> Path:
        """The trained model exported back to a Hugging Face folder."""
        return self.root / "export" / "hf"

    @property
    def dataset_info(self) -> Path:
        return self.data / "dataset.json"

    @property
    def plan(self) -> Path:
        return self.root / "plan"

    @property
    def job_yaml(self) -> Path:
        return self.plan / "job.yaml"

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
    def monitor(self) -> Path:
        return self.root / "monitor"

    @property
    def evaluation(self) -> Path:
        """Notebook 04's before/after evaluation (``workshop evaluate`` of the base and the trained model)."""
        return self.monitor / "evaluation.json"
