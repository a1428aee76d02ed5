"""The fused GeGLU MLP, one file per job, in the order a call goes through them:

- kernels.py: the Triton kernels (gate+up GEMM with the GeGLU epilogue; the backward's pointwise pass);
- configs.py: launch configurations, row buckets, the interleaved weight layout;
- launcher.py: per (weights, row bucket, device) state (interleaved weights, the tuned plan, the compiled
  kernel's own launcher) so a call does only the work that depends on its input;
- ops.py: the registered ops (`mlptui::geglu_gateup`, `…_train`, `…_backward`) and the autograd formula;
- crossover.py: fused or unfused, from a measured model of both paths (crossover.json);
- module.py: FusedGeGLUMLP and the `fused-mlp` workload's builder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlptui.runners.fused.backward_launch import geglu_backward
    from mlptui.runners.fused.configs import GateUpConfig, candidate_configs, interleave_gate_up, m_bucket
    from mlptui.runners.fused.launcher import GateUpLauncher, fused_geglu_gateup, tuned_configs
    from mlptui.runners.fused.module import FusedGeGLUMLP, build_fused_mlp

# The names load on first use, so the torch-free parts (crossover.py, the route's model) import without torch.
def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from mlptui.runners.fused import backward_launch, configs, launcher, module
    for home in (configs, launcher, module, backward_launch):
        if hasattr(home, name):
            return getattr(home, name)
    raise AttributeError(name)


__all__ = ["FusedGeGLUMLP", "GateUpConfig", "GateUpLauncher", "build_fused_mlp", "candidate_configs",
           "fused_geglu_gateup", "geglu_backward", "interleave_gate_up", "m_bucket", "tuned_configs"]
