"""alpa.torch: PyTorch models in, DTensor placements and pipeline schedules out.

    import alpa, alpa.torch
    g = alpa.torch.export(model, (tokens,), loss_fn, targets=(labels,))
    plan = alpa.plan(g, "p3.16xlarge:2", microbatches=1)
    alpa.torch.placements(plan, g)       # {"transformer.h.0.attn.c_attn.weight":
                                         #  [Replicate(), Shard(1)], ...}
    alpa.torch.pipeline_split(plan, g)   # [["transformer.wte", "transformer.h.0", ...], ...]
    alpa.torch.schedule_csv(plan)        # torch.distributed.pipelining's CSV

Importing ``alpa`` does not import torch; this module needs it (docs/pytorch.md)."""
from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("alpa.torch needs PyTorch >= 2.5 (pip install torch); the rest of alpa "
                      "works without it") from e

from .exporter import export
from .plan_export import pipeline_split, placements, schedule_csv

__all__ = ["export", "pipeline_split", "placements", "schedule_csv"]
