"""Shapes of the workloads: the flag families (`--rows --in-dim --out-dim`, `--batch --seq --dim
--hidden`) with the article's defaults, and a resolved `Shape`. Apart from the registry so that the
modules the registry names can use shapes without importing the registry back."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ShapeKind:
    """One family of shape flags: their names in order, the article's defaults, and help text."""

    name: str
    fields: tuple[str, ...]
    defaults: tuple[int, ...]
    help: dict[str, str] = field(default_factory=dict)


LINEAR_SHAPE = ShapeKind(
    "linear",
    ("rows", "in_dim", "out_dim"),
    (1024, 32, 64),
    {"rows": "rows of x", "in_dim": "input features", "out_dim": "output features"},
)
MLP_SHAPE = ShapeKind(
    "mlp",
    ("batch", "seq", "dim", "hidden"),
    (64, 128, 768, 3072),
    {"batch": "batch size", "seq": "sequence length", "dim": "model width", "hidden": "MLP hidden width"},
)
# The attention rung's q/k/v [batch, heads, seq, head_dim] (the article's scripts' defaults). `--batch`
# and `--seq` are flags of the MLP too: one flag sets both, each family keeps its own default.
ATTENTION_SHAPE = ShapeKind(
    "attention",
    ("batch", "heads", "seq", "head_dim"),
    (8, 16, 1024, 64),
    {"batch": "batch size", "heads": "attention heads", "seq": "sequence length", "head_dim": "head width"},
)
SHAPE_KINDS: dict[str, ShapeKind] = {k.name: k for k in (LINEAR_SHAPE, MLP_SHAPE, ATTENTION_SHAPE)}


@dataclass(frozen=True)
class Shape:
    """Resolved shape of one workload; `slug` goes into trace file names (e.g. 64x128x768x3072)."""

    kind: str
    values: tuple[int, ...]

    def __getattr__(self, name: str) -> int:
        fields = SHAPE_KINDS[object.__getattribute__(self, "kind")].fields
        if name in fields:
            values: tuple[int, ...] = object.__getattribute__(self, "values")
            return values[fields.index(name)]
        raise AttributeError(name)

    @property
    def slug(self) -> str:
        return "x".join(str(v) for v in self.values)

    def as_dict(self) -> dict[str, int]:
        return dict(zip(SHAPE_KINDS[self.kind].fields, self.values, strict=True))
