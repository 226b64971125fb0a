"""Positional encodings: one file each, registered with ``@register("name")``.

Every module of this package is imported on first lookup, so a built-in encoding is one file here
(its yaml in ``conf/encoding/`` is optional: without one, ``encoding=<name>`` gets its Params'
defaults). An encoding from another package comes through the entry-point group
``posbench.encodings`` or a ``module:attr`` path (posbench/core/registry.py).
"""

from __future__ import annotations

from typing import Any, Mapping

from posbench.core.params import make_typed
from posbench.core.registry import Registry, plugin_code, subclass_check
from posbench.encodings.base import ModelShape, PositionalEncoding

ENCODINGS: Registry[type[PositionalEncoding]] = Registry(
    "encoding", "posbench.encodings", "posbench.encodings", subclass_check(PositionalEncoding))
register = ENCODINGS.register


def available() -> list[str]:
    """Every encoding name: the built-ins and the installed plug-ins."""
    return ENCODINGS.names()


def encoding_class(name: str, target: str | None = None) -> type[PositionalEncoding]:
    """The class of encoding ``name`` (PosbenchError naming the valid ones when there is none)."""
    return ENCODINGS.get(name, target)


def build_encoding(name: str, shape: ModelShape, params: Mapping[str, Any] | None = None,
                   target: str | None = None, prefix: str | None = None) -> PositionalEncoding:
    """The encoding ``name`` at ``shape`` with its checked Params (``prefix``: where the user typed
    them, when not under ``encoding.``: a layer pattern's part). A plug-in that raises while it is
    built is one line naming it (posbench.registry.plugin_code)."""
    cls = encoding_class(name, target)  # raises a clear error for an unknown name first
    typed = make_typed("encoding", name, cls.Params, params or {}, prefix)
    with plugin_code("encoding", name, cls.__module__, "being built"):
        return cls(shape, typed)


__all__ = ["ENCODINGS", "ModelShape", "PositionalEncoding", "available", "build_encoding", "encoding_class", "register"]
