"""``python -m workshop_lib.train.selfcheck``: what the trainer image's networking stack holds.

Prints the NCCL, aws-ofi-nccl and libfabric versions, whether NCCL's EFA plugin
(``libnccl-net*.so`` from aws-ofi-nccl) loads, and whether libfabric sees an EFA device, plus the
GPU and the NCCL/EFA environment. Exit status 0 when the plugin loads and NCCL is 2.27 or newer,
1 otherwise. ``--json`` prints one JSON object. Runs anywhere (on a laptop it reports what is
missing); the image's default command.
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

PLUGIN_DIRS = ("/opt/aws-ofi-nccl/lib", "/opt/amazon/ofi-nccl/lib")
LIBFABRIC_DIRS = ("/opt/amazon/efa",)
MIN_NCCL = (2, 27, 0)
ENV_SHOWN = ("FI_PROVIDER", "FI_EFA_USE_HUGE_PAGE", "FI_EFA_USE_DEVICE_RDMA", "NCCL_SOCKET_IFNAME",
             "NCCL_DEBUG", "NCCL_NET", "NCCL_NET_PLUGIN", "NCCL_IB_DISABLE", "TRITON_CACHE_DIR",
             "LD_LIBRARY_PATH")  # fmt: skip
# NCCL_NET values that name aws-ofi-nccl's network ("AWS Libfabric"; "OFI" in older releases)
OFI_NET_NAMES = ("aws libfabric", "ofi")


def net_problem(env: dict[str, str | None], plugin_loads: bool) -> str | None:
    """Why NCCL will stop at init with this environment, or None.

    NCCL 2.19+ stops with "Failed to initialize any NET plugin" when NCCL_NET names a network that
    is not there; on the H100 with NCCL 2.28 that was the only line, even with NCCL_DEBUG=WARN
    (benchmarks/results/gpu_faults.md). Here it can be said before a job starts.
    """
    net = (env.get("NCCL_NET") or "").strip()
    if net.lower() in OFI_NET_NAMES and not plugin_loads:
        return (
            f"NCCL_NET={net!r} but the aws-ofi-nccl plugin does not load: NCCL will stop at init "
            "('Failed to initialize any NET plugin'); fix the plugin or unset NCCL_NET"
        )
    return None


def _read(path: Path) -> str | None:
    return path.read_text().strip() if path.is_file() else None


def nccl_version() -> str | None:
    try:
        import torch

        v = torch.cuda.nccl.version()
    except Exception:  # noqa: BLE001 - CPU-only torch has no NCCL
        return None
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def find_plugin() -> str | None:
    dirs = [*os.environ.get("LD_LIBRARY_PATH", "").split(":"), *PLUGIN_DIRS]
    for d in dirs:
        if d:
            hits = sorted(glob.glob(os.path.join(d, "libnccl-net*.so")))
            if hits:
                return hits[0]
    return None


def plugin_version(plugin: str | None) -> str | None:
    if plugin is None:
        return None
    version = _read(Path(plugin).parent.parent / "VERSION")
    if version:
        return version
    data = Path(plugin).read_bytes()
    m = re.search(rb"aws-ofi-nccl[ /-]v?(\d+\.\d+\.\d+)", data)
    return m.group(1).decode() if m else "unknown"


def load_plugin(plugin: str | None) -> tuple[bool, str]:
    if plugin is None:
        return False, "libnccl-net*.so not found (looked in LD_LIBRARY_PATH and /opt/aws-ofi-nccl/lib)"
    try:
        ctypes.CDLL(plugin)
    except OSError as exc:
        return False, f"{plugin} does not load: {exc}"
    return True, plugin


def fi_info() -> str | None:
    for d in LIBFABRIC_DIRS:
        if Path(d, "bin", "fi_info").is_file():
            return str(Path(d, "bin", "fi_info"))
    return shutil.which("fi_info")


def libfabric_version(tool: str | None) -> str | None:
    if tool is None:
        return None
    out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"libfabric:\s*(\S+)", out)
    return m.group(1) if m else (out.strip() or None)


def efa_devices(tool: str | None) -> bool | None:
    if tool is None:
        return None
    proc = subprocess.run([tool, "-p", "efa", "-t", "FI_EP_RDM"], capture_output=True, text=True, timeout=60)
    return proc.returncode == 0 and "provider: efa" in proc.stdout


def gpus() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001
        return 0


def report() -> dict:
    plugin = find_plugin()
    loads, detail = load_plugin(plugin)
    tool = fi_info()
    nccl = nccl_version()
    nccl_ok = nccl is not None and tuple(int(x) for x in nccl.split(".")[:3]) >= MIN_NCCL
    return {
        "nccl": nccl,
        "nccl_ok": nccl_ok,
        "aws_ofi_nccl": plugin_version(plugin),
        "efa_plugin": plugin,
        "efa_plugin_loads": loads,
        "efa_plugin_detail": detail,
        "libfabric": libfabric_version(tool),
        "efa_devices": efa_devices(tool),
        "gpus": gpus(),
        "env": {k: os.environ.get(k) for k in ENV_SHOWN},
        "net_problem": net_problem(dict(os.environ), loads),
        "ok": loads and nccl_ok,
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    r = report()
    if "--json" in argv:
        print(json.dumps(r, indent=2))
        return 0 if r["ok"] else 1
    print(f"NCCL            {r['nccl'] or 'not available'}{'' if r['nccl_ok'] else '  (need 2.27+)'}")
    print(f"aws-ofi-nccl    {r['aws_ofi_nccl'] or 'not found'}")
    print(f"libfabric       {r['libfabric'] or 'not found'}")
    print(
        f"EFA plugin      {'loads' if r['efa_plugin_loads'] else 'DOES NOT LOAD'}: {r['efa_plugin_detail']}"
    )
    efa = r["efa_devices"]
    print(
        f"EFA devices     {'unknown (no fi_info)' if efa is None else ('present' if efa else 'none visible')}"
    )
    print(f"GPUs            {r['gpus']}")
    for k, v in r["env"].items():
        if v is not None:
            print(f"  {k}={v}")
    for bad in ("FI_EFA_USE_DEVICE_RDMA", "NCCL_SOCKET_IFNAME"):
        if r["env"].get(bad) is not None:
            print(f"WARNING: {bad} is set; the NCCL/EFA rules say leave it unset")
    if r["net_problem"]:
        print(f"ERROR: {r['net_problem']}")
    print("OK" if r["ok"] else "NOT READY for EFA training")
    return 0 if r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
