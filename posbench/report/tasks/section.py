"""The synthetic tasks' report sections (the section registry finds them here, as this topic's section.py).

``tasks`` (order 60), "Do the models use far context?" (posbench/tasks): accuracy per length, the
effective context length, whether the task runs had finished learning, and per task the length x
condition heatmap (passkey depth, MQAR pairs).

``algorithmic`` (order 65), "Algorithmic length generalisation by level": the Chomsky-hierarchy tasks
and flip-flop (posbench/tasks/algorithmic.py), per level, with the score beyond the training range as
Ruoss et al. 2023 define it (posbench/report/tasks/algorithmic.py).
"""

from __future__ import annotations

import pandas as pd

from posbench.encodings import encoding_class
from posbench.evaluation.variants import RANDPOS_SUFFIX, base_variant
from posbench.report.analysis import task_frames
from posbench.report.tasks import algorithmic, effective_length, flip_flop
from posbench.report.tasks.figure import plot_task_accuracy, plot_task_heatmaps
from posbench.report.analysis import convergence
from posbench.report.drawing.document import Bullets, Heading, Image, Para, Table
from posbench.report.section import SECTIONS, Output, Section
from posbench.tasks import TASKS

HEATMAP = "task_{}.png"  # one per task


@SECTIONS.register("tasks")
class Tasks(Section):
    order = 60
    files = (Output("tasks.csv", "the task table: accuracy per length, chance, effective length"),
             Output("task_records.csv", "every task record (those on another example set too)"),
             Output("task_accuracy.png", "task accuracy against evaluation length"),
             Output("effective_length.csv", "claimed vs effective length per task and variant (RULER, NoLiMa)"),
             Output("task_learned.csv", "per task: the rows that learned it at train_len and whether it counts"),
             Output(HEATMAP.format("<task>"), "one task's accuracy by evaluation length and condition"))

    def applies(self, ctx) -> bool:
        return not ctx.task_records.empty

    def build(self, ctx, out) -> list:
        records, threshold, improving = ctx.task_records, ctx.options.threshold, ctx.options.improving
        table = task_frames.task_table(records, threshold)
        out.csv("tasks.csv", table)
        # the records on another example set too, so that a rebuild from this file leaves the same ones out
        other = ctx.task_left_out
        out.csv("task_records.csv", records if other.empty else pd.concat([records, other], ignore_index=True))
        out.figure("task_accuracy.png", plot_task_accuracy, table)
        effective = effective_length.effective_table(table, records)
        out.csv("effective_length.csv", effective)
        scored = ctx.all_completed[ctx.all_completed["run_id"].isin(set(records["run_id"]))]
        blocks = [Heading("Do the models use far context? Synthetic tasks"),
                  # the legend one item per column (as one paragraph it ran to 1,700 characters)
                  Bullets(["Accuracy "
                       "in %: for passkey exact match, the fraction of examples whose every key digit is the "
                       "model's argmax given the true tokens before it (what greedy decoding would produce); for "
                       "MQAR, copy, the algorithmic tasks and flip_flop the fraction of answer tokens right (queried values, copied "
                       "bytes, target symbols, read bits); variable_tracking and common_words exact match. Mean over the task's grid "
                       "(passkey: needle depths; MQAR: numbers of pairs; flip_flop: ignore probabilities) and over seeds [95% interval over examples and seeds: Student's t on the per-seed "
                       "accuracies with the examples' binomial variance added, conservative for token accuracy].",
                       "`chance`: the baseline, the best score without retrieving (passkey: guessed digits; MQAR: "
                       "the best score without binding keys to values, 1/pairs, since the values are distinct and no "
                       "answer is in the input, checked by simulation in posbench/tasks/mqar.py; copy: a random "
                       "letter; variable_tracking: 1/chains, a value of the window without following its chain; "
                       "common_words: naming random words of the list, 1/C(distinct words, common), lower at longer "
                       "lengths; the algorithmic tasks and flip_flop: a constant symbol): read accuracy against it, per cell.",
                       "`beyond train_len`: mean over every longer length.",
                       f"`effective length`: the longest length up to which accuracy "
                       f"(mean over seeds) stays at or above {threshold:.0%} in every cell of the grid (0: not "
                       "even at train_len); an absolute bar, the headline's too. The claimed vs effective length "
                       "table below applies RULER's and NoLiMa's rule instead (a floor and 85% of the run's own 1x), "
                       "so the two can differ for one row."],
                      lead="Models trained on a synthetic task at `train_len` and scored at multiples of it "
                           "(`task.loss`: `answer` trains the answer positions only, `mixed` adds the language-model "
                           "loss on every token; each run's setting is under \"How these runs were made\")."),
                  Table(task_frames.display_task_table(table)),
                  *[Para(_task_budget(task, ctx.convergence_of(g), improving,
                                      (records.loc[records["task"] == task, "loss"] == "mixed").any()))
                    for task, g in scored.groupby("task")],
                  Image("task_accuracy.png", self.files[2].description),
                  Para(_effective_text()),
                  Table(effective_length.display_effective_table(effective))]
        if not (low := task_frames.not_learned(records)).empty:
            blocks[3:3] = _not_learned_blocks(low)
        if reach := task_frames.window_reach(scored, ctx.configs):
            blocks.insert(3, Para(_reach_text(reach)))
        learned = task_frames.learned_rows(records)  # first after the table: which of its rows to read at all
        out.csv("task_learned.csv", learned.assign(learned=[", ".join(v) for v in learned["learned"]]))
        blocks[3:3] = _learned_blocks(learned)
        if randomized := sorted(set(records.loc[task_frames.scored_as_randomized(records), "encoding"])):
            blocks.insert(3, Para(_randomized_text(randomized)))
        for task, g in task_frames.heatmap_frame(records).groupby("task"):
            condition = _condition_name(task)
            if condition is None:
                continue
            name, caption = HEATMAP.format(task), f"{task}: accuracy (%) by evaluation length and {condition}, mean over seeds"
            out.figure(name, plot_task_heatmaps, g, task, condition, description=caption)
            blocks.append(Image(name, caption))
        if not ctx.task_left_out.empty:
            blocks.append(Para(f"{len(ctx.task_left_out)} task records were scored on another example set (other task "
                               "settings or corpus) or by a smaller budget of a row trained for several (the tables read "
                               "each row's largest) and are in no table or figure."))
        return blocks


def _task_budget(task: str, conv, improving: float, mixed: bool) -> str:
    """Whether a task's runs had finished learning: their training objective on validation examples
    (``mixed``: some of them trained with ``loss: mixed``)."""
    loss = "the validation loss (the training objective on validation examples)"
    note = ""
    if mixed:
        note = (" With `loss: mixed` that objective includes the language-model loss on the text, which keeps "
                "falling after the answers are learned: read the accuracy at train_len beside it.")
    return convergence.budget_paragraph(conv, improving, f"Training budget ({task})",
                                   loss, convergence.TASK_CONSEQUENCE) + note


def _effective_text() -> str:
    """What the claimed vs effective length table shows (posbench/report/tasks/effective_length.py)."""
    return ("**Claimed vs effective length** (RULER, arXiv 2404.06654; NoLiMa, arXiv 2502.05167): `claimed` is the "
            "training length; `effective` the longest evaluated length up to which the accuracy (mean over the grid and "
            "seeds) stays at or above both an absolute floor and "
            f"{effective_length.RELATIVE:.0%} of the run's own 1x accuracy (NoLiMa's rule), in tokens (multiple) "
            "[the same rule on the lower and upper ends of each length's 95% interval]; 0 where 1x is below the floor. "
            "The floor is halfway from the task's chance level to 100% (`floor at 1x`; for common_words it moves with "
            "the length, whose chance falls as the list grows), the level below which the report calls a run not "
            "learned: RULER's bar, Llama-2-7B's 85.6% at 4K, is a large model's score and no fixed number fits tasks "
            "whose chance runs from 10^-5 (passkey) to 1/2 (two-chain variable tracking).")


def _randomized_text(encodings: list[str]) -> str:
    """What the plain row of a run trained on random positions is (task_frames.own_rows judges the other)."""
    rows = ", ".join(f"`{e}`" for e in encodings)
    return (f"**Runs trained on random positions** (Ruoss et al. 2023): each is scored as it was trained, on positions "
            f"sampled from its range ({', '.join(f'`{e}{RANDPOS_SUFFIX}`' for e in encodings)}), and at positions "
            f"0..L-1, which it never saw as one block, in the row with the plain name ({rows}). That row is an "
            "evaluation-time row of the same weights, not a plainly trained model; which runs learned their task is "
            "judged on the row scored as trained.")


def _learned_blocks(learned: pd.DataFrame) -> list:
    """Which rows learned each task at train_len (task_frames.learned_rows), and the tasks that do not count."""
    if learned.empty:
        return []
    bar = f"{task_frames.LEARNED_SHARE:.0%}"
    shown = pd.DataFrame({
        "task": learned["task"], "train_len": learned["train_len"], "models": learned["models"],
        f"rows at or above {bar} at train_len": [", ".join(f"`{v}`" for v in rows) or "none" for rows in learned["learned"]],
        # one decimal: 89.6% is not printed as the 90% it falls short of
        "best row (accuracy at train_len, seeds)": [f"`{b}` ({100 * a:.1f}%, {n})" for b, a, n in
                                                    zip(learned["best"], learned["best_accuracy"], learned["seeds"])],
        "counts": ["yes" if c else "no" for c in learned["counts"]]})
    blocks = [Para(f"**Which rows learned each task.** A row learned a task where its accuracy at train_len (mean over "
                   f"the grid, then over seeds; the model's own row, scored as trained: `+randpos` for a run trained on random "
                   f"positions) reaches {bar} of the ceiling (100%); a task counts "
                   "where some row learned it."),
              Table(shown)]
    if not (missed := learned[~learned["counts"]]).empty:
        names = ", ".join(f"{t} (train_len {L})" for t, L in zip(missed["task"], missed["train_len"]))
        blocks.append(Para(f"**Not counted**: {names}: no row learned it where it was trained, so its accuracy beyond "
                           "train_len says nothing about which encoding extrapolates; its rows stay in the tables as "
                           "measured."))
    return blocks


def _not_learned_blocks(low) -> list:
    """The runs that had not learned their task at train_len (task_frames.not_learned), one item per row,
    what that means, and, one item per encoding, why where its initialisation explains it (as one paragraph
    it ran to 3,500 characters)."""
    parts = []
    for (task, variant, model, train_len), g in low.groupby(["task", "variant", "model", "train_len"]):
        seeds = ", ".join(f"{int(s)} ({100 * a:.0f}%)" for s, a in zip(g["seed"], g["accuracy"]))
        parts.append(f"`{variant}` on {task} ({model}, {train_len}): seed{'s' if len(g) > 1 else ''} {seeds}")
    notes = [f"`{e}`: {note}" for e in sorted(set(low["variant"])) if (note := _init_note(base_variant(e)))]
    return [Bullets(parts, lead="**Not learned at train_len** (accuracy at train_len, mean over the grid, below halfway "
                                "from chance to 100%):"),
            Para("These runs had not learned the task where they were trained, so their accuracy beyond train_len says "
                 "nothing about extrapolation; the rows' means and intervals include them, and every evaluation-time "
                 "row of the same weights inherits it."),
            *([Bullets(notes, lead="Why, where the initialisation explains it:")] if notes else [])]


def _init_note(encoding: str) -> str:
    try:
        return getattr(encoding_class(encoding), "init_note", "")
    except Exception:  # noqa: BLE001 - an encoding not installed where the report is built says nothing
        return ""


def _reach_text(reach: list[dict]) -> str:
    """One sentence per windowed model: which of the task's conditions put the answer beyond one window
    at train_len (task_frames.window_reach)."""
    parts = []
    for r in reach:
        cond = _condition_name(r["task"]) or "condition"
        beyond = ", ".join(f"{c:g} ({d} back)" for c, d in r["beyond"]) or "none"
        within = ", ".join(f"{c:g} ({d} back)" for c, d in r["within"]) or "none"
        parts.append(f"`{r['encoding']}` on {r['task']} ({r['model']}, {r['train_len']}: every layer a window of "
                     f"{r['window']} keys, one layer reaches {r['window'] - 1} back, {r['layers']} layers relaying at most "
                     f"{r['layers'] * (r['window'] - 1)}): {cond}s beyond one window at train_len {beyond}; within it "
                     f"{within}")
    return ("**What a windowed model can reach at train_len**: " + "; ".join(parts) + ". An answer beyond one window "
            "is retrievable only by relaying it through the layers, which these models must learn; a 0% there is "
            "about that, not about the length.")


def _condition_name(task: str) -> str | None:
    cls = TASKS.find(task)
    return cls.condition if cls is not None else None


@SECTIONS.register("algorithmic")
class Algorithmic(Section):
    order = 65
    files = (Output("algorithmic.csv", "the algorithmic tasks by level: 1x and beyond-training accuracy"),
             Output("algorithmic_levels.csv", "per level and variant: the mean beyond-training accuracy over the level's tasks"),
             Output("flip_flop_errors.csv", "flip-flop's read error per ignore probability (in-distribution, sparse, dense) and length"),
             Output("flip_flop_errors.png", "flip-flop's read error against evaluation length, log axes"))

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
                     "lengths 1..N (N: the longest that fits `train_len`) and scored on longer ones."),
                # the columns apart: as one paragraph with the above it ran past 1,000 characters
                Para("Per-token accuracy in %: "
                     "`1x` on inputs of N/2 + 1..N; `beyond train_len` Ruoss et al.'s score (arXiv 2305.16843), the "
                     "accuracy averaged uniformly over the input lengths N + 1 .. the longest evaluated (each evaluation "
                     "window weighted by the input lengths it scores) [95% interval over examples and seeds, as the task "
                     "table's]; `exact beyond` the same average of exact match (every target token right); `chance` a "
                     "constant model's per-token accuracy. Flip-flop is the mean over its ignore probabilities (0.8 as "
                     "trained, 0.98 sparse, 0.1 dense; the task heatmap shows each)."),
                Table(algorithmic.display_algorithmic_table(table)),
                Para("Per level, the mean of the beyond-training score over the level's tasks (as Ruoss et al. summarise "
                     "a level); descriptive, no test: read the intervals above for any comparison."),
                Table(shown),
                *_flip_flop_blocks(ctx, out)]


def _flip_flop_blocks(ctx, out) -> list:
    """Flip-flop's error rates per regime, table and log-scale figure (posbench/report/tasks/flip_flop.py);
    nothing when no flip-flop run was scored."""
    records = ctx.task_records
    runs = ctx.all_completed[ctx.all_completed["run_id"].isin(set(records.loc[records["task"] == flip_flop.TASK, "run_id"]))]
    if runs.empty:
        return []
    train_ignore = {}
    for r in runs.itertuples():
        task = task_frames._task_of_run(ctx.configs[r.run_dir]) if r.run_dir in ctx.configs else None
        if task is not None:
            train_ignore[r.run_id] = task.params.train_ignore
    table = flip_flop.error_table(records, train_ignore)
    if table.empty:
        return []
    out.csv("flip_flop_errors.csv", table)
    out.figure("flip_flop_errors.png", flip_flop.plot_errors, table)
    return [Para("**Flip-flop errors** as Liu et al. 2023 (arXiv 2306.00946) report them: the read error (1 - per-bit "
                 "accuracy, in %, mean over seeds) per ignore probability, named against the run's training one "
                 "(`in-distribution`; `sparse`: more ignores, longer stretches between a write and its read; `dense`: "
                 "fewer), at each evaluation multiple; the figure draws it on log axes, where the rare glitches the "
                 "paper is about show (an error of 0 is drawn at the floor)."),
            Table(flip_flop.display_error_table(table)),
            Image("flip_flop_errors.png", "flip-flop read error against evaluation length (log axes), per regime")]
