"""How entry points turn bad input into one line on stderr and a non-zero exit."""

from __future__ import annotations

import contextlib
import sys

from posbench.errors import PosbenchError


@contextlib.contextmanager
def user_errors():
    """PosbenchError -> ``posbench: error: <message>`` and exit 2, no traceback."""
    try:
        yield
    except PosbenchError as e:
        print(f"posbench: error: {e}", file=sys.stderr)
        sys.exit(2)


def check_group_choices(argv: list[str], conf_dir: str) -> None:
    """Unknown config-group options (``encoding=ropee``, also inside sweeps ``encoding=rope,ropee``)
    get one line naming the value and the valid choices, before Hydra prints its long version."""
    from pathlib import Path

    groups = {p.name: sorted(f.stem for f in p.glob("*.yaml")) for p in Path(conf_dir).iterdir() if p.is_dir()}
    for arg in argv:
        key, sep, value = arg.partition("=")
        key = key.lstrip("~+")
        if not sep or key not in groups or value in ("null", ""):
            continue
        sweep = value.removeprefix("choice(").removesuffix(")")
        for choice in (v.strip() for v in sweep.split(",")):
            if choice and choice not in groups[key]:
                raise PosbenchError(f"unknown {key} {choice!r}; valid: {', '.join(groups[key])}")


def hydra_entry(hydra_main, conf_dir: str) -> None:
    """Run a @hydra.main function after the one-line checks of its command line."""
    with user_errors():
        check_group_choices(sys.argv[1:], conf_dir)
    hydra_main()


def launch_command(program: str) -> str | None:
    """The command line that reproduces this Hydra job on its own (``program`` + its overrides),
    or None outside Hydra. In a sweep it is the one job's command, not the sweep's."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    task = list(HydraConfig.get().overrides.task)
    return " ".join([program, *task])
