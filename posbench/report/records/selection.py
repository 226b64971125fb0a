"""Which runs a report reads: the folders given (joined), the filter (``--only GLOB`` over run ids,
``--where key=value`` over the resolved config) and no smoke test read as a training budget.

A smoke run (``train=smoke``: a few steps, to check that a config runs at all) beside runs of a
real budget is left out of the report, with one line saying how many and why. Kept, it would be a
"budget" of the real runs (posbench/report/analysis/sweep.py groups a row's runs by their steps) and, at
the same seeds, a second record of each seed in every cell. Grouping budgets only among runs that
share every setting but the step count would keep it out of the budgets but not out of the cells;
leaving it out is both simpler and the answer a researcher expects.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf

from posbench.core.errors import PosbenchError
from posbench.core.suggest import did_you_mean

_ABSENT = object()
SMOKE_PRESET = Path(__file__).resolve().parents[2] / "conf" / "train" / "smoke.yaml"


@dataclass(frozen=True)
class Selection:
    """posbench-report's filter: ``only`` a glob over run ids, ``where`` "key=value" items over the
    run's resolved config: every key must hold, and a key given more than once holds where any of its
    values does (``task.name=mqar``, ``task.name=babi``: the runs of either task)."""

    only: str | None = None
    where: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.only or self.where)

    def conditions(self) -> list[tuple[str, Any]]:
        """``where`` as (dotted key, value): the value read as YAML (``200`` a number, ``true`` a bool)."""
        out = []
        for item in self.where:
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise PosbenchError(f"--where {item!r} must be key=value over the run's config, e.g. train.steps=200")
            out.append((key.strip(), value.strip()))
        return out

    def keeps(self, run_id: str, config: DictConfig | None) -> bool:
        """Whether a run passes the filter (a run without a readable config passes no ``--where``)."""
        if self.only and not fnmatch.fnmatchcase(str(run_id), self.only):
            return False
        wanted: dict[str, list[str]] = {}
        for key, value in self.conditions():
            wanted.setdefault(key, []).append(value)
        for key, values in wanted.items():
            have = _ABSENT if config is None else OmegaConf.select(config, key, default=_ABSENT)
            if have is _ABSENT or not any(_equal(have, value) for value in values):
                return False
        return True

    def describe(self) -> str:
        """The filter in words: keys joined by "and", a repeated key's values by "or"."""
        by_key: dict[str, list[str]] = {}
        for item in self.where:
            by_key.setdefault(item.partition("=")[0].strip(), []).append(item.strip())
        wheres = [" or ".join(items) for items in by_key.values()]
        return " and ".join(([f"--only {self.only}"] if self.only else []) + [f"--where {w}" for w in wheres])


def _equal(have: Any, value: str) -> bool:
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        parsed = value
    return have == parsed or str(have) == value


@lru_cache(maxsize=1)
def smoke_settings() -> dict[str, Any]:
    """The train settings ``train=smoke`` sets (conf/train/smoke.yaml, without its defaults list)."""
    preset = yaml.safe_load(SMOKE_PRESET.read_text()) or {}
    return {k: v for k, v in preset.items() if k != "defaults"}


def is_smoke(config: DictConfig | None) -> bool:
    """Whether a run's config is ``train=smoke``'s: every setting the preset makes, as it makes it. A
    branch of a budgets job (``train.budgets``) is a budget, whatever the preset: never a smoke run (the
    branch whose budget equals smoke's steps would otherwise drop out of its own study)."""
    train = None if config is None else OmegaConf.select(config, "train", default=None)
    if train is None or OmegaConf.select(train, "budgets", default=None):
        return False
    return all(OmegaConf.select(train, k, default=_ABSENT) == v for k, v in smoke_settings().items())


def shown_folder(folder: Path, out_dir: Path) -> str:
    """How a report names a folder of runs, never by the absolute path of the machine that made it:
    as given where it was given relative, else relative to the report's folder (its own name where
    that is the folder itself or one above it)."""
    folder = Path(folder)
    if not folder.is_absolute():
        return str(folder)
    rel = Path(os.path.relpath(folder.resolve(), Path(out_dir).resolve()))
    return folder.resolve().name if all(part == ".." for part in rel.parts) else str(rel)


@dataclass(frozen=True)
class ComparisonRequest:
    """posbench-report's ``--compare`` (row names) and ``--baseline`` (a row name, or None): which rows the
    comparison section draws against which (posbench/report/comparison/frames.py)."""

    rows: tuple[str, ...] = ()
    baseline: str | None = None

    def __bool__(self) -> bool:
        return bool(self.rows or self.baseline)

    def check(self, names) -> None:
        """Every name is a row of the report: one line naming the first that is not, and the valid ones."""
        valid = sorted(set(names))
        for flag, given in (("--compare", self.rows), ("--baseline", (self.baseline,) if self.baseline else ())):
            for name in given:
                if name not in valid:
                    raise PosbenchError(f"{flag}: no row {name!r} in this report{did_you_mean(name, valid)}; valid: "
                                        + ", ".join(valid))
        if self.rows and not self.baseline and len(self.rows) < 2:
            raise PosbenchError(f"--compare {self.rows[0]} names one row: name two or more (the first is the reference, "
                                "e.g. --compare rope,alibi) or give --baseline")

    def pairs(self, names) -> list[tuple[str, str]]:
        """(row, reference) for the rows present in a panel (``names``)."""
        names = set(names)
        if self.baseline:
            rows = self.rows or tuple(sorted(n for n in names if n != self.baseline))
            return [(a, self.baseline) for a in rows if a != self.baseline and a in names and self.baseline in names]
        ref, *rest = self.rows
        return [(a, ref) for a in rest if a != ref and a in names and ref in names]
