"""The budget study's commands, one per learning rate, from the learning-rate grid's report:

    python scripts/budget_commands.py results/budget_lr/tuning.csv [extra overrides ...]

the grid's own extension where a choice lies at its edge (one step of the grid's ratio further out):

    python scripts/budget_commands.py --edges runs/map_lr/report/tuning.csv [extra overrides ...]

the second rate of each tie a grid left (its ``decision`` "tied: ... train both"), at one length:

    python scripts/budget_commands.py --ties runs/map_lr/report/tuning.csv [--length 64] [--tokens 2048] \
        [extra overrides ...]

and the map's (experiment=map), one per point of the map and learning rate:

    python scripts/budget_commands.py --map runs/map_lr/report/tuning.csv \
        [--rates MODEL:ENC=LR,ENC=LR,...] [--centre MODEL:LEN] [--lengths 32,64,128,256] [--tokens 2048] \
        [--corpora pydocs] [--seeds MODEL=0,1] [extra overrides ...]

The map is lines through a centre (``--centre``, small at 64 by default): the centre model at every
length of ``--lengths`` with train.batch_size = ``--tokens`` / length (tokens per step held), the
centre on each corpus of ``--corpora``, and every other model of the grid (or ``--rates``) at the
centre length. Each model's rates come from its grid's choices (the same checks as below, and the
choice must rest on 2 seeds or more) or from ``--rates`` (given by hand: a committed decision, e.g.
results/budget_lr_seed1/rate_choice.md's, not checked here). ``--seeds MODEL=LIST`` trains a model at
fewer seeds (default ``base=0,1``).

The budget study's protocol: each encoding's learning rate is chosen on 1x validation loss alone
(``experiment=budget_lr``: one seed, the middle budget) and used at every budget of
``experiment=budget``. ``tuning.csv`` is what posbench-report writes for a learning-rate grid (the
``chosen`` row of each encoding). Prints one ``posbench-train -m experiment=budget`` line per
chosen learning rate, with the encodings that chose it; refuses (exit 1, one line) where a choice
lies at the edge of the grid (its best may lie outside: extend the grid first) or an encoding of the
preset has no choice.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import pandas as pd
import yaml

PRESET = Path(__file__).resolve().parents[1] / "posbench" / "conf" / "experiment" / "budget.yaml"


def preset_encodings() -> list[str]:
    sweep = yaml.safe_load(PRESET.read_text())["hydra"]["sweeper"]["params"]
    return [e.strip() for e in str(sweep["encoding"]).split(",")]


def commands(tuning: pd.DataFrame, extra: list[str]) -> list[str]:
    """One command per chosen learning rate (SystemExit with one line where the choice cannot be used)."""
    if tuning[["model", "train_len"]].drop_duplicates().shape[0] > 1 or (tuning["lr_mult"] != 1).any():
        sys.exit("budget_commands: the grid varies more than train.lr (models, train_len or encoding.lr_mult); "
                 "experiment=budget_lr varies the learning rate only")
    chosen = tuning[tuning["chosen"].astype(bool)]
    for encoding, g in tuning.groupby("encoding"):
        tried, pick = sorted(set(g["lr"])), g.loc[g["chosen"].astype(bool), "lr"]
        if pick.empty:
            sys.exit(f"budget_commands: {encoding} has no chosen learning rate in the grid")
        if len(tried) < 3:
            sys.exit(f"budget_commands: {encoding} was tried at {len(tried)} learning rates; a grid brackets a choice "
                     "with 3 or more")
        if pick.iloc[0] in (tried[0], tried[-1]):
            sys.exit(f"budget_commands: {encoding} chose lr {pick.iloc[0]:g}, the edge of the grid {tried}: "
                     "its best may lie outside; extend the grid (train.lr) first")
    if missing := sorted(set(preset_encodings()) - set(chosen["encoding"])):
        sys.exit(f"budget_commands: no learning rate chosen for {', '.join(missing)} (the grid's report lacks them)")
    out = []
    for lr, g in chosen[chosen["encoding"].isin(preset_encodings())].groupby("lr"):
        encodings = ",".join(e for e in preset_encodings() if e in set(g["encoding"]))  # the preset's order
        out.append(" ".join(["posbench-train -m experiment=budget", f"encoding={encodings}", f"train.lr={lr:g}",
                             *map(shlex.quote, extra)]))
    return out


MAP_PRESET = PRESET.with_name("map.yaml")


def map_encodings() -> list[str]:
    sweep = yaml.safe_load(MAP_PRESET.read_text())["hydra"]["sweeper"]["params"]
    return [e.strip() for e in str(sweep["encoding"]).split(",")]


def grid_rates(tuning: pd.DataFrame) -> dict[tuple[str, str], float]:
    """{(model, encoding): chosen lr} of a grid report's tuning.csv, checked as ``commands`` checks a
    choice, and refused where the chosen rate rests on fewer than 2 seeds (the rate rule)."""
    out = {}
    for (model, encoding), g in tuning.groupby(["model", "encoding"]):
        tried, pick = sorted(set(g["lr"])), g[g["chosen"].astype(bool)]
        if pick.empty:
            sys.exit(f"budget_commands: {encoding} ({model}) has no chosen learning rate in the grid")
        if len(tried) < 3:
            sys.exit(f"budget_commands: {encoding} ({model}) was tried at {len(tried)} learning rates; a grid brackets "
                     "a choice with 3 or more")
        lr = float(pick["lr"].iloc[0])
        if lr in (tried[0], tried[-1]):
            sys.exit(f"budget_commands: {encoding} ({model}) chose lr {lr:g}, the edge of the grid {tried}: its best may "
                     "lie outside; extend the grid (train.lr) first")
        if int(pick["seeds"].iloc[0]) < 2:
            sys.exit(f"budget_commands: {encoding} ({model}) chose lr {lr:g} on {int(pick['seeds'].iloc[0])} seed; the "
                     "map's rates rest on 2 seeds or more (seed=0,1 in the grid)")
        out[(str(model), str(encoding))] = lr
    return out


def edge_steps(tuning: pd.DataFrame) -> list[tuple[str, float, str]]:
    """(model, lr, encoding) one grid step past the edge for each choice that lies on the edge of its
    grid (its best may lie outside: the grid is extended there before the choice is used). The step
    is the ratio of the edge to its neighbour (2 on the map's grids)."""
    out = []
    for (model, encoding), g in tuning.groupby(["model", "encoding"]):
        tried, pick = sorted(set(g["lr"])), g.loc[g["chosen"].astype(bool), "lr"]
        if pick.empty or len(tried) < 2:
            continue
        if pick.iloc[0] == tried[0]:
            out.append((str(model), tried[0] * tried[0] / tried[1], str(encoding)))
        elif pick.iloc[0] == tried[-1]:
            out.append((str(model), tried[-1] * tried[-1] / tried[-2], str(encoding)))
    return out


def edge_commands(tuning: pd.DataFrame, extra: list[str]) -> list[str]:
    """One ``experiment=map_lr`` line per model and new rate, naming the encodings to try there (none
    where no choice lies on an edge)."""
    by_rate: dict[tuple[str, float], list[str]] = {}
    for model, lr, encoding in edge_steps(tuning):
        by_rate.setdefault((model, lr), []).append(encoding)
    return [" ".join(["posbench-train -m experiment=map_lr", f"model={model}", f"encoding={','.join(encodings)}",
                      f"train.lr={lr:.3g}", *map(shlex.quote, extra)]) for (model, lr), encodings in sorted(by_rate.items())]


def map_line(encodings: list[str], lr: float, model: str, length: int, tokens: int, extra: list[str],
             corpus: str | None = None, seeds: str | None = None) -> str:
    """One ``posbench-train -m experiment=map`` line: ``encodings`` at ``lr`` on ``model`` at ``length``, with
    train.batch_size = ``tokens`` / length (tokens per step held), and the corpus and seeds where given."""
    words = ["posbench-train -m experiment=map", f"encoding={','.join(encodings)}", f"train.lr={lr:g}",
             f"model={model}", f"train_len={length}", f"train.batch_size={tokens // length}"]
    words += [f"data={corpus}"] if corpus else []
    words += [f"seed={seeds}"] if seeds is not None else []
    return " ".join(words + list(map(shlex.quote, extra)))


def tie_rates(tuning: pd.DataFrame) -> dict[tuple[str, str], float]:
    """{(model, encoding): the runner-up's lr} where the grid's choice is a tie between its best and the
    runner-up, neither the common rate (posbench.report.analysis.tuning.decide: "tied: ... train both"); the map
    trains the best, this the other."""
    out = {}
    for (model, encoding), g in tuning.groupby(["model", "encoding"]):
        chosen = g["chosen"].astype(bool)
        if chosen.any() and str(g.loc[chosen, "decision"].iloc[0]).startswith("tied"):
            out[(str(model), str(encoding))] = float(g[~chosen].sort_values("val_loss")["lr"].iloc[0])
    return out


def tie_commands(ties: dict[tuple[str, str], float], length: int, tokens: int, extra: list[str]) -> list[str]:
    """One experiment=map line per model and second rate, at ``length`` with batch ``tokens`` / length."""
    by_rate: dict[tuple[str, float], list[str]] = {}
    for (model, encoding), lr in ties.items():
        by_rate.setdefault((model, lr), []).append(encoding)
    order = {e: i for i, e in enumerate(map_encodings())}
    return [map_line(sorted(encs, key=lambda e: order.get(e, 99)), lr, model, length, tokens, extra)
            for (model, lr), encs in sorted(by_rate.items())]


def ties_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="budget_commands.py --ties", description="the second rates of a grid's ties")
    parser.add_argument("tuning", type=Path, help="a grid report's tuning.csv (experiment=map_lr)")
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=2048, help="tokens per step (batch = tokens / length)")
    args, extra = parser.parse_known_args(argv)
    if not args.tuning.is_file():
        sys.exit(f"budget_commands: {args.tuning} does not exist; give the map_lr report's tuning.csv")
    if args.length < 1 or args.tokens % args.length:
        sys.exit(f"budget_commands: --tokens {args.tokens} is not a multiple of --length {args.length}")
    lines = tie_commands(tie_rates(pd.read_csv(args.tuning)), args.length, args.tokens, extra)
    if lines:
        print("\n".join(lines))


def given_rates(specs: list[str]) -> dict[tuple[str, str], float]:
    """``--rates small:nope=0.002,rope=0.002`` -> {(small, nope): 0.002, ...}."""
    out = {}
    for spec in specs:
        model, _, pairs = spec.partition(":")
        try:
            for pair in pairs.split(","):
                encoding, lr = pair.split("=")
                out[(model, encoding)] = float(lr)
        except ValueError:
            sys.exit(f"budget_commands: --rates {spec!r} is not MODEL:ENC=LR,ENC=LR,...")
    return out


def map_commands(rates: dict[tuple[str, str], float], centre: tuple[str, int], lengths: list[int], tokens: int,
                 corpora: list[str], seeds: dict[str, str], extra: list[str]) -> list[str]:
    """experiment=map's commands: per point of the map (module doc) and learning rate, one line naming the
    encodings trained at that rate there. SystemExit with one line where a model lacks an encoding's rate
    or a length does not divide the tokens per step."""
    model0, length0 = centre
    models = sorted({m for m, _ in rates}, key=lambda m: (m != model0, m))
    for model in models:
        if missing := [e for e in map_encodings() if (model, e) not in rates]:
            sys.exit(f"budget_commands: no learning rate for {', '.join(missing)} at model {model}")
    if model0 not in models:
        sys.exit(f"budget_commands: no learning rates for the centre's model {model0} (give --rates {model0}:ENC=LR,...)")
    if bad := [n for n in lengths if tokens % n]:
        sys.exit(f"budget_commands: --tokens {tokens} is not a multiple of train_len {bad[0]}; tokens per step are "
                 "held fixed, so each length's batch is tokens / length")
    points = [(model0, n, None) for n in lengths] + [(model0, length0, c) for c in corpora] + \
        [(m, length0, None) for m in models if m != model0]
    out = []
    for model, length, corpus in points:
        by_rate: dict[float, list[str]] = {}
        for e in map_encodings():
            by_rate.setdefault(rates[(model, e)], []).append(e)
        for lr, encodings in sorted(by_rate.items()):
            out.append(map_line(encodings, lr, model, length, tokens, extra, corpus, seeds.get(model)))
    return out


def map_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="budget_commands.py --map", description="experiment=map's commands")
    parser.add_argument("tuning", type=Path, nargs="?", help="a grid report's tuning.csv (experiment=map_lr)")
    parser.add_argument("--rates", action="append", default=[], metavar="MODEL:ENC=LR,...")
    parser.add_argument("--centre", default="small:64", metavar="MODEL:LEN")
    parser.add_argument("--lengths", default="32,64,128,256")
    parser.add_argument("--tokens", type=int, default=2048, help="tokens per step, held at every length")
    parser.add_argument("--corpora", default="pydocs", help="corpora beside the default, at the centre ('' for none)")
    parser.add_argument("--seeds", action="append", default=None, metavar="MODEL=LIST")
    args, extra = parser.parse_known_args(argv)
    rates = {}
    if args.tuning is not None:
        if not args.tuning.is_file():
            sys.exit(f"budget_commands: {args.tuning} does not exist; give the map_lr report's tuning.csv")
        rates.update(grid_rates(pd.read_csv(args.tuning)))
    rates.update(given_rates(args.rates))
    model0, _, length0 = args.centre.partition(":")
    try:
        centre, lengths = (model0, int(length0)), [int(n) for n in args.lengths.split(",")]
    except ValueError:
        sys.exit(f"budget_commands: --centre {args.centre!r} / --lengths {args.lengths!r}: give MODEL:LEN and LEN,LEN,...")
    seeds = dict(s.split("=", 1) for s in (args.seeds if args.seeds is not None else ["base=0,1"]) if "=" in s)
    corpora = [c for c in args.corpora.split(",") if c]
    print("\n".join(map_commands(rates, centre, lengths, args.tokens, corpora, seeds, extra)))


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit(__doc__.strip())
    if argv[0] == "--map":
        return map_main(argv[1:])
    if argv[0] == "--ties":
        return ties_main(argv[1:])
    if argv[0] == "--edges":
        if len(argv) < 2 or not Path(argv[1]).is_file():
            sys.exit("budget_commands: --edges needs a grid report's tuning.csv that exists")
        lines = edge_commands(pd.read_csv(argv[1]), argv[2:])
        return print("\n".join(lines)) if lines else None
    path = Path(argv[0])
    if not path.is_file():
        sys.exit(f"budget_commands: {path} does not exist; give the learning-rate grid report's tuning.csv")
    print("\n".join(commands(pd.read_csv(path), argv[1:])))


if __name__ == "__main__":
    main(sys.argv[1:])
