"""NCCL/EFA health from a log's ``NCCL INFO`` lines (``NCCL_DEBUG=INFO``) and a one-line verdict.

What is read, and the line that shows it:

* NCCL version: ``NCCL version 2.21.5+cuda12.4``;
* aws-ofi-nccl version: ``NET/OFI Initializing aws-ofi-nccl 1.17.2`` (older plugins:
  ``NET/OFI Using aws-ofi-nccl 1.7.4``); libfabric: ``NET/OFI Using Libfabric version 1.22``;
* the provider: ``NET/OFI Selected Provider is efa (found 4 nics)``;
* the network NCCL uses: ``Using network Libfabric`` / ``AWS Libfabric`` / ``IB`` / ``Socket``, and
  the transport of inter-node channels (``via NET/Libfabric/0/GDRDMA``, ``via NET/Socket/0``);
  ``NET/Socket : Using [0]eth0:...`` and a missing ``libnccl-net`` plugin mean TCP fallback;
* GPUDirect RDMA: ``NET/OFI Using RDMA for GPU Direct communication`` or ``/GDRDMA`` in a channel;
* channels: ``8 coll channels, 8 collnet channels, 0 nvls channels, 8 p2p channels, ...`` or
  ``Channel 00/08``.

The verdict is ``ok`` (EFA or InfiniBand in use), ``degraded`` (TCP sockets between nodes),
``unknown`` (no NCCL INFO lines: set NCCL_DEBUG=INFO for one run to see them).
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field

from ..facts.failures import IB_PLUGIN_WANTED
from .parse import check_log_path, read_log_lines

_NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
_OFI_VERSION = re.compile(r"NET/OFI (?:Initializing|Using) aws-ofi-nccl (\d+\.\d+\.\d+\w*)")
_LIBFABRIC = re.compile(r"NET/OFI Using Libfabric version (\d+\.\d+(?:\.\d+)?)")
_PROVIDER = re.compile(r"NET/OFI Selected [Pp]rovider is (\w+)(?: \(found (\d+) nics?\))?")
_NETWORK = re.compile(r"Using network (AWS Libfabric|Libfabric|IBext\w*|IB|Socket|\w+)")
_VIA = re.compile(r"via NET/([\w ]+?)/\d+(/GDRDMA)?")
_SOCKET = re.compile(r"NET/Socket ?: ?Using \[\d+\](\w+)")
_GDR = re.compile(r"NET/OFI Using RDMA for GPU Direct|GPU Direct RDMA Enabled|/GDRDMA\b")
_COLL_CHANNELS = re.compile(r"(?<!\d)(\d+) coll channels")  # (?<!\d): one start per number, not per digit
_CHANNEL = re.compile(r"Channel \d+/(\d+) :")
_PLUGIN_MISSING = re.compile(r"NET/Plugin ?: ?(Could not find:? libnccl-net|No plugin found)")
# the plugin NCCL looked for was HPC-X's InfiniBand one, not aws-ofi-nccl (facts/failures.py)
_IB_PLUGIN_WANTED = re.compile("|".join(IB_PLUGIN_WANTED))


@dataclass
class NcclHealth:
    nccl_version: str | None = None
    aws_ofi_nccl_version: str | None = None
    libfabric_version: str | None = None
    provider: str | None = None
    efa_nics: int | None = None
    network: str | None = None  # "Libfabric" | "IB" | "Socket" | ...
    socket_interfaces: list[str] = field(default_factory=list)
    plugin_missing: bool = False
    gpudirect_rdma: bool = False
    channels: int | None = None
    nccl_info_lines: int = 0
    verdict: str = "unknown"  # ok | degraded | unknown
    message: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def nccl_health_lines(lines) -> NcclHealth:
    h = NcclHealth()
    networks: list[str] = []
    for line in lines:
        if "NCCL" not in line and "NET/" not in line:
            continue
        if "NCCL INFO" in line:
            h.nccl_info_lines += 1
        if h.nccl_version is None and (m := _NCCL_VERSION.search(line)):
            h.nccl_version = m.group(1)
        if "NET/" not in line and "network" not in line and "channels" not in line and "Channel" not in line:
            continue
        if h.aws_ofi_nccl_version is None and (m := _OFI_VERSION.search(line)):
            h.aws_ofi_nccl_version = m.group(1)
        if h.libfabric_version is None and (m := _LIBFABRIC.search(line)):
            h.libfabric_version = m.group(1)
        if m := _PROVIDER.search(line):
            h.provider = m.group(1)
            if m.group(2):
                h.efa_nics = int(m.group(2))
        if m := _NETWORK.search(line):
            networks.append(m.group(1))
        if m := _VIA.search(line):
            networks.append(m.group(1).strip())
        if (m := _SOCKET.search(line)) and m.group(1) not in h.socket_interfaces:
            h.socket_interfaces.append(m.group(1))
        if _GDR.search(line):
            h.gpudirect_rdma = True
        if _PLUGIN_MISSING.search(line) and not _IB_PLUGIN_WANTED.search(line):
            h.plugin_missing = True
        if m := _COLL_CHANNELS.search(line):
            h.channels = max(h.channels or 0, int(m.group(1)))
        elif h.channels is None and (m := _CHANNEL.search(line)):
            h.channels = int(m.group(1))
    fast = [n for n in networks if "Libfabric" in n or n.startswith("IB")]
    if fast:
        h.network = "Libfabric" if any("Libfabric" in n for n in fast) else fast[0]
    elif networks:
        h.network = networks[-1]
    elif h.socket_interfaces:
        h.network = "Socket"
    h.verdict, h.message = _verdict(h)
    return h


def _verdict(h: NcclHealth) -> tuple[str, str]:
    if h.network == "Libfabric" or (h.provider == "efa" and h.network != "Socket"):
        parts = [f"EFA in use via aws-ofi-nccl {h.aws_ofi_nccl_version or '?'} (provider {h.provider or '?'}"]
        parts[0] += f", {h.efa_nics} NICs)" if h.efa_nics else ")"
        parts.append("GPUDirect RDMA on" if h.gpudirect_rdma else "GPUDirect RDMA not seen")
        if h.channels:
            parts.append(f"{h.channels} channels")
        if h.nccl_version:
            parts.append(f"NCCL {h.nccl_version}")
        return "ok", "OK: " + ", ".join(parts) + "."
    if h.network and h.network.startswith("IB"):
        gdr = "GPUDirect RDMA on" if h.gpudirect_rdma else "GPUDirect RDMA not seen"
        return "ok", f"OK: InfiniBand in use ({h.network}), {gdr}, NCCL {h.nccl_version or '?'}."
    if h.network == "Socket":
        why = " (aws-ofi-nccl plugin not found)" if h.plugin_missing else ""
        ifs = f" over {', '.join(h.socket_interfaces)}" if h.socket_interfaces else ""
        return "degraded", (
            f"DEGRADED: NCCL uses TCP sockets{ifs}{why}; inter-node traffic is many times slower. "
            "Fix: aws-ofi-nccl on LD_LIBRARY_PATH, vpc.amazonaws.com/efa requested, hostNetwork: true."
        )
    if h.nccl_info_lines == 0 and h.nccl_version is None:
        return (
            "unknown",
            "UNKNOWN: no NCCL INFO lines; run once with NCCL_DEBUG=INFO to see the network NCCL picks.",
        )
    return "unknown", f"UNKNOWN: NCCL {h.nccl_version or '?'} logged, but not which network it uses."


def nccl_health(path: str | os.PathLike[str]) -> NcclHealth:
    """NCCL/EFA health of a log file (``workshop monitor nccl LOG``)."""
    return nccl_health_lines(read_log_lines(check_log_path(path)))  # .gz/.zst archives too
