"""The command-line layer's configs: Hydra's schemas, the config groups, and the one conversion of a
composed ``DictConfig`` into typed settings (``to_spec``, ``to_eval_request``).

The schemas are derived from the frozen settings classes that live beside their owners
(posbench/core/settings.py), so Hydra checks every type (``train_len=abc`` fails) against the same
fields and defaults the code reads. Nothing below this module and posbench/cli/ sees a
``DictConfig``: posbench-train hands a ``RunSpec`` (posbench/spec.py) to posbench.jobs.train.run,
posbench-eval an ``EvalRequest`` to posbench.jobs.evaluate.run; both check values through the settings
classes' own ``check`` methods, so the two commands refuse the same values.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import field
from pathlib import Path
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from omegaconf import MISSING, DictConfig, OmegaConf

from posbench.core.device import Runtime
from posbench.core.errors import PosbenchError
from posbench.core.registry import plugin_code
from posbench.core.settings import from_mapping, hydra_schema
from posbench.core.tracking import LoggerConfig
from posbench.data.corpus import DataConfig
from posbench.encodings import ENCODINGS
from posbench.evaluation.settings import EvalConfig
from posbench.jobs.evaluate import EvalRequest, with_run_defaults
from posbench.model.transformer import ModelConfig
from posbench.spec import RUN_KEYS, RUNTIME_KEYS, RunSpec
from posbench.store.rundir import RunDir
from posbench.tasks import TASKS
from posbench.training.extend import ExtendConfig
from posbench.training.trainer import TrainConfig

# the yaml tree ships inside the package (the repository's top-level conf/ is a link to it), so a
# non-editable install has it too; users add their own folders through hydra.searchpath
CONF_DIR = str(Path(__file__).resolve().parents[1] / "conf")  # posbench/conf, shipped inside the package


def _top_level(cls: type, names: tuple[str, ...]) -> list[tuple]:
    """Fields of a settings class as top-level config keys (``train_len=128``, ``device=cuda``)."""
    hints = typing.get_type_hints(cls)
    return [(f.name, hints[f.name], field(default=f.default)) for f in dataclasses.fields(cls) if f.name in names]


EVAL_RUNTIME_KEYS = ("device", "threads", "attention", "precision")  # posbench-eval does not train: no compile

# posbench-train: every group is filled by its yaml (``???`` until then); the runtime keys are top-level
Config = dataclasses.make_dataclass("Config", [
    ("encoding", Any, field(default=MISSING)),  # free-form here: checked against the encoding's Params
    ("task", Any, field(default=MISSING)),  # lm or a synthetic task: checked against its Params
    ("model", hydra_schema(ModelConfig), field(default=MISSING)),
    ("data", hydra_schema(DataConfig), field(default=MISSING)),
    ("train", hydra_schema(TrainConfig), field(default=MISSING)),
    ("eval", hydra_schema(EvalConfig), field(default=MISSING)),
    ("logger", hydra_schema(LoggerConfig), field(default=MISSING)),
    *_top_level(RunSpec, RUN_KEYS),
    *_top_level(Runtime, RUNTIME_KEYS),
    ("extend", hydra_schema(ExtendConfig), field(default_factory=hydra_schema(ExtendConfig))),
], namespace={"__module__": __name__})

# posbench-eval: evaluate an existing run directory again
EvaluateConfig = dataclasses.make_dataclass("EvaluateConfig", [
    ("eval", hydra_schema(EvalConfig), field(default=MISSING)),
    ("run_dir", Optional[str], field(default=None)),
    *_top_level(Runtime, EVAL_RUNTIME_KEYS),
], namespace={"__module__": __name__})

# the schemas with every group filled by its defaults, so that every nested key can be looked up
SCHEMAS = {
    "config": lambda: Config(encoding={}, task={}, model=hydra_schema(ModelConfig)(), data=hydra_schema(DataConfig)(),
                             train=hydra_schema(TrainConfig)(), eval=hydra_schema(EvalConfig)(),
                             logger=hydra_schema(LoggerConfig)()),
    "evaluate": lambda: EvaluateConfig(eval=hydra_schema(EvalConfig)()),
}


PLUGIN_GROUPS = {"encoding": ENCODINGS, "task": TASKS}


def register_configs(overrides: list[str] = ()) -> None:
    """The schemas, and a config-group option for every encoding and task that has no yaml of its
    own: a built-in without one, an installed plug-in, and a ``module:attr`` path given on the
    command line (``encoding=mypkg.enc:MyEnc``). Each gets its Params' defaults. Plug-ins are
    named here, not imported, except those the command line chooses: their option lists their
    Params' defaults, as a yaml would, so that ``encoding=logbias encoding.slope=0.5`` sets a key
    that exists (Hydra refuses a new key without ``+``)."""
    cs = ConfigStore.instance()
    cs.store(name="posbench_schema", node=Config)
    cs.store(name="posbench_eval_schema", node=EvaluateConfig)
    for group, registry in PLUGIN_GROUPS.items():
        have = {p.stem for p in (Path(CONF_DIR) / group).glob("*.yaml")}
        chosen = set(group_choices(overrides, group))
        for name in registry.names() + path_choices(overrides, group):
            if name not in have:
                cs.store(group=group, name=name, node={"name": name, **(param_defaults(group, name) if name in chosen else {})})


def group_choices(overrides, group: str) -> list[str]:
    """The options of ``group`` a command line names (``encoding=rope``, also inside a sweep: a,b)."""
    out = []
    for arg in overrides:
        key, sep, value = arg.partition("=")
        if sep and key.lstrip("+~") == group:
            out += [v.strip() for v in value.removeprefix("choice(").removesuffix(")").split(",") if v.strip()]
    return out


def param_defaults(group: str, name: str) -> dict:
    """The defaults of a plug-in's Params (empty when it cannot be loaded: the job's conversion
    says why, in one line)."""
    try:
        cls = PLUGIN_GROUPS[group].get(name)
    except PosbenchError:
        return {}
    params = getattr(cls, "Params", None)
    if params is None or not dataclasses.is_dataclass(params):
        return {}
    out = {}
    with plugin_code(group, name, params.__module__, "giving its Params' defaults"):  # a default_factory may raise
        for f in dataclasses.fields(params):
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = f.default_factory()
    return out


def path_choices(overrides, group: str) -> list[str]:
    """The ``module:attr`` options of ``group`` on a command line (also inside a sweep: a,b)."""
    return [v for v in group_choices(overrides, group) if ":" in v]


def schema(config_name: str) -> DictConfig:
    """The structured schema of ``config`` (posbench-train) or ``evaluate`` (posbench-eval)."""
    return OmegaConf.structured(SCHEMAS[config_name]())


def check_missing(cfg: DictConfig) -> None:
    """Values a config group leaves to the user (``???``, e.g. data=local's path)."""
    missing = []
    for key in cfg.keys():
        if key == "hydra":  # Hydra's own node has values known only inside a job
            continue
        if OmegaConf.is_missing(cfg, key):
            missing.append(str(key))
        elif isinstance(cfg[key], DictConfig):
            missing += sorted(f"{key}.{k}" for k in OmegaConf.missing_keys(cfg[key]))
    if missing:
        raise PosbenchError(f"{missing[0]} has no value; give it on the command line, e.g. {missing[0]}=...")


def resolved(cfg: DictConfig) -> dict:
    """The composed config as plain values, without Hydra's own node."""
    check_missing(cfg)
    # section by section: Hydra's node holds values (the job number) that exist only inside a job
    return {k: OmegaConf.to_container(cfg[k], resolve=True) if OmegaConf.is_config(cfg[k]) else cfg[k]
            for k in cfg.keys() if k != "hydra"}


def to_spec(cfg: DictConfig) -> RunSpec:
    """posbench-train: the typed spec of one composed job, every value checked (one-line errors)."""
    spec = RunSpec.from_config(resolved(cfg))
    spec.check()
    return spec


def to_eval_request(cfg: DictConfig) -> EvalRequest:
    """posbench-eval: the typed request of one composed job, checked against the run it names. The
    eval settings the command line does not give are the run's own (jobs.evaluate.with_run_defaults),
    not conf/eval's: a re-evaluation scores what the run scored, at the lengths and rows asked for."""
    c = resolved(cfg)
    run = run_settings(c.get("run_dir"))
    asked, taken = with_run_defaults(c.pop("eval"), run.get("eval") or {}, given_eval_keys(cfg))
    from_run = [f"eval.{k}={_as_override(v)}" for k, v in taken.items()]
    # an fp32 run is scored in fp32 unless the command line says otherwise: its records must not mix
    # bf16 scores into fp32 ones (precision is no part of the run id)
    if "precision" not in given_keys(cfg) and run.get("precision", "auto") != c["precision"]:
        c["precision"] = run["precision"]
        from_run.append(f"precision={run['precision']}")
    request = EvalRequest(eval=from_mapping(EvalConfig, asked, "eval."), run_dir=c.pop("run_dir"),
                          runtime=from_mapping(Runtime, c), from_run=tuple(from_run))
    request.check()
    return request


def _as_override(x: Any) -> str:
    """A value as an override writes it: null, true, [nonoverlapping], 256."""
    if isinstance(x, (list, tuple)):
        return "[" + ",".join(_as_override(v) for v in x) + "]"
    return "null" if x is None else str(x).lower() if isinstance(x, bool) else str(x)


def task_overrides(cfg: DictConfig) -> list[str]:
    """This job's command-line overrides (Hydra's record: the composed config's ``hydra`` node where it
    has one, else the running job's)."""
    if "hydra" in cfg:
        return list(cfg.hydra.overrides.task)
    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []


def given_keys(cfg: DictConfig) -> set[str]:
    """The keys this job's command line sets (``precision``, ``eval.multiples``, ...)."""
    return {arg.partition("=")[0].lstrip("+~") for arg in task_overrides(cfg)}


def given_eval_keys(cfg: DictConfig) -> set[str]:
    """The ``eval.*`` fields this job's command line sets; every field where it chooses an
    ``eval=<option>`` file of the user's, whose keys are theirs."""
    keys = set()
    for arg in task_overrides(cfg):
        key, _, option = arg.partition("=")
        key = key.lstrip("+~")
        if key == "eval" and option != "default":
            return {f.name for f in dataclasses.fields(EvalConfig)}
        if key.startswith("eval."):
            keys.add(key.split(".")[1])
    return keys


def run_settings(run_dir) -> dict:
    """The run's config.yaml ({} where it cannot be read: the request's own check then refuses the run
    in one line)."""
    if not run_dir:
        return {}
    try:
        settings = RunDir(Path(run_dir).expanduser()).read_run_config()
    except (ValueError, OSError):
        return {}
    return settings if isinstance(settings, dict) else {}


def config_dirs(overrides: list[str], conf_dir: str = CONF_DIR) -> list[Path]:
    """posbench's config folder and the user's, from ``hydra.searchpath=[file://..., pkg://...]``."""
    dirs = [Path(conf_dir)]
    for arg in overrides:
        key, _, value = arg.partition("=")
        if key.lstrip("+") != "hydra.searchpath":
            continue
        for entry in (v.strip().strip("'\"") for v in value.strip("[]").split(",")):
            if entry.startswith("pkg://"):
                import importlib.util

                found = importlib.util.find_spec(entry.removeprefix("pkg://"))
                dirs += [Path(p) for p in (found.submodule_search_locations or [])] if found else []
            elif entry:
                dirs.append(Path(entry.removeprefix("file://")).expanduser())
    return dirs


def group_options(overrides: list[str], conf_dir: str = CONF_DIR) -> dict[str, list[str]]:
    """Every option of every config group: the yaml files of each config folder, and the encodings
    and tasks of the registries that have no yaml (posbench.cli.config.register_configs)."""
    groups: dict[str, set[str]] = {}
    for d in config_dirs(overrides, conf_dir):
        # nested groups too (data/tokenizer: its options were missing from --help and from the refusal of a
        # mistyped one); not Hydra's own (hydra/launcher=basic and the like are Hydra's built-ins, no yaml here)
        for sub in (p for p in d.rglob("*") if p.is_dir()) if d.is_dir() else []:
            name = sub.relative_to(d).as_posix()
            if name != "hydra" and not name.startswith("hydra/"):
                groups.setdefault(name, set()).update(f.stem for f in sub.glob("*.yaml"))

    for group, registry in (("encoding", ENCODINGS), ("task", TASKS)):
        groups.setdefault(group, set()).update(registry.names() + path_choices(overrides, group))
    return {k: sorted(v) for k, v in groups.items()}
