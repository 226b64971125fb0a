"""LongRoPE's per-dimension rescale factors: the committed table the ``longrope`` RoPE scaling reads,
and the evolutionary search that fills it, scaled to toy size.

LongRoPE (Ding et al. 2024, "LongRoPE: Extending LLM Context Window Beyond 2 Million Tokens";
microsoft/LongRoPE ``evolution/algorithms/dim_mono.py``, ``genetic_base.py``, ``evolution/search.py``)
divides each rotary pair's frequency by its own factor lambda_i (theta_i / lambda_i), searched for one
model and one target length by an evolutionary search that minimises the perplexity of long text:

* the factors are monotone non-decreasing in the pair index, in [1, s], on a grid of ``step`` (0.01);
* the first individual is YaRN's mix in factor space, lambda_i = s ramp_i + (1 - ramp_i) (ramp: YaRN's,
  beta_fast 32, beta_slow 1); here a second one joins it, YaRN's own frequencies as factors,
  lambda_i = 1 / ((1 - ramp_i) + ramp_i / s) (the reference's search takes such starts with
  ``--init-factors``); the initial population is both and mutations of the better one;
* each iteration keeps the ``parents`` best, adds ``mutations`` mutants (each pair re-drawn with
  probability 0.3 between its neighbours' values) and ``crossovers`` children (each pair taken from the
  other parent with probability 0.3 x 0.5), never an individual seen before.

Budget here: population 16, 10 iterations of 4 mutations + 4 crossovers, parents 8: 96 evaluations, each
the mean loss of 16 windows of s x L_train tokens (the reference: population 64, 40 iterations of 16 + 16,
parents 32: 1,344 evaluations on 5 PG19 documents of the target length). The entry also records the loss
of each start and of the best factors on 16 held-out windows the search never saw (``heldout_*``): a
search that only fits its own windows shows there. Deviations, for toy size:

* the search text is the **train** split (windows drawn with a fixed seed), never the validation split the
  report scores, so that the factors are not fitted to the evaluation text (the reference searches on PG19
  validation documents and reports on PG19 test and Proof-pile);
* the factors are searched on one model (seed 0) and used for every seed of that size: the table is keyed
  by (head dimension, base, L_train, s), not by weights (the reference searches each model);
* only the long factors are searched; the short factors (used up to L_train) are all 1, the model's own
  frequencies (Phi-3 searched short factors too, to recover short-context quality after fine-tuning);
* LongRoPE's n-hat (the first positions left unscaled) is not searched: HF's ``longrope`` type has none.

    python -m posbench.variants.longrope runs/rope_extension/<run_id> --factor 4 --factor 16 --write

writes the best factors of each search into ``longrope_factors.json`` beside this file (what the
``longrope`` scaling reads; an entry, once committed, is never changed: a new search of the same size
replaces it only with ``--replace``).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from posbench.errors import PosbenchError

TABLE = Path(__file__).with_name("longrope_factors.json")

# the toy budget (the reference's evolution/default_hyper_params/dim_mono.json: 64, 40, 16, 16, 32, 0.01)
BUDGET = {"population": 16, "iterations": 10, "mutations": 4, "crossovers": 4, "parents": 8, "step": 0.01,
          "windows": 16, "heldout_windows": 16, "max_crossover_try": 20}


def table_key(head_dim: int, base: float, train_len: int, factor: float) -> str:
    return f"d{head_dim}_base{base:g}_L{train_len}_x{factor:g}"


def read_table(path: Path | None = None) -> dict:
    path = path or TABLE  # read at call time (tests point TABLE elsewhere)
    if not path.exists():
        return {}
    return json.loads(path.read_text())


def missing_reason(head_dim: int, base: float, train_len: int, factor: float) -> str | None:
    if factor <= 1 or table_key(head_dim, base, train_len, factor) in read_table():
        return None
    return (f"no searched LongRoPE factors for head dimension {head_dim}, base {base:g}, train_len {train_len}, "
            f"factor {factor:g} (make them: python -m posbench.variants.longrope <run_dir> --factor {factor:g} --write)")


def searched_factors(head_dim: int, base: float, train_len: int, factor: float) -> tuple[list[float], list[float]]:
    """(long factors, short factors) of the table; factor 1 needs none (all 1)."""
    if factor <= 1:
        return [1.0] * (head_dim // 2), [1.0] * (head_dim // 2)
    entry = read_table().get(table_key(head_dim, base, train_len, factor))
    if entry is None:
        raise PosbenchError(missing_reason(head_dim, base, train_len, factor))
    return entry["long_factor"], entry["short_factor"]


# -- the search ---------------------------------------------------------------------------------------

def yarn_init(head_dim: int, base: float, train_len: int, factor: float) -> np.ndarray:
    """LongRoPE's first individual: YaRN's ramp as a mix of factors, s ramp + (1 - ramp) (evolution/search.py)."""
    def dim_of(rotations: float) -> float:
        return head_dim * math.log(train_len / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(dim_of(32.0)), 0)
    high = min(math.ceil(dim_of(1.0)), head_dim - 1)
    ramp = np.clip((np.arange(head_dim // 2) - low) / max(high - low, 1e-3), 0, 1)
    return np.round(factor * ramp + (1 - ramp), 2)


class _Search:
    """dim_mono: monotone factors in [1, s] on a grid (microsoft/LongRoPE DimMonoGeneticAlgorithm)."""

    def __init__(self, loss_of, factor: float, budget: dict, seed: int):
        self.loss_of, self.factor, self.b = loss_of, factor, budget
        self.rng = np.random.default_rng(seed)
        self.seen: dict[tuple, float] = {}

    def evaluate(self, f: np.ndarray) -> float:
        key = tuple(np.round(f, 4))
        if key not in self.seen:
            self.seen[key] = self.loss_of(f)
        return self.seen[key]

    def is_new(self, f: np.ndarray) -> bool:
        return tuple(np.round(f, 4)) not in self.seen and bool(np.all(np.diff(f) >= 0))

    def mutate(self, f: np.ndarray) -> np.ndarray:
        step, top = self.b["step"], self.factor
        for _ in range(1000):
            new = f.copy()
            for d in range(len(new)):
                if self.rng.random() < 0.3:
                    lo = 1.0 if d == 0 else new[d - 1]
                    hi = top if d == len(new) - 1 else new[d + 1]
                    grid = np.arange(lo, hi + step / 2, step)
                    if len(grid):
                        new[d] = round(float(grid[self.rng.integers(len(grid))]), 4)
            if self.is_new(new):
                return new
        return new

    def crossover(self, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
        if np.allclose(a, b):
            return None
        for _ in range(self.b["max_crossover_try"]):
            new = a.copy()
            for d in range(len(new)):
                if self.rng.random() < 0.3 and self.rng.random() < 0.5:
                    new[d] = b[d]
            if self.is_new(new):
                return new
        return None

    def run(self, inits: list[np.ndarray]) -> tuple[np.ndarray, float, list[float]]:
        population = list(inits)
        init = min(inits, key=self.evaluate)  # the population grows from the best start
        while len(population) < self.b["population"]:
            child = self.mutate(init)
            self.evaluate(child)
            population.append(child)
        curve = []
        for _ in range(self.b["iterations"]):
            parents = sorted(population, key=self.evaluate)[: self.b["parents"]]
            curve.append(self.evaluate(parents[0]))
            population = list(parents)
            for _ in range(self.b["mutations"]):
                child = self.mutate(parents[self.rng.integers(len(parents))])
                self.evaluate(child)
                population.append(child)
            for _ in range(self.b["crossovers"]):
                i, j = sorted(self.rng.choice(len(parents), 2, replace=False))
                child = self.crossover(parents[i], parents[j])
                child = self.mutate(parents[i]) if child is None else child
                self.evaluate(child)
                population.append(child)
        best = min(population, key=self.evaluate)
        curve.append(self.evaluate(best))
        return best, self.evaluate(best), curve


@torch.no_grad()
def search_factors(model, tokens: np.ndarray, train_len: int, factor: float, budget: dict | None = None,
                   seed: int = 0, device: torch.device | str = "cpu") -> dict:
    """Search LongRoPE's long factors for ``model`` (a trained RoPE LanguageModel) at ``factor`` on
    windows of ``factor x train_len`` tokens of ``tokens`` (the train split). Returns the table entry:
    long_factor, short_factor and what the search was (budget, losses of each start and of the best)."""
    from posbench.variants.base import AttentionOptions
    from posbench.variants.rope_scalings import ROPE_SCALINGS, longrope_attention_factor, plain_frequencies

    b = {**BUDGET, **(budget or {})}
    enc = model.encoding
    if not getattr(enc, "rope_scalable", False):
        raise PosbenchError(f"the LongRoPE search needs a RoPE model, got encoding {enc.name}")
    head_dim, base = enc.shape.head_dim, enc.params.base
    target = int(round(factor * train_len))
    if len(tokens) < target + 2:
        raise PosbenchError(f"the LongRoPE search needs more than {target + 1} tokens of text, got {len(tokens)}")
    rng = np.random.default_rng([seed, target, 7])
    starts = rng.integers(0, len(tokens) - target - 1, size=b["windows"] + b["heldout_windows"])
    batch = torch.from_numpy(np.stack([tokens[s: s + target + 1] for s in starts]).astype(np.int64)).to(device)
    searched, heldout = batch[: b["windows"]], batch[b["windows"]:]
    plain = plain_frequencies(head_dim, base)
    attention = longrope_attention_factor(factor, train_len) ** 2
    model.eval()

    def loss_on(windows: torch.Tensor, f: np.ndarray) -> float:
        inv_freq = plain / torch.tensor(f, dtype=torch.float64)
        enc.frequencies = lambda options, length: (inv_freq, attention)  # this candidate, for this forward
        try:
            logits = model(windows[:, :-1], None, AttentionOptions())
        finally:
            del enc.frequencies
        return float(F.cross_entropy(logits.float().flatten(0, 1), windows[:, 1:].flatten()))

    yarn_inv, _ = ROPE_SCALINGS.get("yarn").compute(head_dim, base, factor, train_len, target)
    inits = {"YaRN's ramp mixed in factor space (microsoft/LongRoPE evolution/search.py)":
             yarn_init(head_dim, base, train_len, factor),
             "YaRN's own frequencies (HF _compute_yarn_parameters) as factors":
             np.clip(np.round((plain / yarn_inv).numpy(), 2), 1.0, factor)}
    search = _Search(lambda f: loss_on(searched, f), factor, b, seed)
    best, best_loss, curve = search.run(list(inits.values()))
    return {"long_factor": [float(v) for v in best], "short_factor": [1.0] * (head_dim // 2),
            "search": {"algorithm": "dim_mono (microsoft/LongRoPE), toy budget", **b, "evaluations": len(search.seen),
                       "text": "train split", "window_tokens": target, "seed": seed,
                       "init_loss": {name: round(search.evaluate(f), 5) for name, f in inits.items()},
                       "best_loss": round(best_loss, 5), "best_loss_by_iteration": [round(v, 5) for v in curve],
                       "heldout_init_loss": {name: round(loss_on(heldout, f), 5) for name, f in inits.items()},
                       "heldout_best_loss": round(loss_on(heldout, best), 5)}}


def write_entry(key: str, entry: dict, path: Path | None = None, replace: bool = False) -> None:
    path = path or TABLE
    table = read_table(path)
    if key in table and not replace:
        raise PosbenchError(f"{path.name} already holds {key}; committed factors are not changed (--replace to do so)")
    table[key] = entry
    path.write_text(json.dumps(dict(sorted(table.items())), indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    from posbench.data import load_corpus
    from posbench.evaluate import model_from_checkpoint
    from posbench.results import load_checkpoint

    p = argparse.ArgumentParser(prog="python -m posbench.variants.longrope",
                                description="Search LongRoPE's per-dimension factors for a trained RoPE run.")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--factor", type=float, action="append", required=True, help="s = target / train_len (repeatable)")
    p.add_argument("--write", action="store_true", help=f"add the factors to {TABLE.name}")
    p.add_argument("--replace", action="store_true", help="replace an entry of the same size")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    try:
        model, spec = model_from_checkpoint(load_checkpoint(args.run_dir), torch.device("cpu"))
        if spec.is_extension:
            raise PosbenchError("search LongRoPE factors on a run trained from scratch, not an extension run")
        corpus = load_corpus(spec.data)
        for s in args.factor:
            entry = search_factors(model, corpus.train, spec.train_len, s, seed=args.seed)
            entry["search"]["run"] = spec.run_id
            key = table_key(spec.shape.head_dim, spec.encoding.params.base, spec.train_len, s)
            print(key, json.dumps(entry))
            if args.write:
                write_entry(key, entry, replace=args.replace)
    except PosbenchError as e:
        raise SystemExit(f"error: {e}") from None


if __name__ == "__main__":
    main()
