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

    python -m posbench.jobs.longrope_search runs/rope_extension/<run_id> --factor 4 --factor 16 --write

writes the best factors of each search into ``longrope_factors.json`` beside this file (what the
``longrope`` scaling reads; an entry, once committed, is never changed: a new search of the same size
replaces it only with ``--replace``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from posbench.core.errors import PosbenchError

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
            f"factor {factor:g} (make them: python -m posbench.jobs.longrope_search <run_dir> --factor {factor:g} --write)")


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


class DimMonoSearch:
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

    def run_exactly(self, inits: list[np.ndarray], evaluations: int) -> list[tuple[np.ndarray, float]]:
        """The same search cut to exactly ``evaluations`` evaluations (fewer only where no new monotone
        individual can be drawn): the starts first (the first of them always), a population of half the
        budget grown from the best start by mutation, then generations whose parents are the better half
        (at least 2), each child alternately a mutant and a crossover (a mutant where the crossover finds
        nothing new), until the budget is spent. Returns every evaluated individual with its loss, in
        the order evaluated (the tuned rows' record of the search: posbench/evaluation/variants/tuned.py)."""
        order: list[np.ndarray] = []

        def spend(f: np.ndarray) -> None:
            key = tuple(np.round(f, 4))
            if len(self.seen) < evaluations and key not in self.seen:
                self.evaluate(f)
                order.append(f)

        for f in inits:
            spend(f)
        population = list(order)
        size = min(evaluations, max(len(population), -(-evaluations // 2)))
        stuck = 0
        while len(self.seen) < size and stuck < 10:
            before = len(self.seen)
            child = self.mutate(min(population, key=self.evaluate))
            spend(child)
            population += [child] if len(self.seen) > before else []
            stuck = stuck + 1 if len(self.seen) == before else 0
        parity = 0
        while len(self.seen) < evaluations and stuck < 10:
            parents = sorted(population, key=self.evaluate)[: max(2, len(population) // 2)]
            before = len(self.seen)
            child = None
            if parity % 2 and len(parents) > 1:
                i, j = sorted(self.rng.choice(len(parents), 2, replace=False))
                child = self.crossover(parents[i], parents[j])
            child = self.mutate(parents[self.rng.integers(len(parents))]) if child is None else child
            parity += 1
            spend(child)
            population += [child] if len(self.seen) > before else []
            stuck = stuck + 1 if len(self.seen) == before else 0
        return [(f, self.seen[tuple(np.round(f, 4))]) for f in order]
