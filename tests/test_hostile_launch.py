"""Hostile input to the launch commands (issue 11): one regression test per class, through the CLI.

Each test names the class it covers: shell injection into the sbatch script, YAML injection into
render-prep-job, ``$(VAR)`` expansion by Kubernetes, a value split into several argv tokens,
credentials printed, YAML bombs, API servers that never answer, non-regular job files, unusable
output paths, render-prep-job's rules, and numeric flags out of range. Resource tests run the
command in a subprocess with an address-space limit and a timeout, so a regression fails the test
instead of the machine.
"""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from workshop_lib.launch import jobspec

REPO = Path(__file__).resolve().parents[1]
EKS = REPO / "manifests/jobs/techpulse-eks.yaml"
BASE = yaml.safe_load(EKS.read_text())


def _job(tmp_path: Path, name: str = "job.yaml", **changes) -> Path:
    data = json.loads(json.dumps(BASE))
    args = changes.pop("args", None)
    data.update(changes)
    if args:
        data["args"].update(args)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _one_line(res, code: int) -> str:
    err = res.err.strip()
    assert res.code == code, (res.code, res.err, res.out[:300])
    assert err and len(err.splitlines()) == 1, res.err
    assert "Traceback" not in res.err
    return err


def _k8s_expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' expansion of command/args/env values (third_party/forked/golang/expansion)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                end = text.find(")", i + 2)
                if end != -1:
                    name = text[i + 2 : end]
                    out.append(env.get(name, f"$({name})"))
                    i = end + 1
                    continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _sbatch_argv(script: str, tmp_path: Path) -> list[str]:
    """Run the sbatch script under bash with ``srun`` and ``scontrol`` stubbed: the argv srun gets."""
    path = tmp_path / "job.sbatch"
    path.write_text(script)
    out = tmp_path / "argv.bin"
    stub = (
        f'srun() {{ printf "%s\\0" "$@" > {out}; }}; scontrol() {{ echo node-0; }}; '
        f"export -f srun scontrol; bash {path}"
    )
    env = {
        "PATH": os.environ["PATH"],
        "SLURM_JOB_NODELIST": "node-0",
        "SLURM_NNODES": "2",
        "SLURM_JOB_ID": "7",
    }
    proc = subprocess.run(
        ["bash", "-c", stub], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    return out.read_bytes().decode().split("\0")[:-1]


def _trainer_args(argv: list[str]) -> list[str]:
    return argv[argv.index("workshop_lib.train") + 1 :]


# ---- 6: shell injection into the sbatch script ---------------------------------------------------
def test_sbatch_script_injection_through_the_file_name_and_values(cli, tmp_path):
    evil = _job(tmp_path, "evil\ntouch PWNED\n#.yaml")
    res = cli("render", "--target", "slurm", "--config", evil)
    assert "rename the file" in _one_line(res, 2) and res.out == ""
    assert "\\n" in res.err  # the name is shown escaped, never as a new line

    # Values that mean something to a shell reach the trainer as written, one argv token each.
    args = {
        "save": "/shared/x; touch PWNED",
        "load": "/shared/$(touch PWNED)`touch PWNED`'\"",
        "data-path": ["0.5", "/shared/a b", "0.5", "/shared/$HOME"],
    }
    job = _job(tmp_path, env={"NOTE": "it's $(id) `id`"}, args=args)
    res = cli("render", "--target", "slurm", "--config", job)
    assert res.code == 0, res.err
    assert "export NOTE='it'\"'\"'s $(id) `id`'" in res.out
    argv = _sbatch_argv(res.out, tmp_path)
    assert not (tmp_path / "PWNED").exists()
    assert argv[0] == f"--container-image={BASE['image']}"
    assert _trainer_args(argv) == jobspec.flag_tokens(jobspec.load(job).args)
    # An image is a reference and nothing else: shell characters are refused, not quoted.
    for image in ("registry/img:$(touch${IFS}PWNED)", "img;id", "img`id`", "'img'"):
        res = cli("render", "--target", "slurm", "--config", _job(tmp_path, "img.yaml", image=image))
        assert "image" in _one_line(res, 2)


# ---- 7: YAML injection into render-prep-job ------------------------------------------------------
@pytest.mark.parametrize(
    "flag, value",
    [
        ("--output-prefix", "/shared/out\n---\napiVersion: v1\nkind: Secret"),
        ("--input", "/shared/in.jsonl\n#"),
        ("--prep-args", "--tokenizer-model '/shared/t\n---\nkind: Secret'"),
    ],
)
def test_render_prep_job_refuses_a_newline(cli, tmp_path, flag, value):
    argv = {"--input": ["/shared/in.jsonl"], "--output-prefix": ["/shared/out"]}
    argv.pop(flag, None)
    flat = [x for k, vs in argv.items() for x in (k, *vs)] + [f"{flag}={value}"]
    res = cli("render-prep-job", *flat, "--shards", "2", "--out", tmp_path / "job.yaml")
    assert flag in _one_line(res, 2) and "control character" in res.err
    assert not (tmp_path / "job.yaml").exists()


def test_render_prep_job_is_one_yaml_document(cli):
    res = cli(
        "render-prep-job",
        "--input",
        "/shared/a.jsonl",
        "/shared/b.jsonl",
        "--output-prefix",
        "/shared/o",
        "--shards",
        "2",
    )
    assert res.code == 0, res.err
    docs = list(yaml.safe_load_all(res.out))
    assert len(docs) == 1 and docs[0]["kind"] == "Job"


# ---- 8: $(VAR) expansion by Kubernetes --------------------------------------------------------------
def test_variable_references_are_literal_on_every_target(cli, tmp_path):
    job = _job(
        tmp_path,
        env={"HF_TOKEN": {"secret": "hf-token", "key": "token"}, "NOTE": "$(HF_TOKEN) $$ $"},
        args={"save": "/shared/$(HF_TOKEN)", "wandb-exp-name": "a$$b$(X"},
    )
    spec = jobspec.load(job)
    res = cli("render", "--config", job)
    assert res.code == 0, res.err
    (pj,) = [d for d in yaml.safe_load_all(res.out) if d["kind"] == "PyTorchJob"]
    container = pj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    env = {"HF_TOKEN": "hf_LEAKEDLEAKEDLEAKED", "RANK": "1", "MASTER_ADDR": "m", "MASTER_PORT": "23456"}
    expanded = [_k8s_expand(t, env) for t in container["command"]]
    # The kit's own rendezvous references are expanded; the job's values reach the trainer as written.
    assert "--node_rank=1" in expanded and "--master_addr=m" in expanded
    assert _trainer_args(expanded) == jobspec.flag_tokens(spec.args)
    assert not any("hf_LEAKED" in t for t in expanded)
    note = next(e for e in container["env"] if e["name"] == "NOTE")
    assert _k8s_expand(note["value"], env) == "$(HF_TOKEN) $$ $"
    # The sbatch script passes the same tokens.
    res = cli("render", "--target", "slurm", "--config", job)
    assert res.code == 0, res.err
    os.environ.setdefault("HF_TOKEN", "x")
    argv = _sbatch_argv(res.out.replace(': "${HF_TOKEN:?', ': "${HF_TOKEN:-x}" # '), tmp_path)
    assert _trainer_args(argv) == _trainer_args(expanded)
    # `check` warns, naming the fields and never the values.
    res = cli("check", "--config", job, "--json")
    found = [f for f in res.json()["findings"] if f["rule"] == "variable-reference"]
    assert {f["message"].split(" ")[0] for f in found} == {"args.save", "env.NOTE"}
    assert all(f["severity"] == "warning" for f in found)


# ---- 9: one value, one argv token -----------------------------------------------------------------
def test_a_value_with_whitespace_stays_one_token(cli, tmp_path):
    bad = _job(tmp_path, args={"data-path": "/shared/x --save /tmp/evil"})
    for cmd in ("render", "check", "apply"):
        res = cli(
            cmd,
            "--config",
            bad,
            *(["--backend", "local", "--run-dir", tmp_path / "r"] if cmd == "apply" else []),
        )
        assert "args.data-path" in _one_line(res, 2) and "read it as a flag" in res.err
    listed = _job(tmp_path, "listed.yaml", args={"data-path": ["/shared/a", "--save", "/tmp/evil"]})
    assert "args.data-path" in _one_line(cli("render", "--config", listed), 2)

    spaced = _job(
        tmp_path,
        "spaced.yaml",
        args={"save": "/shared/my ckpt --load /tmp/evil", "data-path": "0.3 /shared/a 0.7 /shared/b"},
    )
    tokens = jobspec.flag_tokens(jobspec.load(spaced).args)
    assert "--save=/shared/my ckpt --load /tmp/evil" in tokens
    assert tokens[tokens.index("--data-path") + 1 : tokens.index("--data-path") + 5] == [
        "0.3",
        "/shared/a",
        "0.7",
        "/shared/b",
    ]
    res = cli("render", "--config", spaced)
    (pj,) = [d for d in yaml.safe_load_all(res.out) if d["kind"] == "PyTorchJob"]
    command = pj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["command"]
    assert _trainer_args(command) == tokens
    res = cli("render", "--target", "slurm", "--config", spaced)
    assert _trainer_args(_sbatch_argv(res.out, tmp_path)) == tokens
    from workshop_lib.launch.backends.local import local_args

    local = jobspec.flag_tokens(
        local_args({}, {"data_path": "/d/a b", "tokenizer_model": "/t"}, _RunDir(tmp_path), 5)
    )
    assert "--data-path" in local and "--tokenizer-model=/t" in local


class _RunDir:
    def __init__(self, root: Path):
        self.checkpoints = root / "ckpt"


# ---- 10: credentials printed -----------------------------------------------------------------------
SHAPED = {
    "WANDB_KEY": "0123456789abcdef" + "9f8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6"[:24],
    "NOTE": "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "DATABASE_URL": "postgres://admin:hunter2hunter2@db.internal:5432/runs",
    "GH_PAT": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "SLACK_HOOK": "xoxb-123456789012-abcdefghijkl",
    "AWS_ID": "AKIAIOSFODNN7EXAMPLE",
}


def test_credentials_are_found_by_their_shape_and_never_echoed(cli, tmp_path):
    job = _job(tmp_path, env={**SHAPED, "NCCL_DEBUG": "WARN", "NCCL_SOCKET_IFNAME": "^lo,docker0"})
    res = cli("check", "--config", job, "--json")
    assert res.code == 0, res.err
    flagged = {f["message"].split(" ")[0] for f in res.json()["findings"] if f["rule"] == "secret-literal"}
    assert flagged == set(SHAPED)
    assert not any(v in res.out + res.err for v in SHAPED.values())
    res = cli("render", "--config", job)
    assert "a literal credential" in _one_line(res, 2) and "use a Secret" in res.err
    assert not any(v in res.out + res.err for v in SHAPED.values())


ORDINARY = (
    "TechPulse-EKS-2026-v3-Final-Release-Candidate",
    "megatron_cpt_techpulse_llama_3_1_8b_run_2026_11_23",
    "/shared/checkpoints/techpulse-7b/iter_0000500",
    "registry.example.com/megatron-training@sha256:" + "ab12" * 16,
    "^lo,docker0,veth",
    "https://wandb.example.com/team/project",
    "HuggingFaceTokenizer",
    "/opt/amazon/efa/lib:/opt/aws-ofi-nccl/lib:/usr/local/cuda/lib64",
)


def test_ordinary_values_are_not_taken_for_credentials():
    from workshop_lib.facts.secret_shapes import shape_of
    from workshop_lib.redact import redact

    for value in ORDINARY:
        assert shape_of(value) is None, value
        assert redact(f"job.yaml: env.X: {value} is wrong; the token expired") == (
            f"job.yaml: env.X: {value} is wrong; the token expired"
        )
    # The kit's own hints survive redaction.
    hint = "use a Secret: env: {HF_TOKEN: {secret: SECRET-NAME, key: KEY}}"
    assert redact(hint) == hint
    assert (
        redact('{"password": "hunter2!", "x": 1} api_key=abcd1234')
        == '{"password": "<redacted>", "x": 1} api_key=<redacted>'
    )


def test_redaction_and_env_references_built_to_backtrack_are_bounded():
    """A URL scheme was looked for at every word boundary ("a.a.a..." started one scan per letter):
    these five texts of 200 KB took 43 s, of 400 KB about three minutes; an env value of 1 MB of "$($(..."
    scanned to its end from every "$(". It runs in a child, so a regression fails on the timeout."""
    code = (
        "from workshop_lib.redact import redact; "
        "assert redact('x.https://user:pw@host/a') == 'x.https://<redacted>@host/a'; "
        "[redact(u * (400_000 // len(u))) for u in ('a.', 'a-', 'a:', 'a://', '1/')]; "
        "from workshop_lib.k8sfields import has_reference as ref; "
        "assert ref('$(a$b)') and ref('x $(a$(B)') and not ref('$(a'); assert not ref('$(' * 500_000)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=REPO)


class _EchoProxy(BaseHTTPRequestHandler):
    """An API server (or proxy) that echoes the request's headers in its error body."""

    def do_GET(self):  # noqa: N802 - http.server's naming
        body = json.dumps(
            {
                "kind": "Status",
                "status": "Failure",
                "code": 502,
                "message": f"upstream failed for {dict(self.headers)}",
            }
        ).encode()
        self.send_response(502, "Bad Gateway")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # quiet
        pass


def _kubeconfig(path: Path, server: str, token: str = "sekret-token-0123456789abcdef") -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return path


def test_server_text_and_urls_are_redacted(cli, tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoProxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        kc = _kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{server.server_port}")
        res = cli("status", "--name", "x", "--kubeconfig", kc)
        line = _one_line(res, 1)
        assert "502" in line and "<redacted>" in line and "sekret-token" not in line
    finally:
        server.shutdown()
        server.server_close()
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = _kubeconfig(tmp_path / "kc2", f"http://admin:hunter2hunter2@127.0.0.1:{port}")
    res = cli("status", "--name", "x", "--kubeconfig", kc)
    assert "cannot reach" in _one_line(res, 1) and "hunter2" not in res.err


def test_a_failing_exec_plugin_is_one_line(cli, tmp_path):
    kc = tmp_path / "kc"
    kc.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [
                    {
                        "name": "u",
                        "user": {
                            "exec": {
                                "apiVersion": "client.authentication.k8s.io/v1beta1",
                                "command": "sh",
                                "args": ["-c", "echo 'expired: Bearer abcdefghijklmnop' >&2; exit 1"],
                            }
                        },
                    }
                ],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    res = cli("status", "--name", "x", "--kubeconfig", kc)
    assert "credential plugin failed" in _one_line(res, 1) and "abcdefghijklmnop" not in res.err


# ---- 13 and 20: YAML bombs, huge and non-regular job files --------------------------------------
def _limited(args: list[str], tmp_path: Path, mem_mib: int = 1024, timeout: float = 60):
    """Run ``workshop ARGS`` in a subprocess with an address-space limit; (code, stderr, seconds)."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (mem_mib * 2**20, mem_mib * 2**20))

    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "workshop_lib.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return proc.returncode, proc.stderr, time.monotonic() - start


# A valid job whose `nodes` is 9 levels of 9 aliases (1.7 KB): 9**9 = 387M items once expanded.
_LEVELS = ["&a [x, x, x, x, x, x, x, x, x]"] + [
    f"&{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)
]
BOMB = EKS.read_text().replace("nodes: 2", "nodes: [" + ", ".join(_LEVELS) + "]")


def test_yaml_bombs_and_huge_files_are_refused_fast(tmp_path):
    """In a subprocess limited to 1 GiB: before the fix the bomb took 47-94 s and 2.5-3.1 GB, then MemoryError."""
    cases = {
        "bomb.yaml": (BOMB, "aliases"),
        "deep.yaml": ("args: " + "[" * 100_000 + "]" * 100_000 + "\n", "nested more than"),
        "huge.yaml": ("name: x\n# " + "x" * (2 * 2**20) + "\n", "at most"),
    }
    for name, (text, expected) in cases.items():
        (tmp_path / name).write_text(text)
        for cmd in ("render", "check") if name == "bomb.yaml" else ("check",):
            code, err, seconds = _limited([cmd, "--config", name], tmp_path, mem_mib=1024)
            assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, (name, err[:300])
            assert len(err) < 600 and seconds < 20, (name, len(err), seconds)


def test_big_values_are_clipped_in_messages(cli, tmp_path):
    base = EKS.read_text()
    cases = {
        "biglist.yaml": (base + "extra: [" + "1, " * 20_000 + "1]\n", "extra"),
        "biglist2.yaml": (base.replace("nodes: 2", "nodes: [" + "1, " * 20_000 + "1]"), "nodes"),
        "bigkey.yaml": (base + "  " + "k" * 1000 + ": 1\n", "not a Megatron flag name"),
        "bigvalue.yaml": (base.replace("image: ", "image: " + "x " * 50_000), "not an image reference"),
        "bigtype.yaml": (
            base.replace("instance_type: p4d.24xlarge", "instance_type: " + "p" * 50_000),
            "instance_type",
        ),
        "bigint.yaml": (base + "nodes2: " + "9" * 10_000 + "\n", "fix the file"),
    }
    for name, (text, expected) in cases.items():
        (tmp_path / name).write_text(text)
        res = cli("check", "--config", tmp_path / name)
        assert expected in _one_line(res, 2) and len(res.err) < 600, (name, res.err[:300])


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory", "dev-null-symlink"])
def test_non_regular_job_files_are_refused(tmp_path, kind):
    path = tmp_path / "job.yaml"
    if kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to("/dev/null")
    code, err, seconds = _limited(["check", "--config", path], tmp_path, mem_mib=1024, timeout=60)
    assert code == 2 and len(err.strip().splitlines()) == 1 and seconds < 20, err
    assert re.search(r"not a regular file|is a directory", err)


# ---- 19: an API server that accepts and never answers ---------------------------------------------
@pytest.fixture
def silent_server():
    """A loopback socket that accepts connections and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join(2)
    for c in held:
        c.close()
    srv.close()


def test_a_silent_api_server_costs_a_bounded_wait(cli, tmp_path, silent_server):
    kc = _kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{silent_server}")
    for argv in (
        ("status", "--name", "x"),
        ("delete", "--name", "x", "--wait"),
        ("logs", "--name", "x", "--out", tmp_path / "log.txt"),
        ("apply", "--config", EKS, "--run-dir", tmp_path / "run"),
    ):
        start = time.monotonic()
        res = cli(*argv, "--kubeconfig", kc, "--request-timeout", "1")
        seconds = time.monotonic() - start
        assert "did not answer within 1 s" in _one_line(res, 1) and seconds < 8, (argv, seconds, res.err)
    assert not (tmp_path / "log.txt").exists()


# ---- 21: unusable output paths ----------------------------------------------------------------------
def test_unusable_output_paths_are_one_line_naming_the_flag(cli, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for bad in (blocker / "out.yaml", Path("/proc/self/no/such/out.yaml"), tmp_path / ("x" * 300)):
        res = cli("render", "--config", EKS, "--out", bad)
        assert "--out" in _one_line(res, 2)
        res = cli(
            "render-prep-job",
            "--input",
            "/shared/a.jsonl",
            "--output-prefix",
            "/shared/o",
            "--shards",
            "1",
            "--out",
            bad,
        )
        assert "--out" in _one_line(res, 2)
    res = cli(
        "logs", "--name", "x", "--backend", "local", "--run-dir", tmp_path / "r", "--out", blocker / "t.log"
    )
    assert "--out" in _one_line(res, 2)
    res = cli("apply", "--config", EKS, "--backend", "local", "--run-dir", blocker / "run")
    assert "--run-dir" in _one_line(res, 2)
    res = cli("run-notebooks", "--output-dir", blocker / "sub", "--only", "01")
    assert "--output-dir" in _one_line(res, 2)


def test_logs_out_unwritable_on_kubernetes_is_one_line(cli, tmp_path):
    sys.path.insert(0, str(Path(__file__).parent))
    from fake_kube_api import FakeKubeAPI

    api = FakeKubeAPI().start()
    try:
        kc = api.kubeconfig(tmp_path / "kc")
        blocker = tmp_path / "a-file"
        blocker.write_text("x")
        res = cli("logs", "--config", EKS, "--kubeconfig", kc, "--out", blocker / "train.log")
        assert "--out" in _one_line(res, 2) and "cannot write there" in res.err
        # The default output (<run>/train/train.log) is opened before any follower thread starts too.
        api.add_namespace("megatron-workshop")
        assert cli("apply", "--config", EKS, "--kubeconfig", kc, "--skip-preflight", "--force").code == 0
        res = cli("logs", "--config", EKS, "--kubeconfig", kc, "--run-dir", blocker / "run")
        assert "--run-dir" in _one_line(res, 2) and "cannot write there" in res.err
    finally:
        api.stop()


# ---- 26: render-prep-job takes what the job YAML takes ---------------------------------------------
@pytest.mark.parametrize(
    "extra, flag",
    [
        (["--output-prefix", "/shared/../etc/x"], "--output-prefix"),
        (["--output-prefix", ""], "--output-prefix"),
        (["--output-prefix", "relative/x"], "--output-prefix"),
        (["--mount-path", "/etc", "--output-prefix", "/etc/x"], "--mount-path"),
        (["--mount-path", "rel"], "--mount-path"),
        (["--mount-path", "/var/run/secrets", "--output-prefix", "/var/run/secrets/o"], "--mount-path"),
        (["--pvc", "Bad PVC!"], "--pvc"),
        (["--memory", "lots"], "--memory"),
        (["--parallelism", "-5"], "--parallelism"),
        (["--cpus", "0"], "--cpus"),
        (["--shards", "1000000000"], "--shards"),
        (["--shards", "100000"], "--shards"),
        (["--image", "img with space"], "--image"),
        (["--prep-args", "--output-prefix /shared/elsewhere"], "--prep-args"),
        (["--prep-args", "--output /shared/elsewhere"], "--prep-args"),
        (["--prep-args", "--input=/shared/other.jsonl"], "--prep-args"),
    ],
)
def test_render_prep_job_uses_the_job_yaml_rules(cli, extra, flag):
    argv = {"--input": "/shared/in.jsonl", "--output-prefix": "/shared/out"}
    rest = list(extra)
    for key in list(argv):
        if key in rest:
            argv.pop(key)
    flat = [x for k, v in argv.items() for x in (k, v)]
    res = cli("render-prep-job", *flat, "--shards", "2", *rest)
    assert flag in _one_line(res, 2) and res.out == ""


@pytest.mark.parametrize("mount", ["/var/run/secrets", "/var/run", "/var/lock/x", "/run/x", "/lib32/x"])
def test_job_mounts_under_system_dirs_are_refused(cli, tmp_path, mount):
    job = _job(tmp_path, storage={"pvc": "fsx", "mount_path": mount})
    assert "storage.mount_path" in _one_line(cli("check", "--config", job), 2)


# ---- 28: numeric flags out of range -----------------------------------------------------------------
@pytest.mark.parametrize("value", ["0", "-3", "nan", "x"])
def test_apply_train_iters_must_be_positive(cli, tmp_path, value):
    res = cli("apply", "--config", EKS, "--backend", "local", "--run-dir", tmp_path, "--train-iters", value)
    assert "--train-iters" in _one_line(res, 2)
    assert not (tmp_path / "train").exists()
