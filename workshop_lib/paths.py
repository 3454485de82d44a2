"""Where things live: the shipped sample data and the run directory that links the notebooks.

Each notebook hands the next what it needs through files under one run directory
(``runs/workshop`` by default, or ``$WORKSHOP_RUN_DIR``), so any notebook can be re-run alone:

=====================================  ==========================================
``<run>/data/``                        01's indexed dataset and ``dataset.json``
``<run>/plan/job.yaml``                02's chosen config as the launch job YAML
``<run>/train/``                       03's logs (``train.log``) and ``checkpoints/``
``<run>/monitor/``                     04's plots and reports
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
