"""The run directory's one owner (``paths.RunDir``), the hand-over files' one reader and writer
(``handover.py``), the two names of a dataset, and the notebooks' entry points (issue 13, part 2)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest

from workshop_lib import handover, paths
from workshop_lib.data import api as data_api
from workshop_lib.data.blend import blend_report, resolve_prefix
from workshop_lib.data.indexed import IndexedDatasetWriter
from workshop_lib.errors import UsageError
from workshop_lib.monitor import api as monitor_api
from workshop_lib.paths import RunDir, data_path_for
from workshop_lib.plan import api as plan_api
from workshop_lib.plan.jobfile import job_dict

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "workshop_lib"


def _dataset_json(run: RunDir, **over) -> Path:
    run.data.mkdir(parents=True, exist_ok=True)
    fields = dict(data_path=run.data_path(), tokenizer_type="HuggingFaceTokenizer",
                  tokenizer_model=paths.SAMPLE_TOKENIZER, vocab_size=8192, eod_token_id=0, documents=10, tokens=1000)  # fmt: skip
    fields.update(over)
    return handover.write_dataset_info(run, **fields)


# ---- RunDir: every path under the run directory ---------------------------------------------------
def test_run_dir_default_is_absolute_wherever_the_kernel_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "DEFAULT_RUN_DIR", Path("rel") / "run")
    monkeypatch.chdir(tmp_path)
    assert RunDir.at(None).root == tmp_path / "rel" / "run"
    assert RunDir.at("").root == RunDir.at(None).root
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")  # a notebook kernel's directory: the given path is its own
    assert RunDir.at("x").root == tmp_path / "notebooks" / "x"
    run = RunDir.at(tmp_path / "r")
    assert RunDir.at(run) is run


def test_run_dir_names_the_hand_over_files(tmp_path):
    run = RunDir.at(tmp_path)
    rel = {k: str(getattr(run, k).relative_to(tmp_path)) for k in (
        "dataset_info", "job_yaml", "base", "base_model_json", "train_log", "checkpoints", "tensorboard",
        "local_job", "evaluation", "export_hf")}  # fmt: skip
    assert rel == {
        "dataset_info": "data/dataset.json",
        "job_yaml": "plan/job.yaml",
        "base": "base",
        "base_model_json": "base/workshop_model.json",
        "train_log": "train/train.log",
        "checkpoints": "train/checkpoints",
        "tensorboard": "train/tensorboard",
        "local_job": "train/local_job.json",
        "evaluation": "monitor/evaluation.json",
        "export_hf": "export/hf",
    }


def test_output_prefix_and_data_path_are_two_names_for_one_dataset(tmp_path):
    run = RunDir.at(tmp_path)
    assert run.output_prefix() == tmp_path / "data" / "techpulse"
    assert run.data_path() == str(tmp_path / "data" / "techpulse_text_document")
    for ds in ("general", "heldout_domain", "heldout_general"):
        assert run.data_path(ds) == data_path_for(run.output_prefix(ds))
    assert data_api.data_path(tmp_path) == run.data_path()
    with pytest.raises(KeyError):
        run.output_prefix("techpulse_text_document")


# ---- no path under the run directory built by hand outside paths.py ------------------------------
# A path joined by hand: ``x / "train" / "checkpoints"``, ``root / "data" / "dataset.json"``...
HAND_BUILT = re.compile(
    r"""/ ["'](data|plan|train|base|monitor|export|checkpoints|tensorboard|dataset\.json|job\.yaml|"""
    r"""train\.log|local_job\.json|evaluation\.json)["']"""
)


def test_run_dir_paths_are_built_only_in_paths_py():
    offenders = []
    for f in PACKAGE.rglob("*.py"):
        if f.name == "paths.py" and f.parent == PACKAGE:
            continue
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            # the cluster volume's layout (under its mount path) is not the run directory; "e.g." is a hint
            if HAND_BUILT.search(code) and "mount" not in code and "e.g." not in code:
                offenders.append(f"{f.relative_to(REPO)}:{n}: {line.strip()}")
    assert not offenders, offenders


def test_dataset_json_is_read_only_through_handover():
    readers = []
    for f in PACKAGE.rglob("*.py"):
        text = f.read_text(encoding="utf-8")
        if f.name == "handover.py":
            continue
        if re.search(r"json\.loads?\([^)]*dataset_info", text) or "read_dataset_json" in text:
            readers.append(str(f.relative_to(REPO)))
    assert not readers, readers


# ---- dataset.json: one strict reader for every room -----------------------------------------------
def test_planner_reads_dataset_json_as_strictly_as_the_trainer(tmp_path):
    run = RunDir.at(tmp_path)
    assert plan_api.read_dataset(run) is None  # before notebook 01: the preset's vocabulary
    assert (
        job_dict({"model": "techpulse-7b"}, run_dir=run.root, backend="local")["args"]["vocab-size"] == 32000
    )
    _dataset_json(run)
    info = plan_api.read_dataset(run)
    assert info["vocab_size"] == 8192 and info["data_path"] == run.data_path()
    run.dataset_info.write_text('{"data_path": "/d", "vocab_size": "8192"', encoding="utf-8")  # cut short
    for read in (plan_api.read_dataset, lambda r: job_dict({"model": "techpulse-7b"}, run_dir=r.root)):
        with pytest.raises(UsageError, match=r"dataset\.json: not valid JSON"):
            read(run)
    run.dataset_info.write_text(
        json.dumps({"data_path": "/d", "vocab_size": True, "tokens": 1}), encoding="utf-8"
    )
    with pytest.raises(UsageError, match="vocab_size is True, not a whole number"):
        plan_api.read_dataset(run)


def test_data_room_reexports_the_one_reader():
    from workshop_lib.data import dataset_info

    assert dataset_info.read_dataset_info is handover.read_dataset_info
    assert dataset_info.write_dataset_info is handover.write_dataset_info
    assert data_api.read_dataset_info is handover.read_dataset_info


# ---- job.yaml: notebook 02's job built by plan code ------------------------------------------------
def test_write_job_is_what_notebook_02_built_by_hand(tmp_path):
    from workshop_lib.facts.models import preset
    from workshop_lib.plan.layout import layout_flags

    run = RunDir.at(tmp_path)
    _dataset_json(run, vocab_size=8192)
    flags = {**layout_flags("techpulse-7b", tp=2, micro_batch_size=1, global_batch_size=512,
                            sequence_parallel=True, distributed_optimizer=True), "vocab-size": 8192}  # fmt: skip
    path = plan_api.write_job(run, flags, instance_type="p4d.24xlarge", nodes=2, backend="local")
    assert path == run.job_yaml
    job = handover.read_job_yaml(run)
    # What the notebook did before: preset + layout flags, minus the vocabulary the tokenizer brings.
    by_hand = {**preset("techpulse-7b"), **{k: v for k, v in flags.items() if k != "model"}}
    by_hand.pop("vocab-size")
    expected = job_dict(by_hand, instance_type="p4d.24xlarge", nodes=2, backend="local", run_dir=run.root)
    assert job == expected
    assert list(job["args"]) == list(expected["args"])
    assert "vocab-size" not in job["args"]
    assert job["args"]["data-path"] == run.data_path()
    assert job["args"]["save"] == str(run.checkpoints) and job["args"]["tensorboard-dir"] == str(
        run.tensorboard
    )


def test_empty_job_yaml_keeps_the_launch_error(tmp_path):
    from workshop_lib.launch import api as launch_api

    run = RunDir.at(tmp_path)
    run.plan.mkdir(parents=True)
    run.job_yaml.write_text("", encoding="utf-8")
    assert handover.read_job_yaml(run) is None
    assert launch_api.read_job(run) == {} and monitor_api.seq_length(run) is None
    with pytest.raises(UsageError):
        launch_api.load_job(run)
    handover.write_job_yaml(run, {"args": {"seq-length": 256}})
    assert monitor_api.seq_length(run) == 256


def test_job_yaml_errors_point_at_the_contract_in_the_repository(tmp_path):
    """A missing or malformed job file names docs/cli.md (where the job YAML is described), not "the
    contract", a document a participant cannot find."""
    from workshop_lib.launch import jobspec

    with pytest.raises(UsageError, match=r"docs/cli\.md") as missing:
        handover.read_job_yaml(RunDir.at(tmp_path))
    assert "the contract" not in str(missing.value)
    with pytest.raises(UsageError, match=r"docs/cli\.md"):
        jobspec.from_dict(["not", "a", "mapping"], "job.yaml")


def test_calculator_writes_to_the_same_default_run_dir(tmp_path, monkeypatch):
    pytest.importorskip("ipywidgets")
    from workshop_lib.widgets.calculator import Calculator

    monkeypatch.setattr(paths, "DEFAULT_RUN_DIR", tmp_path / "run")
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")  # where a notebook kernel starts
    out = Calculator(
        model="techpulse-7b", instance_type="p4d.24xlarge", nodes=2, tp=2, backend="local"
    ).write_job()
    assert out == tmp_path / "run" / "plan" / "job.yaml"
    assert handover.read_job_yaml(out)["args"]["save"] == str(tmp_path / "run" / "train" / "checkpoints")


# ---- blend: no guessing where the caller knows which name it has ----------------------------------
def _make(prefix: Path) -> None:
    w = IndexedDatasetWriter(prefix, np.uint16)
    w.add_documents(np.ones(4000, np.uint16), np.array([40] * 100))
    w.finalize()


def test_blend_takes_data_paths_without_probing(tmp_path):
    run = RunDir.at(tmp_path)
    run.data.mkdir(parents=True)
    _make(Path(run.data_path()))
    out_prefix = str(run.output_prefix())
    assert resolve_prefix(out_prefix) == run.data_path()  # the CLI's PREFIX: either name is accepted
    assert resolve_prefix(out_prefix, "output_prefix") == run.data_path()
    assert resolve_prefix(run.data_path() + ".idx", "data_path") == run.data_path()
    # A data path is used as given: an output prefix handed over as a data path is not silently "fixed".
    assert resolve_prefix(out_prefix, "data_path") == out_prefix
    kw = dict(
        seq_length=16, global_batch_size=2, train_iters=5, split="98,2,0", eval_iters=1, eval_interval=5
    )
    r = data_api.blend_report([(run.data_path(), 1)], **kw)
    assert r == blend_report([f"{out_prefix}:1"], **kw)
    with pytest.raises(Exception, match="techpulse"):
        data_api.blend_report([(out_prefix, 1)], **kw)
    with pytest.raises(UsageError, match="must be positive"):
        data_api.blend_report([(run.data_path(), 0)], **kw)


# ---- notebook 04's examples are shipped data, each with the verdict its README names -----------
def test_shipped_examples_give_their_verdicts():
    logs = sorted((paths.EXAMPLES_DIR / "logs").glob("*.log"))
    assert len(logs) >= 10
    for log in logs:
        found = monitor_api.diagnose_log(monitor_api.example_log(log.name))
        if log.name.startswith("fail_"):
            assert found and found[0].label == log.stem[len("fail_") :], log.name
        else:
            assert found == [], log.name
    assert monitor_api.nccl_health(monitor_api.example_log("healthy_efa_start.log")).message.startswith(
        "OK: EFA"
    )
    assert not monitor_api.nccl_health(
        monitor_api.example_log("fail_efa_plugin_missing.log")
    ).message.startswith("OK")
    report = monitor_api.gpu_report(monitor_api.example_gpu("dmon_low_two_pods.txt"))
    assert "worker-0" in report["verdict"], report["verdict"]
    with pytest.raises(FileNotFoundError, match="shipped"):
        monitor_api.example_log("../../README.md")


# ---- each notebook imports its room's api (and a widget or two), nothing from the test tree -------
ALLOWED = {
    "01_data_prep.ipynb": {"workshop_lib.data.api"},
    "02_parallelism.ipynb": {
        "workshop_lib.plan.api",
        "workshop_lib.widgets.plan_views",
        "workshop_lib.widgets.calculator",
    },
    "03_launch.ipynb": {"workshop_lib.launch.api", "workshop_lib.convert.api"},
    "04_monitor.ipynb": {"workshop_lib.monitor.api", "workshop_lib.convert.api", "workshop_lib.widgets.live"},
}


def notebook_modules(nb: Path) -> set[str]:
    """The workshop_lib modules a notebook's code cells import (``from pkg import api`` counts as pkg.api)."""
    mods: set[str] = set()
    for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"])
        src = "\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("workshop_lib"):
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    is_module = (REPO / sub.replace(".", "/")).with_suffix(".py").is_file()
                    mods.add(sub if is_module or (REPO / sub.replace(".", "/")).is_dir() else node.module)
            elif isinstance(node, ast.Import):
                mods.update(a.name for a in node.names if a.name.startswith("workshop_lib"))
    return mods


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_notebook_imports_its_rooms_api(name):
    nb = REPO / "notebooks" / name
    assert notebook_modules(nb) <= ALLOWED[name]
    assert "tests/" not in nb.read_text(encoding="utf-8")


def test_run_notebooks_defaults_to_the_same_run_dir(tmp_path, monkeypatch):
    """`workshop run-notebooks` without --output-dir writes where the notebooks read by default,
    not to a runs/workshop relative to whatever directory the command was started in."""
    from workshop_lib import cli, journey

    seen = {}

    def fake_run(output_dir, **kw):
        seen["output_dir"] = output_dir
        raise SystemExit(0)

    monkeypatch.setattr(paths, "DEFAULT_RUN_DIR", tmp_path / "run")
    monkeypatch.setattr(journey, "run_notebooks", fake_run)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    with pytest.raises(SystemExit):
        cli.main(["run-notebooks", "--only", "01"])
    assert seen["output_dir"] == tmp_path / "run"


@pytest.mark.parametrize("text", ["- a list\n- not a job\n", "just text\n", "args: [1, 2]\nnodes: 2\n"])
def test_journey_summary_survives_a_job_yaml_that_is_not_a_mapping(tmp_path, text):
    """run-notebooks' closing summary reads job.yaml back; a file edited into a list or a string
    gives an empty plan summary, not an AttributeError after every notebook has run."""
    from workshop_lib.journey import summarise

    run = RunDir.at(tmp_path / "run")
    run.job_yaml.parent.mkdir(parents=True)
    run.job_yaml.write_text(text)
    plan = summarise(run)["plan"]
    assert plan is None or plan["tensor_model_parallel_size"] == 1


@pytest.fixture(scope="module")
def prepared_run(tmp_path_factory):
    """Notebook 01's two steps on the sample data, once for the replay tests."""
    run = RunDir.at(tmp_path_factory.mktemp("cpt") / "run")
    data_api.prepare_dataset(run.root, workers=1)
    return run


@pytest.mark.parametrize("weight", [0.0, 0.4])
def test_replay_blend_is_one_set_of_pairs(prepared_run, weight):
    """The replay blend comes back as (data path, weight) pairs, the form blend_report takes, and the
    --data-path string in dataset.json is made from them; no replay (weight 0) is the domain alone
    (Megatron refuses a zero weight), which notebook 01's blend cell used to fail on."""
    cpt = data_api.prepare_replay_and_heldout(prepared_run.root, workers=1, replay_weight=weight)
    domain, general = prepared_run.data_path("domain"), prepared_run.data_path("general")
    want = [(domain, 1 - weight), (general, weight)] if weight else [(domain, 1.0)]
    assert cpt["datasets"] == want
    assert handover.read_dataset_info(prepared_run)["blend"] == (
        f"0.6 {domain} 0.4 {general}" if weight else domain
    )
    report = data_api.blend_report(
        cpt["datasets"], seq_length=128, global_batch_size=8, train_iters=30, split="90,10,0"
    )
    assert [d["prefix"] for d in report["datasets"]] == [p for p, _ in want]


# ---- re-running notebook 03/04's import or export: the earlier output is replaced whole ----------
def _folder(path: Path, text: str) -> Path:
    path.mkdir(parents=True)
    (path / "weights").write_text(text)
    return path


def test_a_ctrl_c_while_the_new_model_replaces_the_old_leaves_one_whole_model(
    tmp_path, monkeypatch, ctrl_c_at
):
    from workshop_lib.convert import api as convert_api

    final = _folder(tmp_path / "base", "old")
    tmp = _folder(tmp_path / "base.tmp", "new")
    ctrl_c_at(Path, "rename", 2)  # the kernel's interrupt button, between the two renames
    with pytest.raises(KeyboardInterrupt):
        convert_api._replace(tmp, final)
    monkeypatch.undo()
    assert (final / "weights").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base"]
