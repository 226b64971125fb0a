"""Typed settings: frozen dataclasses, each beside its owner, converted from the composed config once.

Every part of posbench receives only the settings it uses (the trainer a ``TrainConfig``, the
data loader a ``DataConfig``, ...), as frozen dataclasses: attribute access, no ``DictConfig``
below the command-line layer (posbench/cli/config.py, posbench/cli/), nothing a callee can change
under its caller. A settings class's defaults are the only defaults (the yaml in conf/ chooses
between presets, it does not repeat them), and its ``check`` holds every test of its values, so
``posbench-train`` and ``posbench-eval`` refuse the same values through the same code.

Hydra needs mutable dataclasses to merge overrides into (OmegaConf makes a frozen dataclass a
read-only node), so the schema Hydra checks types against is a mutable twin derived from each
frozen class (``hydra_schema``): the fields, types and defaults are written once.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any, Mapping, TypeVar

from posbench.core.errors import PosbenchError
from posbench.core.suggest import did_you_mean

S = TypeVar("S")


@functools.cache
def hydra_schema(cls: type) -> type:
    """The mutable twin of a frozen settings dataclass (nested settings twinned too), for Hydra's
    ConfigStore: same field names, types and defaults."""
    hints = typing.get_type_hints(cls)
    fields = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            twin = hydra_schema(tp)
            fields.append((f.name, twin, dataclasses.field(default_factory=twin)))
        elif f.default is not dataclasses.MISSING:
            fields.append((f.name, tp, dataclasses.field(default=f.default)))
        elif f.default_factory is not dataclasses.MISSING:
            fields.append((f.name, tp, dataclasses.field(default_factory=f.default_factory)))
        else:
            fields.append((f.name, tp))
    # named so that pickle finds it again in another process (joblib and submitit workers receive
    # the composed config pickled): posbench.core.settings.<name> resolves through __getattr__ below
    name = f"Schema__{cls.__module__.replace('.', '__')}__{cls.__qualname__}"
    return dataclasses.make_dataclass(name, fields, namespace={"__module__": __name__, "__doc__": cls.__doc__})


def __getattr__(name: str) -> type:
    """``Schema__posbench__evaluation__settings__EvalConfig`` -> the twin of posbench.evaluation.settings.EvalConfig."""
    if not name.startswith("Schema__"):
        raise AttributeError(name)
    *module, qualname = name.removeprefix("Schema__").split("__")
    import importlib

    return hydra_schema(getattr(importlib.import_module(".".join(module)), qualname))


def field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def unknown_key(cls: type, data: Mapping[str, Any], prefix: str) -> str | None:
    """The first key of ``data`` (recursively into nested settings) that ``cls`` has no field for,
    e.g. ``train.stpes`` (a ``+train.stpes=5`` override adds one; Hydra allows it)."""
    hints = typing.get_type_hints(cls)
    names = field_names(cls)
    for key, value in data.items():
        if key not in names:
            return f"{prefix}{key}"
        if dataclasses.is_dataclass(hints[key]) and isinstance(value, Mapping):
            if bad := unknown_key(hints[key], value, f"{prefix}{key}."):
                return bad
    return None


def from_mapping(cls: type[S], data: Mapping[str, Any] | None, prefix: str = "") -> S:
    """A frozen ``cls`` from a plain mapping (a resolved config section, or a saved run's):
    missing keys take the defaults; lists stay lists; unknown keys are refused in one line."""
    data = dict(data or {})
    if bad := unknown_key(cls, data, prefix):
        parent = bad.rpartition(".")[0]
        valid = sorted(field_names(_settings_at(cls, bad[len(prefix):].rpartition(".")[0])))
        raise PosbenchError(f"unknown config key {bad!r}{did_you_mean(bad.rpartition('.')[2], valid)}; valid keys "
                            f"{'of ' + parent if parent else 'at the top level'}: {', '.join(valid)}")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        if dataclasses.is_dataclass(hints[f.name]):
            value = from_mapping(hints[f.name], value, f"{prefix}{f.name}.")
        kwargs[f.name] = value
    try:
        return cls(**kwargs)
    except TypeError as e:  # a required field without a value
        raise PosbenchError(f"{prefix.rstrip('.') or cls.__name__}: {e}") from None


def _settings_at(cls: type, dotted: str) -> type:
    for part in filter(None, dotted.split(".")):
        cls = typing.get_type_hints(cls)[part]
    return cls


def to_dict(settings: Any) -> dict:
    """Plain values of a settings dataclass (what a run directory records)."""
    return dataclasses.asdict(settings)


INT64_MAX = 2**63 - 1  # counts of steps and tokens are int64 where they are stored (torch, numpy, the report's frames)


def check_count(key: str, value: Any, per_unit: int, what: str) -> None:
    """``value`` x ``per_unit`` (e.g. steps x tokens per step) must fit in an int64: Python's ints
    do not overflow, so a value of 20 digits passed every check and failed deep in a run (a traceback
    in the progress line, a trunk's resume state left behind). One line with the range that holds."""
    largest = max(value) if isinstance(value, (list, tuple)) else value
    if largest * per_unit > INT64_MAX:
        raise PosbenchError(f"{key}={value} is too large: {what} must fit in a 64-bit integer; valid: 1 .. "
                            f"{INT64_MAX // per_unit:_}")
