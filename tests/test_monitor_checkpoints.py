"""Checkpoint directories built like Megatron lays them out: legacy and torch_dist, whole and broken."""

from __future__ import annotations

import json
import os

import pytest

from workshop_lib.errors import UsageError
from workshop_lib.facts.storage import STORAGE_TIERS
from workshop_lib.monitor.checkpoints import scan_checkpoints


def legacy(root, it, tp=2, pp=1, size=1000, skip=()):
    d = root / f"iter_{it:07d}"
    for t in range(tp):
        for p in range(pp):
            name = f"mp_rank_{t:02d}" if pp == 1 else f"mp_rank_{t:02d}_{p:03d}"
            if name in skip:
                continue
            (d / name).mkdir(parents=True)
            (d / name / "model_optim_rng.pt").write_bytes(b"x" * size)
    return d


def dist(root, it, ranks=4, size=1000, drop=()):
    d = root / f"iter_{it:07d}"
    d.mkdir(parents=True)
    for name, data in {"metadata.json": json.dumps({"sharded_backend": "torch_dist", "sharded_backend_version": 1}),
                       ".metadata": "m", "common.pt": "c"}.items():  # fmt: skip
        if name not in drop:
            (d / name).write_text(data)
    for r in range(ranks):
        if f"__{r}_0.distcp" not in drop:
            (d / f"__{r}_0.distcp").write_bytes(b"x" * size)
    return d


def test_torch_dist_layout_tracker_sizes_and_age(tmp_path):
    for it in (100, 200, 300):
        dist(tmp_path, it)
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("300")
    old = tmp_path / "iter_0000100"
    for f in old.iterdir():
        os.utime(f, (1000, 1000))
    os.utime(old, (1000, 1000))
    r = scan_checkpoints(tmp_path, now=4600)
    assert r["iterations"] == [100, 200, 300] and r["latest"] == 300 and r["latest_complete"] == 300
    c = r["checkpoints"][0]
    assert c["layout"] == "torch_dist" and c["complete"] and c["shards"] == 4 and c["age_seconds"] == 3600
    assert (
        c["size_bytes"]
        == 4 * 1000 + len(json.dumps({"sharded_backend": "torch_dist", "sharded_backend_version": 1})) + 2
    )
    assert r["checkpoints"][2]["is_latest"] and r["problems"] == []
    tier = STORAGE_TIERS["fsx-persistent-250"]
    assert r["save_seconds_estimate"] == pytest.approx(r["checkpoint_bytes"] / (250e6 * 1.2))
    assert r["storage"]["bandwidth_bytes_per_s"] == tier.bandwidth_bytes_per_s()


def test_incomplete_checkpoints_are_reported(tmp_path):
    dist(tmp_path, 100)
    dist(tmp_path, 200, drop=("__2_0.distcp", "common.pt"))
    legacy(tmp_path, 300, tp=2, pp=2, skip=("mp_rank_01_001",))
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("100")
    r = scan_checkpoints(tmp_path)
    by = {c["iteration"]: c for c in r["checkpoints"]}
    assert by[100]["complete"] and r["latest_complete"] == 100
    assert not by[200]["complete"] and "common.pt missing" in by[200]["problems"]
    assert any("rank(s) [2]" in p for p in by[200]["problems"])
    assert by[300]["layout"] == "legacy" and (
        by[300]["tensor_parallel_size"],
        by[300]["pipeline_parallel_size"],
    ) == (2, 2)
    assert any("(1, 1)" in p for p in by[300]["problems"])
    assert any("newer than the tracker" in p for p in by[300]["problems"])


def test_legacy_complete_and_tracker_pointing_nowhere(tmp_path):
    legacy(tmp_path, 10, tp=4)
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("20")
    r = scan_checkpoints(tmp_path, storage="amlfs-40")
    assert r["checkpoints"][0]["complete"] and r["checkpoints"][0]["tensor_parallel_size"] == 4
    assert "points to iteration 20" in r["problems"][0]
    assert r["storage"]["bandwidth_bytes_per_s"] == pytest.approx(19.2e9)  # AMLFS 40 (docs/sources.md)


def test_keep_last_dry_run_then_delete_never_the_tracked_one(tmp_path):
    for it in (100, 200, 300, 400):
        dist(tmp_path, it)
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("200")
    r = scan_checkpoints(tmp_path, keep_last=1)
    c = r["cleanup"]
    assert c["dry_run"] and [os.path.basename(p) for p in c["delete"]] == ["iter_0000100", "iter_0000300"]
    assert (tmp_path / "iter_0000100").exists()
    r = scan_checkpoints(tmp_path, keep_last=1, delete=True)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["iter_0000200", "iter_0000400"]
    assert r["cleanup"]["freed_bytes"] > 0 and len(r["cleanup"]["deleted"]) == 2


def test_bad_inputs(tmp_path):
    with pytest.raises(UsageError, match="no such checkpoint directory"):
        scan_checkpoints(tmp_path / "nope")
    with pytest.raises(UsageError, match="--keep-last"):
        scan_checkpoints(tmp_path, keep_last=0)
    with pytest.raises(UsageError, match="--storage"):
        scan_checkpoints(tmp_path, storage="ebs")
    assert scan_checkpoints(tmp_path)["checkpoints"] == []


def test_keep_last_never_deletes_the_newest_complete_and_flags_a_broken_tracker(tmp_path):
    legacy(tmp_path, 10, tp=1)
    (tmp_path / "iter_0000020" / "mp_rank_00").mkdir(parents=True)  # a save that wrote nothing
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("20")
    r = scan_checkpoints(tmp_path, keep_last=1, delete=True)
    assert r["cleanup"]["delete"] == [] and r["cleanup"]["deleted"] == []
    assert (tmp_path / "iter_0000010" / "mp_rank_00" / "model_optim_rng.pt").is_file()
    assert r["latest_complete"] == 10
    assert len(r["problems"]) == 1 and "points to iteration 20" in r["problems"][0]
    assert "incomplete" in r["problems"][0] and "model_optim_rng.pt missing" in r["problems"][0]


def test_keep_last_keeps_newest_complete_below_partial_saves(tmp_path):
    for it in (100, 200, 300):
        dist(tmp_path, it)
    dist(tmp_path, 400, drop=("common.pt",))
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("400")
    r = scan_checkpoints(tmp_path, keep_last=1, delete=True)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["iter_0000300", "iter_0000400"]
    assert [os.path.basename(p) for p in r["cleanup"]["deleted"]] == ["iter_0000100", "iter_0000200"]
    assert any("incomplete" in p for p in r["problems"])
