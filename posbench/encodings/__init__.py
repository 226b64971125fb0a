"""Registry of positional encodings.

Every module in this package that decorates a class with ``@register("name")`` is found
automatically, so adding an encoding is one file here plus one yaml in ``conf/encoding/``.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Mapping

from posbench.encodings.base import ModelShape, PositionalEncoding
from posbench.errors import PosbenchError
from posbench.params import make_typed

REGISTRY: dict[str, type[PositionalEncoding]] = {}


def register(name: str):
    def deco(cls: type[PositionalEncoding]) -> type[PositionalEncoding]:
        if name in REGISTRY:
            raise RuntimeError(f"encoding {name!r} registered twice")
        cls.name = name
        REGISTRY[name] = cls
        return cls

    return deco


def _discover() -> None:
    for mod in pkgutil.iter_modules(__path__):
        if mod.name != "base":
            importlib.import_module(f"{__name__}.{mod.name}")


def available() -> list[str]:
    return sorted(REGISTRY)


def make_params(name: str, params: Mapping[str, Any]) -> Any:
    """The encoding's ``Params`` from its yaml, every key, type and value checked (posbench.params)."""
    if name not in REGISTRY:
        raise PosbenchError(f"unknown encoding {name!r}; valid: {', '.join(available())}")
    return make_typed("encoding", name, REGISTRY[name].Params, params)


def build_encoding(name: str, shape: ModelShape, params: Mapping[str, Any] | None = None) -> PositionalEncoding:
    params = make_params(name, params or {})  # raises a clear error for an unknown name first
    return REGISTRY[name](shape, params)


_discover()

__all__ = ["REGISTRY", "ModelShape", "PositionalEncoding", "available", "build_encoding", "register"]
