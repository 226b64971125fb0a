"""posbench's RoPE scalings (posbench/attention/rope_scalings.py) applied to a checkpoint through
transformers' own implementation: its config's ``rope_parameters`` (transformers 5: ``rope_type``,
``factor``, ``original_max_position_embeddings``; modeling_rope_utils.py ``ROPE_INIT_FUNCTIONS``), read
by the model's rotary module, which is rebuilt from the changed config for the row and put back after.

posbench's names and defaults, and what each becomes:

    linear       rope_type linear, factor s                        (Chen et al. 2023, PI)
    dynamic_ntk  rope_type dynamic, factor 1: base x (L / L_train)^(d/(d-2)) at each window of L > L_train
    yarn         rope_type yarn, factor s, beta_fast 32, beta_slow 1, attention factor 0.1 ln s + 1,
                 original_max_position_embeddings = L_train       (Peng et al. 2023)
    llama3       rope_type llama3, factor s, low_freq_factor 1, high_freq_factor 4, L_train as the original length

A static scaling's s is ``--rope-factor``, or the longest multiple evaluated (posbench's eval.rope_factor
default). L_train is the checkpoint's context length (``--context-length``). The names transformers has no
type for (posbench's static ``ntk``, ``abf``, ``drope``) and ``longrope`` (its factors are searched per model:
posbench's search runs on posbench's models only) are refused in one line naming the ones that apply; so is
any scaling on a checkpoint without rotary positions (GPT-2's learned table).

Rows are named as posbench names its own: ``<family>+yarn@16x`` (static), ``<family>+dynamic_ntk`` (dynamic),
with the same record (``{variant: rope_scaling, type, factor}``), so the report colours them as it does
posbench's.
"""

from __future__ import annotations

import copy
from contextlib import contextmanager
from dataclasses import dataclass

from posbench.core.errors import PosbenchError

# posbench's name -> (transformers' rope_type, posbench's defaults of that type's parameters)
HF_TYPES = {
    "linear": ("linear", {}),
    "dynamic_ntk": ("dynamic", {}),
    "yarn": ("yarn", {"beta_fast": 32.0, "beta_slow": 1.0}),
    "llama3": ("llama3", {"low_freq_factor": 1.0, "high_freq_factor": 4.0}),
}
DYNAMIC = {"dynamic_ntk"}


@dataclass(frozen=True)
class Scaling:
    """One RoPE scaling row of a checkpoint."""

    name: str  # posbench's
    factor: float | None  # None: dynamic

    def suffix(self) -> str:
        return f"+{self.name}" if self.factor is None else f"+{self.name}@{self.factor:g}x"

    def record(self) -> dict:
        return {"variant": "rope_scaling", "type": self.name, "factor": self.factor}

    def rope_parameters(self, base: dict, context_length: int) -> dict:
        """The checkpoint's ``rope_parameters`` (its rope_theta, partial_rotary_factor) with this scaling."""
        kind, defaults = HF_TYPES[self.name]
        keep = {k: base[k] for k in ("rope_theta", "partial_rotary_factor") if k in base}
        out = {**keep, "rope_type": kind, "factor": 1.0 if self.factor is None else float(self.factor), **defaults}
        if kind in ("yarn", "llama3"):
            out["original_max_position_embeddings"] = int(context_length)
        return out


def scalings(names: list[str], factor: float | None, longest_multiple: float, rotary: bool, family: str) -> list[Scaling]:
    """The rows of ``names`` (posbench's), checked: each known to this path, and the checkpoint rotary."""
    if not names:
        return []
    if not rotary:
        raise PosbenchError(f"--rope-scaling {names[0]}: a {family} checkpoint has no rotary positions (RoPE scalings "
                            "apply to RoPE models: llama, mistral, qwen2, gpt_neox, ...)")
    if factor is not None and not factor >= 1:
        raise PosbenchError(f"--rope-factor must be at least 1, got {factor:g}")
    out = []
    for name in names:
        if name not in HF_TYPES:
            raise PosbenchError(f"--rope-scaling {name}: not available through transformers' rope_parameters; valid: "
                                f"{', '.join(HF_TYPES)}")
        out.append(Scaling(name, None if name in DYNAMIC else float(factor or longest_multiple)))
    return out


def check_scalable(config, rows: list[Scaling]) -> None:
    """One set of RoPE parameters for every layer (not Gemma 3's per-layer-type ones), where a scaling is asked for."""
    params = getattr(config, "rope_parameters", None) or {}
    if rows and any(isinstance(v, dict) for v in params.values()):
        raise PosbenchError(f"--rope-scaling {rows[0].name}: this checkpoint has RoPE parameters per layer type "
                            f"({', '.join(k for k, v in params.items() if isinstance(v, dict))}); only a checkpoint with "
                            "one set is rescaled here")


def rotary_modules(model) -> list[tuple[object, str, object]]:
    """(parent, attribute, module) of every rotary embedding module of the model (``rotary_emb``)."""
    found = []
    for name, module in model.named_modules():
        for child_name, child in module.named_children():
            if child_name == "rotary_emb" or child_name.endswith("rotary_emb"):
                found.append((module, child_name, child))
    return found


@contextmanager
def scaled(model, scaling: Scaling | None, context_length: int):
    """The model with its rotary modules rebuilt from a copy of its config carrying ``scaling``
    (transformers computes the frequencies), the originals back afterwards; None: unchanged."""
    if scaling is None:
        yield model
        return
    modules = rotary_modules(model)
    if not modules:
        raise PosbenchError(f"{type(model).__name__} has no rotary_emb module to rescale")
    config = copy.deepcopy(model.config)
    config.rope_parameters = scaling.rope_parameters(dict(model.config.rope_parameters), context_length)
    config.max_position_embeddings = int(context_length)  # dynamic scales past it, yarn and llama3 read the original
    config.validate_rope()
    try:
        for parent, attr, old in modules:
            buffer = next(iter(old.buffers()), None)
            new = type(old)(config=config)
            setattr(parent, attr, new.to(buffer.device) if buffer is not None else new)
        yield model
    finally:
        for parent, attr, old in modules:
            setattr(parent, attr, old)
