"""Checkpoint layout and the completion marker, without starting a process group."""

from __future__ import annotations

import argparse

import pytest
import torch

from workshop_lib.errors import UsageError
from workshop_lib.train import checkpointing


def test_marker_is_written_only_after_the_checkpoint_is_complete(tmp_path, monkeypatch):
    from megatron.core import dist_checkpointing

    save_dir = tmp_path / "ckpt"
    save_dir.mkdir()
    (save_dir / checkpointing.TRACKER).write_text("10\n")
    seen = {}

    def fake_save(state, path):
        # while shards are being written the marker still names the previous checkpoint
        seen["marker_during_save"] = (save_dir / checkpointing.TRACKER).read_text().strip()
        seen["path"] = path
        (tmp_path / "ckpt" / "iter_0000020" / "common.pt").write_bytes(b"x")

    monkeypatch.setattr(dist_checkpointing, "save", fake_save)
    monkeypatch.setattr(checkpointing, "_sharded_state_dict", lambda *a, **k: {})
    monkeypatch.setattr(torch.distributed, "get_rank", lambda: 0)
    monkeypatch.setattr(torch.distributed, "barrier", lambda: None)
    args = argparse.Namespace(save=str(save_dir), no_save_optim=False, no_save_rng=False)
    state = checkpointing.TrainState(iteration=20, consumed_train_samples=320)
    path = checkpointing.save_checkpoint(args, [], None, None, state, cuda=False)
    assert path == save_dir / "iter_0000020" and seen["path"] == str(path)
    assert seen["marker_during_save"] == "10"
    assert checkpointing.read_tracker(save_dir) == 20
    assert not list(save_dir.glob(".*.tmp"))  # the temporary marker was renamed into place


def test_tracker_reading(tmp_path):
    assert checkpointing.read_tracker(tmp_path) is None
    (tmp_path / checkpointing.TRACKER).write_text("release")
    assert checkpointing.read_tracker(tmp_path) == 0
    (tmp_path / checkpointing.TRACKER).write_text("garbage")
    with pytest.raises(UsageError, match="expected an iteration number"):
        checkpointing.read_tracker(tmp_path)
    assert checkpointing.iteration_dir("/c", 500).name == "iter_0000500"
