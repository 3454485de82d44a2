"""The one Megatron flag table (facts/megatron_flags.py) and what is generated from it.

The trainer's parser, ``workshop plan``'s parser and --search set, the planner's readers and the
job file's type checks must agree with each other because they are made from the same rows; these
tests read each of them back independently (argparse actions, dataclass fields, the job checks) and
compare. The last tests grep the package so that a choice tuple or a number check is not written a
second time outside the table.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
from pathlib import Path

import pytest

from workshop_lib.errors import UsageError
from workshop_lib.facts import megatron_flags as mf
from workshop_lib.launch import jobspec
from workshop_lib.plan import cli as plan_cli
from workshop_lib.plan.api import plan_flags, plan_json, resolve_args
from workshop_lib.plan.config import (
    ModelConfig,
    ParallelConfig,
    model_from_args,
    normalize_args,
    parallel_from_args,
)
from workshop_lib.plan.jobfile import args_from_tokens
from workshop_lib.train.arguments import build_parser

PACKAGE = Path(__file__).resolve().parents[1] / "workshop_lib"


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {o[2:]: a for a in parser._actions for o in a.option_strings if o.startswith("--")}


def _plan_parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser()
    sub = top.add_subparsers()
    plan_cli.register(sub)
    return sub.choices["plan"]


def _kind(action: argparse.Action) -> type:
    if action.nargs == 0:
        return bool
    if action.nargs == "*":
        return list
    return action.type or str


def test_every_trainer_flag_is_a_row_and_the_parser_says_what_the_row_says():
    trainer = _options(build_parser())
    trainer.pop("help")
    rows = {f.name: f for f in mf.accepted_by(mf.TRAINER)}
    assert set(trainer) == set(rows)
    for name, action in trainer.items():
        row = rows[name]
        assert _kind(action) is row.type, name
        assert tuple(action.choices or ()) == row.choices, name
        assert action.help == row.help, name
        if row.type not in (bool, list):
            assert action.default == row.default, name
    groups = [g.title for g in build_parser()._action_groups[2:]]
    assert groups == list(dict.fromkeys(f.group for f in mf.accepted_by(mf.TRAINER)))


def test_plan_flags_are_a_subset_of_the_trainers_with_the_same_choices():
    trainer = _options(build_parser())
    plan = _options(_plan_parser())
    megatron_in_plan = {n for n in plan if n in mf.BY_NAME}
    assert megatron_in_plan == set(mf.names(mf.accepted_by(mf.PLAN)))
    assert megatron_in_plan <= set(trainer)
    for name in megatron_in_plan:
        assert tuple(plan[name].choices or ()) == tuple(trainer[name].choices or ()), name
        assert _kind(plan[name]) in (bool, str) or trainer[name].type is int, name
    # The plan's own options are not Megatron flags the table would have to describe.
    assert {"model", "gpu", "nodes", "search", "json", "hf-config"} <= set(plan) - megatron_in_plan


def test_job_file_types_equal_the_trainers():
    """numeric_flags/multi_value_flags against the trainer's parser, read independently of the table."""
    trainer = _options(build_parser())
    numeric = {n: a.type for n, a in trainer.items() if a.type in (int, float) and a.nargs is None}
    assert {n: t for n, t in jobspec.numeric_flags().items() if n in trainer} == numeric
    assert {n for n, a in trainer.items() if a.nargs == "*"} <= jobspec.multi_value_flags()
    assert "data-path" in jobspec.multi_value_flags() and "save" not in jobspec.multi_value_flags()


def test_planner_rows_fill_existing_attributes_with_the_rows_values():
    fields = {
        "model": {f.name for f in dataclasses.fields(ModelConfig)},
        "parallel": {f.name for f in dataclasses.fields(ParallelConfig)},
    }
    # (--num-query-groups counts only with --group-query-attention, as in Megatron)
    base = {
        "num-layers": 4,
        "hidden-size": 64,
        "num-attention-heads": 4,
        "seq-length": 32,
        "group-query-attention": True,
    }
    for row in mf.FLAGS:
        if not row.attr:
            continue
        assert row.attr in fields[row.config], row.name
        values = row.choices or ((True,) if row.type is bool else (3,))
        for value in values:
            args = normalize_args({**base, row.name: value})
            cfg = model_from_args(args)[0] if row.config == "model" else parallel_from_args(args)
            assert getattr(cfg, row.attr) == (row.sets if row.type is bool else value), (row.name, value)
    assert set(plan_cli._SEARCHABLE.values()) <= fields["parallel"]
    assert plan_cli._SEARCHABLE["tensor-model-parallel-size"] == "tensor_model_parallel_size"


def test_reader_refuses_a_choice_outside_the_row_and_accepts_aliases():
    with pytest.raises(UsageError, match="args.recompute-method: 'blocks' is not one of uniform, block"):
        parallel_from_args(normalize_args({"recompute-method": "blocks"}))
    assert parallel_from_args(normalize_args({"tp": 4})).tensor_model_parallel_size == 4
    assert normalize_args({"--pipeline_parallel_size": 2}) == {"pipeline-model-parallel-size": 2}


def test_layout_is_a_dict_and_its_strings_read_back_to_it():
    m, par, _ = resolve_args(
        {"model": "mixtral-8x7b", "tensor-model-parallel-size": 2, "sequence-parallel": True, "bf16": True,
         "recompute-granularity": "full", "recompute-method": "block", "fp8-format": "hybrid"}
    )  # fmt: skip
    flags = plan_flags(m, par)
    assert flags["tensor-model-parallel-size"] == 2 and flags["sequence-parallel"] is True
    tokens = mf.format_flags(flags)
    assert "--sequence-parallel" in tokens and "--recompute-method=block" in tokens
    assert args_from_tokens(tokens) == flags
    assert plan_json({"valid": True, "flags": flags, "details": {}}) == {
        "valid": True,
        "megatron_args": tokens,
        "details": {},
    }
    assert mf.format_flags({"bf16": False, "lr": None, "split": "98,2,0"}) == ["--split=98,2,0"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0.3", True), ("-1e-5", True), ("7", True), (2, True), ("/data/a", False), ("", False), (True, False),
     (None, False), ("--save", False)],
)  # fmt: skip
def test_is_number(text, expected):
    assert mf.is_number(text) is expected


def test_parse_argv_reads_both_forms_and_lists():
    argv = ["--num-layers", "32", "--swiglu", "--lr=3e-5", "--data-path", "0.7", "/d/a", "0.3", "/d/b",
            "--normalization", "RMSNorm"]  # fmt: skip
    assert mf.parse_argv(argv) == {"num-layers": 32, "swiglu": True, "lr": 3e-5,
                                   "data-path": ["0.7", "/d/a", "0.3", "/d/b"], "normalization": "RMSNorm"}  # fmt: skip
    flags = {"tensor-model-parallel-size": 2, "bf16": True, "recompute-granularity": "full"}
    assert mf.parse_argv(mf.format_flags(flags)) == flags
    for bad in (["32"], ["--num-layers", "32", "33"]):
        with pytest.raises(ValueError):
            mf.parse_argv(bad)


def test_typed_value_keeps_paths_and_choices_as_text():
    assert mf.typed_value("tokenizer-model", "123") == "123"
    assert mf.typed_value("lr", "3e-5") == 3e-5 and mf.typed_value("micro-batch-size", "2") == 2
    assert mf.typed_value("not-in-the-table", "1.5") == 1.5


def _string_literals(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Tuple | ast.List | ast.Set) and len(node.elts) >= 2:
            consts = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if len(consts) == len(node.elts) and all(v is None or isinstance(v, str) for v in consts):
                yield node.lineno, {v for v in consts if v is not None}


def test_no_choice_tuple_is_written_outside_the_table():
    """A tuple/list/set literal holding every choice of a flag (perhaps with "none") is a second copy."""
    table = PACKAGE / "facts" / "megatron_flags.py"
    copies = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == table:
            continue
        for line, values in _string_literals(path):
            for row in mf.FLAGS:
                choices = set(row.choices)
                if len(choices) >= 2 and choices <= values <= choices | {"none"}:
                    copies.append(f"{path.relative_to(PACKAGE.parent)}:{line} writes --{row.name}'s choices")
    assert not copies, "read them from facts/megatron_flags.py instead: " + "; ".join(copies)


def _number_checks(tree: ast.AST):
    """``try: float(x)`` with the result thrown away: the "is this a number" idiom."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and len(node.body) == 1 and isinstance(node.body[0], ast.Expr):
            call = node.body[0].value
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "float":
                yield node.lineno


def test_no_second_number_check():
    """'Is this flag value a number' is facts.megatron_flags.is_number, not a private copy."""
    copies = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "megatron_flags.py"
        for line in _number_checks(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not copies, "use facts.megatron_flags.is_number: " + ", ".join(copies)
    assert list(_number_checks(ast.parse((PACKAGE / "facts" / "megatron_flags.py").read_text()))), (
        "the check moved"
    )


def test_shape_rows_are_model_flags_the_checkpoint_check_reads():
    """The flags that decide tensor shapes are named once, in the table; the trainer's checkpoint
    check (continued pre-training and resumes) compares exactly those, as the trainer parses them."""
    from workshop_lib.train.arguments import build_parser
    from workshop_lib.train.checkpointing import SHAPE_FLAGS

    rows = [f for f in mf.FLAGS if f.shape]
    assert {f.group for f in rows} <= {mf.NET, mf.MOE}
    assert {"num-layers", "hidden-size", "num-query-groups", "swiglu", "num-experts"} <= {
        f.name for f in rows
    }
    assert tuple((f.dest, f"--{f.name}") for f in rows) == SHAPE_FLAGS
    dests = {a.dest for a in build_parser()._actions}
    assert all(dest in dests for dest, _ in SHAPE_FLAGS)


def test_plan_rows_are_kinds_the_plan_reads():
    """workshop plan's parser and the planner's readers handle whole numbers, bare flags, choices and
    (parser only) paths; a row of any other type must come with its reader, so none exists today."""
    for f in mf.FLAGS:
        if mf.PLAN in f.use:
            assert f.type in (int, bool, str), f
            assert f.type is not str or f.choices or f.attr is None, f
