"""The one way posbench's Hydra entry points start, check and fail.

``hydra_app(config_name, task, check)`` makes the console-script ``main`` of an entry point:

1. **Check everything first.** Before Hydra starts anything, the command line is composed the way
   Hydra will compose it: one config for a single run, or, for ``-m``, every job of the sweep
   (the basic sweeper's cartesian product of the preset's ``hydra.sweeper.params`` and the command
   line). ``check`` sees all of them; one bad value refuses the whole sweep, before the first step,
   with nothing written (no run directory, no Hydra output folder).
2. **One line per user error.** A ``PosbenchError`` and Hydra's own multi-line errors (unknown key,
   a value of the wrong type, an override that does not parse) become
   ``posbench: error: <message>`` on stderr and exit status 2; Ctrl-C becomes one line and 130
   (every state file is written atomically, so a resume state on disk is whole).
3. **Failure policy.** Inside a sweep, a run that fails for any other reason is recorded as failed
   by the task and the sweep goes on; alone, it fails the command.
"""

from __future__ import annotations

import argparse
import logging
import re
import shlex
import sys
from collections import Counter
from typing import Any, Callable

import hydra
from hydra import initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra._internal.utils import get_args_parser
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException, OverrideParseException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import (
    ConfigAttributeError,
    ConfigKeyError,
    OmegaConfBaseException,
    ValidationError,
)

from posbench.cli.config import (
    CONF_DIR,
    PLUGIN_GROUPS,
    group_choices,
    group_options,
    param_defaults,
    register_configs,
    schema,
)
from posbench.cli.help import group_defaults, help_text, version_text
from posbench.core.errors import PosbenchError, user_errors
from posbench.core.hydra_state import in_sweep
from posbench.core.suggest import did_you_mean

log = logging.getLogger("posbench")
Convert = Callable[[DictConfig], Any]  # a composed job -> its typed settings (posbench.cli.config)
Check = Callable[[list[Any]], None]  # every job's settings, before the first runs


# -- composing every job before anything runs ---------------------------------------------------


def check_group_choices(overrides: list[str], conf_dir: str = CONF_DIR) -> None:
    """Unknown config-group options (``encoding=ropee``, also inside sweeps ``encoding=rope,ropee``)
    get one line naming the value and the valid choices, before Hydra prints its long version."""
    groups = group_options(overrides, conf_dir)
    for arg in overrides:
        key, sep, value = arg.partition("=")
        key = key.lstrip("~+")
        if sep and "." in key and key.replace(".", "/") in groups and not value.startswith("{"):
            # data.tokenizer=bpe sets the key to a string, where data/tokenizer=bpe chooses the group's option
            # (OmegaConf's own words: "Invalid type assigned: str is not a subclass of ...")
            group = key.replace(".", "/")
            bad = [c for c in _sweep_values(value) if c not in groups[group]]
            if not bad:
                raise PosbenchError(f"{arg}: {key} is a config group, chosen with a slash: write {group}={value}")
            raise PosbenchError(f"{arg}: {key} is a config group, chosen with a slash ({group}=<option>), and {bad[0]!r} "
                                f"is not one of its options{did_you_mean(bad[0], groups[group])}; valid: "
                                f"{', '.join(groups[group])}")
        if not sep or key not in groups or value in ("null", ""):
            continue
        for choice in _sweep_values(value):
            if choice not in groups[key]:
                hint = did_you_mean(choice, groups[key])
                raise PosbenchError(f"unknown {key} {choice!r}{hint}; valid: {', '.join(groups[key])}")


def _sweep_values(value: str) -> list[str]:
    """The options of ``a,b`` or ``choice(a,b)`` (one for a plain value)."""
    return [v.strip() for v in value.removeprefix("choice(").removesuffix(")").split(",") if v.strip()]


def compose_jobs(config_name: str, overrides: list[str], multirun: bool) -> list[DictConfig]:
    """The config of every job Hydra would run for this command line (Hydra's own composition and
    sweep expansion, so what is checked is exactly what runs)."""
    register_configs(overrides)
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        app = GlobalHydra.instance().hydra
        mode = RunMode.MULTIRUN if multirun else RunMode.RUN
        cfg = app.compose_config(config_name, overrides, run_mode=mode, with_log_configuration=False)
        if not multirun:
            return [cfg]
        sweeper = cfg.hydra.sweeper
        if not str(sweeper.get("_target_", "")).endswith("BasicSweeper"):
            log.warning("sweeper %s: jobs are checked as they start", sweeper.get("_target_"))
            return []
        params = [f"{k}={v}" for k, v in (sweeper.get("params") or {}).items()] + list(cfg.hydra.overrides.task)
        parsed = OverridesParser.create(config_loader=app.config_loader).parse_overrides(params)
        (jobs,) = BasicSweeper.split_arguments(parsed, None)
        return [app.config_loader.load_sweep_config(cfg, list(job)) for job in jobs]


def _schema_keys(config_name: str, parent: str) -> list[str]:
    """Valid keys under ``parent`` in the structured schema of a config."""
    node = OmegaConf.select(schema(config_name), parent) if parent else schema(config_name)
    return sorted(node.keys()) if isinstance(node, DictConfig) else []


_AMBIGUOUS = re.compile(r"Ambiguous value for argument '(.*)'")
_APPEND = re.compile(r"Could not append to config\. An item is already at '([^']*)'")
_CONVERSION = re.compile(r"Value '(.*)' of type '.*' could not be converted to (\w+)")
_KINDS = {"Integer": "an integer", "Float": "a number", "Boolean": "true or false", "String": "a string"}


def hydra_error_line(e: Exception, config_name: str, overrides: list[str]) -> str:
    """Hydra's and OmegaConf's multi-line composition errors as one line for a user."""
    chain, x = [], e
    while x is not None and len(chain) < 8:
        chain.append(x)
        x = x.__cause__ or x.__context__
    for c in chain:
        if isinstance(c, (ConfigAttributeError, ConfigKeyError)) and getattr(c, "full_key", None):
            parent = c.full_key.rpartition(".")[0]
            if parent in PLUGIN_GROUPS and (line := _no_parameter(parent, c.full_key, overrides)):
                return line
            valid = _schema_keys(config_name, parent)
            typed = _override_of(c.full_key, overrides)
            if not valid and parent.partition(".")[0] in PLUGIN_GROUPS and typed and not typed.startswith("+"):
                # a free-form mapping of a plug-in (a layer pattern's encoding.params) starts empty
                return f"unknown config key {c.full_key!r}: {parent} holds no keys until one is added; write +{typed}"
            where = f"of {parent}" if parent else "at the top level"
            hint = did_you_mean(c.full_key.rpartition(".")[2], valid)  # trian.steps: did you mean train?
            return f"unknown config key {c.full_key!r}{hint}; valid keys {where}: {', '.join(valid)}"
        if isinstance(c, ValidationError) and getattr(c, "full_key", None):
            m = _CONVERSION.search(str(c))
            if m:
                return f"{c.full_key} must be {_KINDS.get(m.group(2), m.group(2))}, got {m.group(1)!r}"
            return f"bad value for {c.full_key}: {str(c).splitlines()[0]}"
    if m := _APPEND.search(str(e)):  # ``+key=value`` for a key the config already has (a plug-in's defaults)
        typed = _override_of(m.group(1), overrides) or m.group(1)
        return f"{m.group(1)} is already in the config (its defaults list it): set it without +, as {typed.lstrip('+')}"
    if isinstance(e, OverrideParseException):
        bad = next((o for o in overrides if _unparsable(OverridesParser.create(), o)), overrides[0] if overrides else "")
        key, sep, val = bad.partition("=")
        if not sep and config_name == "evaluate":  # posbench-eval runs/<id>: the run is a key like any other
            return f"cannot parse override {bad!r}: name the run as run_dir={bad}"
        if sep and not val.isascii() and not _unparsable(OverridesParser.create(), f'{key}="{val}"'):
            return (f"cannot parse override {bad!r}: Hydra's override grammar needs quotes around a value with non-ASCII "
                    f"""characters; write '{key}="{val}"' (the outer single quotes are for the shell)""")
        why = str(e.__cause__ or e).splitlines()[0].removeprefix(f"Error parsing override '{bad}'").strip() or "syntax error"
        return f"cannot parse override {bad!r} ({why}); overrides look like key=value, sweeps like key=a,b"
    if isinstance(e, MissingConfigException):
        return str(e).splitlines()[0]
    if (m := _AMBIGUOUS.match(str(e))) and config_name in PROGRAMS:
        # Hydra's own hint ("add --multirun") is on a later line of its message: keep it in the one line
        arg = m.group(1)
        key, _, val = arg.partition("=")
        as_list = f"; for a list value write {key}=[{val}]" if "." in key else ""  # a group's option is never a list
        typed = " ".join(shlex.quote(o) for o in overrides) or arg  # the user's whole command, with -m
        return f"{arg} gives several values: add -m to run one job for each ({PROGRAMS[config_name]} -m {typed}){as_list}"
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def _no_parameter(group: str, full_key: str, overrides: list[str]) -> str | None:
    """``encoding 'rope' has no parameter 'bsae'; valid: base``: an encoding's or a task's keys
    are its Params' fields, which the schema (free-form there) cannot list."""
    name = (group_choices(overrides, group) or [group_defaults(CONF_DIR).get(group, "")])[-1]
    if not name:
        return None
    try:
        PLUGIN_GROUPS[group].get(name)
    except PosbenchError as e:  # a plug-in that cannot be loaded: that is the cause, not the key
        return str(e)
    fields, key = param_defaults(group, name), full_key.rpartition(".")[2]
    if not fields:  # "+key" would not help: the plug-in's Params refuse every key
        return f"{group} {name!r} has no parameters, so {key!r} cannot be set"
    return f"{group} {name!r} has no parameter {key!r}; valid: {', '.join(sorted(fields))}"


def _override_of(key: str, overrides: list[str]) -> str | None:
    """The override on the command line that sets ``key`` or a key below it, as typed."""
    return next((o for o in overrides if (k := o.partition("=")[0].lstrip("+~")) == key or k.startswith(key + ".")), None)


def _unparsable(parser, override: str) -> bool:
    try:
        parser.parse_overrides([override])
    except Exception:  # noqa: BLE001
        return True
    return False


PROGRAMS = {"config": "posbench-train", "evaluate": "posbench-eval"}


def parse_command_line(argv: list[str], program: str) -> tuple[argparse.Namespace, list[str]]:
    """Hydra's flags and the overrides, in any order (``seed=0,1 -m encoding=rope``): the parsed
    arguments, and ``argv`` with the flags first, the order Hydra's own parser reads. A usage
    error (an unknown flag, a flag without its value) is a PosbenchError of one line."""
    parser = get_args_parser()

    def error(message: str):
        raise PosbenchError(f"{message} ({program} --help lists the flags)")

    parser.error = error  # argparse prints the usage and exits; one line instead
    args = parser.parse_intermixed_args(argv)
    # Hydra runs one mode at a time and says so in a traceback: one line naming the flags given instead
    modes = [flag for flag, given in (("-m", args.multirun), ("--cfg", args.cfg), ("--info", args.info),
                                      ("--shell-completion", args.shell_completion)) if given]
    if len(modes) > 1:
        hint = (" (--cfg job prints one job's config: leave out -m and give one value per key)"
                if "-m" in modes and "--cfg" in modes else "")
        raise PosbenchError(f"{' and '.join(modes)} cannot be combined: give one of them{hint}")
    pending = Counter(args.overrides)
    flags = []
    for arg in argv:
        if pending[arg]:
            pending[arg] -= 1
        else:
            flags.append(arg)
    return args, [*flags, *args.overrides]


def preflight(argv: list[str], config_name: str, convert: Convert, check: Check) -> None:
    """Compose, convert (every value checked) and check every job of this command line;
    PosbenchError on the first problem."""
    args, _ = parse_command_line(argv, PROGRAMS.get(config_name, "posbench"))
    if args.help or args.hydra_help or args.cfg or args.info or args.shell_completion or args.config_dir or args.config_path:
        return  # Hydra prints something instead of running, or looks at another config tree
    overrides = list(args.overrides)
    check_group_choices(overrides)
    try:
        jobs = compose_jobs(config_name, overrides, args.multirun)
        check([convert(cfg) for cfg in jobs])
    except (HydraException, OmegaConfBaseException) as e:
        raise PosbenchError(hydra_error_line(e, config_name, overrides)) from e


# -- the entry point ----------------------------------------------------------------------------


def hydra_app(config_name: str, convert: Convert, task: Callable[[Any], object], check: Check) -> Callable[[], None]:
    """``main`` of a Hydra entry point: preflight checks, then Hydra runs ``task`` per job on the
    job's typed settings (``convert``: DictConfig -> settings; the only place one is read)."""
    @hydra.main(version_base="1.3", config_path=CONF_DIR, config_name=config_name)
    def _job(cfg: DictConfig) -> None:
        with user_errors():
            try:
                task(convert(cfg))
            except (PosbenchError, KeyboardInterrupt):
                raise
            except OSError as e:  # a full disk, a folder that became read-only: one line, no traceback
                if in_sweep():
                    log.error("run failed: %s; continuing the sweep", os_error_line(e))
                else:
                    raise PosbenchError(os_error_line(e)) from e
            except Exception:
                # one failed run must not sink a sweep: the task recorded it as failed; the sweep goes on
                if not in_sweep():
                    raise
                log.exception("run failed; recorded as status=failed, continuing the sweep")

    def main() -> None:
        with user_errors():
            if "--version" in sys.argv[1:]:  # posbench's, not Hydra's
                print(version_text())
                sys.exit(0)
            args, argv = parse_command_line(sys.argv[1:], PROGRAMS.get(config_name, "posbench"))
            if args.help and not args.hydra_help:  # posbench's page; --hydra-help is Hydra's
                print(help_text(config_name), end="")
                sys.exit(0)
            sys.argv[1:] = argv  # flags first: Hydra's parser does not take them after the overrides
            register_configs(argv)
            preflight(argv, config_name, convert, check)
            _job()

    return main


def os_error_line(e: OSError) -> str:
    where = f" {e.filename}" if e.filename else ""
    return f"cannot access{where}: {e.strerror or e}"
