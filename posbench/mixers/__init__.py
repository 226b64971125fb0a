"""Sequence mixers beside attention: one file each, registered with ``@register("name")``.

A model's layers are a per-layer pattern of mixers (``model.mixers``, posbench/model/transformer.py):
``attention`` is the model's own causal self-attention with the run's positional encoding; every
other entry is a mixer from this registry (a recurrent layer: ``gdn``, ``mamba2``), which takes no
positional encoding. Every module of this package is imported on first lookup, so a built-in mixer
is one file here. A mixer from another package comes through the entry-point group
``posbench.mixers`` or a ``module:attr`` path (posbench/core/registry.py).
"""

from __future__ import annotations

from typing import Any, Mapping

from posbench.core.params import make_typed
from posbench.core.registry import Registry, plugin_code, subclass_check
from posbench.mixers.base import ATTENTION, Mixer, MixerShape

MIXERS: Registry[type[Mixer]] = Registry("mixer", "posbench.mixers", "posbench.mixers", subclass_check(Mixer))
register = MIXERS.register


def available() -> list[str]:
    """Every mixer name: ``attention``, the built-ins and the installed plug-ins."""
    return [ATTENTION, *MIXERS.names()]


def mixer_class(name: str) -> type[Mixer]:
    """The class of mixer ``name`` (PosbenchError naming the valid ones when there is none)."""
    return MIXERS.get(name)


def build_mixer(name: str, shape: MixerShape, params: Mapping[str, Any] | None = None,
                prefix: str | None = None) -> Mixer:
    """The mixer ``name`` at ``shape`` with its checked Params (``prefix``: where the user typed
    them, e.g. ``model.mixer_params.gdn``). A plug-in that raises while it is built is one line."""
    cls = mixer_class(name)
    typed = make_typed("mixer", name, cls.Params, params or {}, prefix)
    with plugin_code("mixer", name, cls.__module__, "being built"):
        return cls(shape, typed)


__all__ = ["ATTENTION", "MIXERS", "Mixer", "MixerShape", "available", "build_mixer", "mixer_class", "register"]
