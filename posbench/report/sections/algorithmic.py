"""The algorithmic suite's section, "Algorithmic length generalisation by level": the Chomsky-hierarchy tasks
and flip-flop (posbench/tasks/algorithmic.py), per level, with the score beyond the training range as Ruoss
et al. 2023 define it (posbench/report/tasks/algorithmic.py)."""

from __future__ import annotations

from posbench.report.tasks import algorithmic
from posbench.report.drawing.document import Heading, Para, Table
from posbench.report.section import SECTIONS, Output, Section


@SECTIONS.register("algorithmic")
class Algorithmic(Section):
    order = 65
    files = (Output("algorithmic.csv", "the algorithmic tasks by level: 1x and beyond-training accuracy"),
             Output("algorithmic_levels.csv", "per level and variant: the mean beyond-training accuracy over the level's tasks"))

    def applies(self, ctx) -> bool:
        return not ctx.task_records.empty and ctx.task_records["task"].map(algorithmic.level_of).notna().any()

    def build(self, ctx, out) -> list:
        table = algorithmic.algorithmic_table(algorithmic.algorithmic_frame(ctx.task_records))
        levels = algorithmic.level_means(table)
        out.csv("algorithmic.csv", table)
        out.csv("algorithmic_levels.csv", levels)
        shown = levels.copy()
        shown["beyond"] = [f"{100 * v:.0f}" for v in shown["beyond"]]
        return [Heading("Algorithmic length generalisation by level"),
                Para("The tasks of Deletang et al. 2023 (arXiv 2207.02098) at the levels of their Table 1 (parity check: "
                     "regular; reverse string: context-free; duplicate string, binary addition, bucket sort: "
                     "context-sensitive) and flip-flop language modelling (Liu et al. 2023, arXiv 2306.00946; a regular "
                     "language), in decoder layout (input, `|`, target; posbench/tasks/algorithmic.py), trained on input "
                     "lengths 1..N (N: the longest that fits `train_len`) and scored on longer ones. Per-token accuracy in %: "
                     "`1x` on inputs of N/2 + 1..N; `beyond train_len` Ruoss et al.'s score (arXiv 2305.16843), the "
                     "accuracy averaged uniformly over the input lengths N + 1 .. the longest evaluated (each evaluation "
                     "window weighted by the input lengths it scores) [95% interval over examples and seeds, as the task "
                     "table's]; `exact beyond` the same average of exact match (every target token right); `chance` a "
                     "constant model's per-token accuracy. Flip-flop is the mean over its ignore probabilities (0.8 as "
                     "trained, 0.98 sparse, 0.1 dense; the task heatmap shows each)."),
                Table(algorithmic.display_algorithmic_table(table)),
                Para("Per level, the mean of the beyond-training score over the level's tasks (as Ruoss et al. summarise "
                     "a level); descriptive, no test: read the intervals above for any comparison."),
                Table(shown)]
