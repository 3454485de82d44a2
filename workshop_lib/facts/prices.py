"""On-demand list prices per node-hour, in US dollars: an editable table, not a quote.

The planner multiplies these by nodes x hours for ``cost``. Prices change (AWS cut P4/P5 on-demand
prices by up to 45% in June 2025) and differ by region, reservation and Savings Plan; edit
``PRICES_USD_PER_HOUR`` (or pass ``price_per_hour=`` to the estimate functions) for your account.

Figures: AWS EC2 on-demand, us-east-1, after the June 2025 reduction; Azure pay-as-you-go, East US.
Approximate, as of 2025.
"""

from __future__ import annotations

PRICES_USD_PER_HOUR: dict[str, float] = {
    "g5.8xlarge": 2.448,
    "g5.48xlarge": 16.288,
    "p4d.24xlarge": 21.96,
    "p4de.24xlarge": 27.45,
    "p5.48xlarge": 55.04,
    "p5e.48xlarge": 63.30,
    "p5en.48xlarge": 63.30,
    "p6-b200.48xlarge": 113.93,
    "Standard_ND96asr_v4": 27.20,
    "Standard_ND96amsr_A100_v4": 32.77,
    "Standard_ND96isr_H100_v5": 98.32,
    "Standard_ND96isr_H200_v5": 110.24,
}


def price_per_hour(instance_type: str | None) -> float | None:
    """The node-hour price, or None where the table has none."""
    if not instance_type:
        return None
    return PRICES_USD_PER_HOUR.get(instance_type.removeprefix("ml."))
