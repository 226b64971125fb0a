"""No rule a plug-in author cannot see, and no plug-in that can take the harness down: the hooks an
encoding overrides decide its kernels, each Params field states its own checks, a refused value
names the key the user typed, and a plug-in that raises (while it is loaded, built, checked, or
writes its report section) is one line or one warning, never a traceback or a lost report."""

from __future__ import annotations

import dataclasses
import logging
import math
import shutil
import textwrap
import typing
import uuid
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import pytest
import torch
import yaml

from posbench.cli.app import compose_jobs
from posbench.core.errors import PosbenchError
from posbench.core.params import (
    above,
    at_least,
    in_range,
    make_typed,
    one_of,
    param,
    positive,
)
from posbench.encodings import ENCODINGS, ModelShape, PositionalEncoding, build_encoding
from posbench.evaluation.variants import VARIANTS
from posbench.model.transformer import LanguageModel, ModelConfig
from posbench.tasks import TASKS
from tests.conftest import tree

TINY = ["model=tiny", "train=smoke", "train_len=16", "eval.multiples=[1,2]", "eval.scored_tokens=256"]
SHAPE = ModelShape(32, 4, 2, 16)


# -- 1. the hooks an encoding overrides decide its kernels ----------------------------------------------


class DistanceBias(PositionalEncoding):
    """Overrides ``bias`` and nothing else: no flag set by hand."""

    def bias(self, q_pos, k_pos, layer):
        return -0.5 * (q_pos[:, None] - k_pos[None, :]).clamp(min=0).float().expand(self.shape.n_heads, -1, -1)


def test_an_encoding_that_overrides_only_bias_changes_the_logits():
    enc = DistanceBias(SHAPE, DistanceBias.Params())
    assert (enc.uses_bias, enc.uses_input, enc.uses_rotation, enc.uses_relative) == (True, False, False, False)
    cfg = ModelConfig(name="t", d_model=32, n_layers=2, n_heads=4)
    torch.manual_seed(0)
    nope = LanguageModel(cfg, build_encoding("nope", SHAPE)).eval()
    biased = LanguageModel(cfg, enc).eval()
    biased.load_state_dict(nope.state_dict())  # the same weights: only the encoding differs
    x = torch.randint(0, 256, (2, 16))
    with torch.no_grad():
        assert not torch.allclose(nope(x), biased(x), atol=1e-4)


def test_the_flags_are_read_only_and_old_flags_must_agree_with_the_hooks():
    enc = DistanceBias(SHAPE, DistanceBias.Params())
    with pytest.raises(AttributeError, match="read-only"):
        enc.uses_bias = False

    class Agrees(PositionalEncoding):  # written when the flags were set by hand: still loads
        uses_bias = True

        def bias(self, q_pos, k_pos, layer):
            return torch.zeros(self.shape.n_heads, len(q_pos), len(k_pos))

    assert Agrees.uses_bias and "uses_bias" not in Agrees.__dict__
    with pytest.raises(TypeError, match="Contradicts sets uses_bias = False but overrides bias"):
        class Contradicts(PositionalEncoding):
            uses_bias = False

            def bias(self, q_pos, k_pos, layer):
                return torch.zeros(1)


def test_a_layer_pattern_s_parts_decide_per_layer():
    enc = build_encoding("layers", SHAPE, {"pattern": ["alibi/swa4", "rope"]})
    assert not (enc.uses_bias or enc.uses_rotation)  # the pattern itself overrides no hook
    assert (enc.at(0).uses_bias, enc.at(0).uses_rotation) == (True, False)
    assert (enc.at(1).uses_bias, enc.at(1).uses_rotation) == (False, True)


# -- 2. each Params states its own checks --------------------------------------------------------------


@dataclass
class Free:
    offset: float = -1.0
    tag: int = 0


def test_params_without_rules_take_any_value_of_their_type():
    assert make_typed("encoding", "mine", Free, {}) == Free(-1.0, 0)
    assert make_typed("encoding", "mine", Free, {"offset": -5.5, "tag": -3}) == Free(-5.5, -3)
    with pytest.raises(PosbenchError, match=r"^encoding.offset of 'mine' must be finite, got nan$"):
        make_typed("encoding", "mine", Free, {"offset": math.nan})


@dataclass
class Ruled:
    slope: float = param(1.0, positive)
    base: float = param(10000.0, above(1))
    count: int = field(default=1, metadata={"check": at_least(1)})  # the long form
    share: float = param(0.5, in_range(0, 1))
    mode: str = param("fast", one_of("fast", "exact"))
    sizes: typing.List[int] = param(rule=positive, default_factory=lambda: [1, 2])


@pytest.mark.parametrize("key, value, message", [
    ("slope", 0.0, "encoding.slope of 'mine' must be positive (and finite), got 0"),
    ("slope", math.inf, "encoding.slope of 'mine' must be positive (and finite), got inf"),
    ("base", 1.0, "encoding.base of 'mine' must be above 1 (and finite), got 1"),
    ("count", 0, "encoding.count of 'mine' must be at least 1 (and finite), got 0"),
    ("share", 1.5, "encoding.share of 'mine' must be in [0, 1] (and finite), got 1.5"),
    ("mode", "slow", "encoding.mode of 'mine' must be one of fast, exact, got 'slow'"),
    ("sizes", [1, 0], "encoding.sizes of 'mine' must be positive (and finite), got 0"),
])
def test_a_declared_rule_refuses_in_its_own_words(key, value, message):
    assert make_typed("encoding", "mine", Ruled, {}) == Ruled()
    with pytest.raises(PosbenchError) as e:
        make_typed("encoding", "mine", Ruled, {key: value})
    assert str(e.value) == message


# the fields the convention let be 0 (Params.ZERO_OK) before each field declared its rule; every other
# number had to be positive, and a field named base above 1
ZERO_WAS_OK = {("encoding", "irope", "beta"), ("encoding", "p_rope", "fraction"), ("encoding", "shaw", "init_std"),
               ("encoding", "sink", "init_std"), ("encoding", "sinusoidal", "scale"), ("encoding", "t5", "init_std"),
               ("encoding", "xpos", "gamma"), ("variant", "dca", "local_window"), ("variant", "streaming", "sinks"),
               ("variant", "temperature", "c")}


def numeric_fields() -> list[tuple[str, str, str, type]]:
    """(kind, plug-in, field, int or float) of every number of every built-in's Params, from the registries."""
    out = []
    for kind, registry in (("encoding", ENCODINGS), ("task", TASKS), ("variant", VARIANTS)):
        for name in registry.builtins():
            params = registry.get(name).Params
            hints = typing.get_type_hints(params)
            for f in dataclasses.fields(params):
                types = [t for t in (typing.get_args(hints[f.name]) or (hints[f.name],)) if t is not type(None)]
                if types in ([int], [float]):
                    out.append((kind, name, f.name, types[0]))
    return out


# fields added after the convention whose own declared rule takes 0 (a probability: flip-flop with no
# ignore instructions; a count: a window with no attention sinks); every other refusal of the old convention
# still holds for them
ZERO_OK_BY_RULE = {("task", "flip_flop", "train_ignore"), ("variant", "local", "sinks")}


def refused_by_the_old_convention(kind, name, key) -> list:
    zero_ok = (kind, name, key) in ZERO_WAS_OK | ZERO_OK_BY_RULE
    return [-1, math.nan] + ([] if zero_ok else [0]) + ([1] if key == "base" else [])


CASES = [(kind, name, key, value) for kind, name, key, _ in numeric_fields()
         for value in refused_by_the_old_convention(kind, name, key)]


def test_the_cases_cover_every_kind_and_the_old_exceptions():
    fields = {(kind, name, key) for kind, name, key, _ in numeric_fields()}
    assert ZERO_WAS_OK <= fields  # none of them renamed away
    assert {kind for kind, *_ in fields} == {"encoding", "task", "variant"}
    assert ("encoding", "rope", "base") in fields and ("task", "passkey", "digits") in fields


@pytest.mark.parametrize("kind, name, key, value", CASES, ids=[f"{k}-{n}-{f}={v}" for k, n, f, v in CASES])
def test_every_builtin_still_refuses_what_the_old_convention_refused(kind, name, key, value):
    registry = {"encoding": ENCODINGS, "task": TASKS, "variant": VARIANTS}[kind]
    with pytest.raises(PosbenchError) as e:
        make_typed(kind, name, registry.get(name).Params, {key: value})
    assert f"{kind}.{key}" in str(e.value)  # refused by that field's own rule (or type), named


@pytest.mark.parametrize("kind, name, key", sorted(ZERO_WAS_OK))
def test_the_old_exceptions_still_take_0(kind, name, key):
    registry = {"encoding": ENCODINGS, "task": TASKS, "variant": VARIANTS}[kind]
    assert getattr(make_typed(kind, name, registry.get(name).Params, {key: 0}), key) == 0


# -- 3, 5, 7: plug-ins from a module:attr path, through the real command ---------------------------------


PLUGIN = '''
from dataclasses import dataclass
from posbench.encodings import PositionalEncoding


class Fine(PositionalEncoding):
    @dataclass
    class Params:
        slope: float = 1.0
        offset: float = -1.0
        tag: int = 0

    def bias(self, q_pos, k_pos, layer):
        return self.params.slope * (k_pos[None, :] - q_pos[:, None]).float().expand(self.shape.n_heads, -1, -1)


class RaisesInInit(PositionalEncoding):
    def __init__(self, shape, params):
        super().__init__(shape, params)
        raise RuntimeError("no weights for this shape")


class RaisesInCheck(PositionalEncoding):
    @dataclass
    class Params:
        slope: float = 1.0

        def check(self):
            raise ValueError("slope is cursed")


class WrongFloat(PositionalEncoding):
    @dataclass
    class Params:
        slope: float = "a"


class WrongInt(PositionalEncoding):
    @dataclass
    class Params:
        n: int = 0.5
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch, cache_dir, forget_loaded_plugins):
    """A module of plug-ins on sys.path (a fresh name per test: the registry keeps what it loaded),
    and a working folder where nothing may be written; returns (module name, its file, runs dir). The
    registries forget what the test loaded afterwards: a plug-in made to fail must not be listed by later
    tests that build every available name."""
    def _make(source: str = PLUGIN) -> tuple[str, Path, Path]:
        module = f"posbench_rules_{uuid.uuid4().hex[:8]}"
        site = tmp_path / "site"
        site.mkdir(exist_ok=True)
        (site / f"{module}.py").write_text(textwrap.dedent(source))
        monkeypatch.syspath_prepend(str(site))
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        monkeypatch.chdir(work)
        return module, site / f"{module}.py", work / "runs"
    return _make


def line_of(file: Path, text: str) -> int:
    """The line number of the first line of ``file`` holding ``text``."""
    return next(i for i, line in enumerate(file.read_text().splitlines(), 1) if text in line)


def refused(entry_result, runs: Path) -> str:
    """The one line of a refusal (exit 2, no traceback, nothing written), without its prefix."""
    code, err = entry_result
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("posbench: error: "), err
    assert tree(runs.parent) == [], tree(runs.parent)
    return lines[0].removeprefix("posbench: error: ")


def test_a_plugin_with_values_the_old_convention_refused_is_accepted(plugin):
    from posbench.cli.config import to_spec

    module, _, _ = plugin()
    (cfg,) = compose_jobs("config", [f"encoding={module}:Fine", "model=tiny"], False)
    assert (to_spec(cfg).encoding.params.offset, to_spec(cfg).encoding.params.tag) == (-1.0, 0)
    (cfg,) = compose_jobs("config", [f"encoding={module}:Fine", "encoding.tag=-7", "model=tiny"], False)
    assert to_spec(cfg).encoding.params.tag == -7


@pytest.mark.parametrize("cls, key, default, kind", [("WrongFloat", "slope", "'a'", "float"),
                                                     ("WrongInt", "n", "0.5", "int")])
def test_a_wrong_typed_default_is_one_line_naming_the_plugin_field_and_default(entry, plugin, cls, key, default, kind):
    module, _, runs = plugin()
    line = refused(entry("train", f"encoding={module}:{cls}", *TINY, f"runs_dir={runs}"), runs)
    assert line == (f"encoding '{module}:{cls}': the default of {key} in {module}.{cls}.Params is {default}, "
                    f"not {kind}; fix the plug-in's Params")


def test_a_plugin_that_raises_while_built_is_one_line_naming_it_and_its_file(entry, plugin):
    module, file, runs = plugin()
    line = refused(entry("train", f"encoding={module}:RaisesInInit", *TINY, f"runs_dir={runs}"), runs)
    assert line == (f"encoding '{module}:RaisesInInit' failed while being built ({file}:{line_of(file, 'no weights')}): "
                    "RuntimeError: no weights for this shape")


def test_a_plugin_whose_params_check_raises_is_one_line(entry, plugin):
    module, file, runs = plugin()
    line = refused(entry("train", f"encoding={module}:RaisesInCheck", *TINY, f"runs_dir={runs}"), runs)
    assert line == (f"encoding '{module}:RaisesInCheck' failed while checking its Params ({file}:{line_of(file, 'cursed')}): "
                    "ValueError: slope is cursed")


@pytest.mark.parametrize("source, error", [
    ("import posbench\n\nSCALE = 1 / 0\n", "ZeroDivisionError: division by zero"),
    ("import math\nimport posbench_no_such_dependency\n", "ModuleNotFoundError: No module named 'posbench_no_such_dependency'"),
])
def test_a_plugin_module_that_fails_to_import_is_one_line(entry, plugin, source, error):
    """Also when what is missing is not the plug-in but something it imports (not "is its package installed?")."""
    module, file, runs = plugin(source)
    line = refused(entry("train", f"encoding={module}:Enc", *TINY, f"runs_dir={runs}"), runs)
    assert line == f"encoding '{module}:Enc' failed while loading ({file}:{source.count(chr(10))}): {error}"


def test_a_builtin_that_raises_keeps_its_traceback(monkeypatch):
    """A bug in posbench's own code is not dressed up as a user's mistake."""
    from posbench.encodings.alibi import ALiBi

    def broken(self, shape, params):
        raise RuntimeError("a bug in posbench")

    monkeypatch.setattr(ALiBi, "__init__", broken)
    with pytest.raises(RuntimeError, match="a bug in posbench"):
        build_encoding("alibi", SHAPE)


@pytest.mark.parametrize("override", ["encoding.slop=1", "+encoding.slop=1"])
def test_an_unknown_plugin_key_lists_the_valid_ones(entry, plugin, override):
    module, _, runs = plugin()
    line = refused(entry("train", f"encoding={module}:Fine", override, *TINY, f"runs_dir={runs}"), runs)
    assert line == f"encoding '{module}:Fine' has no parameter 'slop'; valid: offset, slope, tag"


def test_a_plugin_key_given_with_plus_says_to_drop_it(entry, plugin):
    """docs/extending.md sets a yaml-less plug-in's parameter without +: its option lists the defaults."""
    module, _, runs = plugin()
    line = refused(entry("train", f"encoding={module}:Fine", "+encoding.slope=0.5", *TINY, f"runs_dir={runs}"), runs)
    assert line == "encoding.slope is already in the config (its defaults list it): set it without +, as encoding.slope=0.5"


def test_a_layer_pattern_s_part_params_say_how_to_add_them(entry, plugin):
    _, _, runs = plugin()
    line = refused(entry("train", "encoding=layers", "encoding.params.rope.base=2", *TINY, f"runs_dir={runs}"), runs)
    assert line == ("unknown config key 'encoding.params.rope': encoding.params holds no keys until one is added; "
                    "write +encoding.params.rope.base=2")


# -- 4. a refused value names the key the user typed ------------------------------------------------------


@pytest.mark.parametrize("overrides, message", [
    (["encoding=rope", "eval.rope_scaling=[yarn]", "eval.rope_factor=nan"],
     "eval.rope_factor must be at least 1 and finite (or null), got nan"),
    (["encoding=rope", "eval.temperature=[0.1,nan]"], "eval.temperature must be at least 0 (and finite), got nan"),
    (["encoding=rope", "eval.variants=[{name:streaming,sinks:-1}]"],
     "eval.variants[0].sinks of 'streaming' must be at least 0 (and finite), got -1"),
    (["encoding=layers", "+encoding.params.rope.base=0"], "encoding.params.rope.base of 'rope' must be above 1 (and finite), got 0"),
])
def test_posbench_train_names_the_key_typed(entry, plugin, overrides, message):
    _, _, runs = plugin()
    assert refused(entry("train", *overrides, *TINY, f"runs_dir={runs}"), runs) == message


def test_posbench_eval_names_the_key_typed(entry, compose, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(yaml.safe_dump(compose("encoding=rope", *TINY).resolved()))
    code, err = entry("eval", f"run_dir={run_dir}", "eval.rope_scaling=[yarn]", "eval.rope_factor=nan")
    assert code == 2 and err.strip() == "posbench: error: eval.rope_factor must be at least 1 and finite (or null), got nan"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"] and tree(run_dir) == ["config.yaml"]


# -- 6. an entry point named like a built-in ------------------------------------------------------------


def test_an_entry_point_named_like_a_builtin_gets_one_warning(monkeypatch, caplog):
    from posbench.core.registry import metadata as registry_metadata
    from posbench.encodings.rope import RoPE

    ep = metadata.EntryPoint(name="rope", value="theirpkg.enc:TheirRoPE", group="posbench.encodings")
    monkeypatch.setattr(registry_metadata, "entry_points",
                        lambda group=None, **kw: [ep] if group == "posbench.encodings" else [])
    monkeypatch.setattr(ENCODINGS, "_shadowing", None)  # as in a fresh process
    with caplog.at_level(logging.WARNING, logger="posbench"):
        assert ENCODINGS.get("rope") is RoPE and ENCODINGS.get("rope") is RoPE  # the built-in wins
    assert [r.getMessage() for r in caplog.records] == [
        "the entry point rope = theirpkg.enc:TheirRoPE in group posbench.encodings has the name of the built-in "
        "encoding 'rope' (posbench.encodings.rope.RoPE); the built-in is used: give the entry point another name to use it"]


# -- 8. a report section that raises --------------------------------------------------------------------


@pytest.fixture(scope="module")
def report_runs(sweep, tmp_path_factory) -> Path:
    """The shared sweep's seed-0 runs."""
    runs, _, _ = sweep
    copy = tmp_path_factory.mktemp("rules") / "runs"
    shutil.copytree(runs, copy, ignore=shutil.ignore_patterns("*_s1_*"))
    return copy


def test_a_plugin_section_that_raises_is_left_out_with_one_warning(report_runs, tmp_path, monkeypatch, caplog):
    import pandas as pd

    from posbench.report.pipeline import build_report
    from posbench.report.section import SECTIONS, Output, Section

    class Broken(Section):
        name, order = "broken", 15
        files = (Output("broken.csv", "half a table"),)

        def build(self, ctx, out):
            out.csv("broken.csv", pd.DataFrame({"a": [1]}))
            raise KeyError("a column this posbench does not write")

    monkeypatch.setitem(SECTIONS._external, ("broken", None), Broken)  # as an installed entry point would
    out = tmp_path / "report"
    with caplog.at_level(logging.WARNING, logger="posbench"):
        md = build_report(report_runs, out, protocols=["nonoverlapping"]).read_text()
    warnings = [r.getMessage() for r in caplog.records if "broken" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].startswith("leaving out report section 'broken': report section 'broken' "
                                                         "failed while building its part of the report (")
    assert warnings[0].endswith("): KeyError: 'a column this posbench does not write'")
    assert (out / "report.html").is_file() and "## Files" in md and "broken.csv" not in md
    assert not (out / "broken.csv").exists()  # its half-written file is not kept
    assert "## Loss by position" in md and (out / "per_position.png").is_file()  # the other sections are there


def test_a_builtin_section_that_raises_stops_the_report(report_runs, tmp_path, monkeypatch):
    from posbench.report.pipeline import build_report
    from posbench.report.section import SECTIONS

    cls = SECTIONS.get("intro")
    monkeypatch.setattr(cls, "build", lambda self, ctx, out: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        build_report(report_runs, tmp_path / "report", protocols=["nonoverlapping"])
