"""Shared file systems for checkpoints: the Lustre tiers of AWS and Azure and their bandwidths.

Both services sell throughput *per TiB of capacity*: a file system's aggregate bandwidth is the
tier's figure times its size. A checkpoint save cannot be faster than ``size / bandwidth``, so this
table answers "how long does one save take?" (``workshop checkpoints DIR --storage KEY``).

Sources:
* Amazon FSx for Lustre performance page: Persistent_2 SSD at 125, 250, 500 and 1000 MB/s per TiB;
  Persistent_1 HDD at 12 and 40 MB/s per TiB; Scratch_2 at 200 MB/s per TiB (baseline figures,
  burst not counted). Minimum size 1.2 TiB for SSD deployments.
* Azure Managed Lustre (AMLFS) tiers: AMLFS-Durable-Premium-40/125/250/500, i.e. 40, 125, 250 and
  500 MB/s per TiB. The AKS launch guide (docs/sources.md) tabulates the tiers at 480 TiB (40) and
  512 TiB (the others): 19.2, 64, 128 and 256 GB/s, the sizes used as defaults here.

Figures are decimal: MB = 10**6 bytes, GB = 10**9 bytes; TiB = 2**40 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

TIB = 2**40
MB = 10**6


@dataclass(frozen=True)
class StorageTier:
    """One deployment type of a Lustre service."""

    key: str  # the `--storage` value
    service: str  # "FSx for Lustre" | "Azure Managed Lustre"
    tier: str  # the name the console/API uses
    mb_per_s_per_tib: float  # baseline throughput per TiB of capacity
    default_capacity_tib: float  # the size used when none is given
    min_capacity_tib: float

    def bandwidth_bytes_per_s(self, capacity_tib: float | None = None) -> float:
        """Aggregate throughput of a file system of ``capacity_tib`` (default: the tier's default)."""
        cap = self.default_capacity_tib if capacity_tib is None else capacity_tib
        return self.mb_per_s_per_tib * MB * cap

    def seconds_to_write(self, nbytes: float, capacity_tib: float | None = None) -> float:
        """The least time writing ``nbytes`` takes at the file system's aggregate bandwidth."""
        return nbytes / self.bandwidth_bytes_per_s(capacity_tib)


STORAGE_TIERS: dict[str, StorageTier] = {
    t.key: t
    for t in (
        StorageTier("fsx-scratch2", "FSx for Lustre", "SCRATCH_2", 200, 1.2, 1.2),
        StorageTier("fsx-persistent-125", "FSx for Lustre", "PERSISTENT_2 SSD 125", 125, 1.2, 1.2),
        StorageTier("fsx-persistent-250", "FSx for Lustre", "PERSISTENT_2 SSD 250", 250, 1.2, 1.2),
        StorageTier("fsx-persistent-500", "FSx for Lustre", "PERSISTENT_2 SSD 500", 500, 1.2, 1.2),
        StorageTier("fsx-persistent-1000", "FSx for Lustre", "PERSISTENT_2 SSD 1000", 1000, 1.2, 1.2),
        StorageTier("fsx-hdd-12", "FSx for Lustre", "PERSISTENT_1 HDD 12", 12, 6.0, 6.0),
        StorageTier("fsx-hdd-40", "FSx for Lustre", "PERSISTENT_1 HDD 40", 40, 1.8, 1.8),
        StorageTier("amlfs-40", "Azure Managed Lustre", "AMLFS-Durable-Premium-40", 40, 480, 48),
        StorageTier("amlfs-125", "Azure Managed Lustre", "AMLFS-Durable-Premium-125", 125, 512, 16),
        StorageTier("amlfs-250", "Azure Managed Lustre", "AMLFS-Durable-Premium-250", 250, 512, 8),
        StorageTier("amlfs-500", "Azure Managed Lustre", "AMLFS-Durable-Premium-500", 500, 512, 4),
    )
}

DEFAULT_STORAGE = "fsx-persistent-250"


def storage_tier(key: str) -> StorageTier:
    """Look up a tier by its ``--storage`` key."""
    if key not in STORAGE_TIERS:
        from ..errors import UsageError

        raise UsageError(f"--storage: unknown {key!r}; choose one of {', '.join(STORAGE_TIERS)}")
    return STORAGE_TIERS[key]
