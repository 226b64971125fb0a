"""The report pipeline: run directories in, tables, figures and report.md / report.html out.

Reads every ``metrics.json`` below a runs folder (the report never trains or evaluates); runs that
cannot be read are skipped with a warning and listed in the report.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from posbench.errors import PosbenchError
from posbench.report import budget, extension, figures, tasks
from posbench.report.context import (
    commands,
    config_split,
    environment,
    nested_yaml,
    run_config_yaml,
)
from posbench.report.document import Code, Heading, Image, Para, Table, render
from posbench.report.prose import protocol_note, summary_paragraphs
from posbench.report.stats import ALPHA
from posbench.report.tuning import DEFAULT, choose_settings, grid_edge_warning, split_runs
from posbench.report.tables import (
    NOT_DEFINED,
    NOT_EVALUATED,
    comparable_records,
    display_table,
    latex_table,
    main_table,
    pairwise_tests,
    run_summary,
)
from posbench.results import atomic_write_text, find_incomplete, load_runs, read_config
from posbench.tasks import LM, TASKS

DEFAULT_TOLERANCE = 0.05
FIGURES = {
    "ppl_vs_length.png": "perplexity against evaluation length",
    "ratio_heatmap.png": "perplexity at the longest multiple over 1x",
    "per_position.png": "loss by position at the longest length",
    "training_curves.png": "training curves",
}
OPTIONAL_FIGURES = {"during_training.png": "1x perplexity and extrapolation ratio against training tokens",
                    "extension.png": "perplexity at the target length against fine-tuning steps",
                    "task_accuracy.png": "task accuracy against evaluation length",
                    "attention.png": "mean attention distance and entropy against evaluation length"}
TASK_HEATMAP = "task_{}.png"  # one per task: the length x condition grid


def _incomplete_row(run_dir: Path) -> dict:
    """What an unfinished run is, from the resolved config it wrote when it started."""
    try:
        cfg = read_config(run_dir)
        known = {"encoding": cfg.encoding.name, "train_len": cfg.train_len, "seed": cfg.seed}
    except Exception:  # noqa: BLE001 - a config torn or edited by hand: still list the folder
        known = {}
    return {"run_id": run_dir.name, "status": "incomplete", **known}


def build_report(runs_dir: Path, out_dir: Path, tolerance: float = DEFAULT_TOLERANCE, protocols: list[str] | None = None,
                 improving: float = budget.DEFAULT_IMPROVING, spread: float = budget.DEFAULT_SPREAD,
                 threshold: float = tasks.DEFAULT_THRESHOLD) -> Path:
    runs_dir, out_dir = Path(runs_dir), Path(out_dir)
    if not runs_dir.is_dir():
        raise PosbenchError(f"runs directory {str(runs_dir)!r} does not exist")
    if not 0 <= tolerance < 10:
        raise PosbenchError(f"--tolerance must be a fraction such as 0.05, got {tolerance}")
    for name, value in (("--improving", improving), ("--spread", spread), ("--threshold", threshold)):
        if not 0 <= value < 10:
            raise PosbenchError(f"{name} must be a fraction such as 0.02, got {value}")
    runs, evals, skipped = load_runs(runs_dir)
    if runs.empty:
        raise PosbenchError(f"no runs (metrics.json) found below {str(runs_dir)!r}")
    if protocols and not evals.empty:
        if unknown := sorted(set(protocols) - set(evals["protocol"])):
            raise PosbenchError(f"no evaluations with protocol {unknown[0]!r} below {str(runs_dir)!r}; "
                                f"found: {', '.join(sorted(evals['protocol'].unique()))}")
        evals = evals[evals["protocol"].isin(protocols)]
    completed = runs[runs["status"] == "completed"]
    task_records, task_left_out = tasks.task_frame(completed)
    if completed.empty or (evals.empty and task_records.empty):
        raise PosbenchError(f"no completed, evaluated runs below {str(runs_dir)!r} ({len(runs)} runs, none usable)")
    out_dir.mkdir(parents=True, exist_ok=True)
    task_blocks = _task_sections(task_records, task_left_out, tasks.attention_frame(completed), out_dir, threshold,
                                 completed, improving)
    if evals.empty:  # task runs only: no perplexity sections
        return _write(_tasks_only_blocks(runs_dir, runs, completed, skipped, task_blocks), out_dir)
    is_lm = completed["task"].fillna(LM) == LM
    task_runs, completed = completed[~is_lm], completed[is_lm]  # the perplexity sections read language models only
    evals, left_out = comparable_records(evals)
    choices = choose_settings(completed)
    tuned = None
    if choices is not None:  # a learning-rate grid: the main table keeps the default setting
        default_ids, chosen_ids = split_runs(completed, choices)
        tuned = main_table(evals[evals["run_id"].isin(chosen_ids)], tolerance)
        if default_ids:
            evals = evals[evals["run_id"].isin(default_ids)]
            runs, completed = runs[runs["run_id"].isin(default_ids) | (runs["status"] != "completed")], completed[completed["run_id"].isin(default_ids)]
        else:
            evals, completed = evals[evals["run_id"].isin(chosen_ids)], completed[completed["run_id"].isin(chosen_ids)]

    table = main_table(evals, tolerance)
    atomic_write_text(out_dir / "evaluations.csv", evals.to_csv(index=False))
    atomic_write_text(out_dir / "runs.csv", run_summary(evals, tolerance).to_csv(index=False))
    atomic_write_text(out_dir / "pairs.csv", pairwise_tests(evals).to_csv(index=False))
    atomic_write_text(out_dir / "table.csv", table.to_csv(index=False))
    shown = display_table(table)
    atomic_write_text(out_dir / "table.md", shown.to_markdown(index=False, disable_numparse=True) + "\n")
    atomic_write_text(out_dir / "table.tex", latex_table(table))
    figures.plot_ppl_vs_length(table, out_dir / "ppl_vs_length.png")
    ratio = figures.plot_ratio_heatmap(table, out_dir / "ratio_heatmap.png")
    figures.plot_per_position(runs, evals, out_dir / "per_position.png")
    figures.plot_training_curves(completed, out_dir / "training_curves.png")
    conv = budget.convergence(completed, improving)
    atomic_write_text(out_dir / "convergence.csv", conv.to_csv(index=False))
    curves = budget.probe_curves(probe) if not (probe := budget.probe_frame(completed)).empty else pd.DataFrame()
    (out_dir / "during_training.png").unlink(missing_ok=True)  # a figure of an earlier report must not outlive its data
    if not curves.empty:
        atomic_write_text(out_dir / "during_training.csv", curves.to_csv(index=False))
        figures.plot_during_training(curves, out_dir / "during_training.png")

    ext_blocks = _extension_section(evals, out_dir, tolerance)

    seeds = int(table["seeds"].max())
    blocks = [
        Heading("posbench report", 1),
        Para(f"{len(completed)} completed runs from `{runs_dir}`: byte-level language models trained on windows of "
             "`train_len` tokens and evaluated at multiples of it. Lower perplexity is better; an encoding that "
             "extrapolates keeps its 1x perplexity (ratio near 1) at lengths it never saw in training. "
             + protocol_note(evals)),
        Heading("Summary"),
        Para(budget.budget_paragraph(conv, improving)),
        *[Para(p) for p in summary_paragraphs(table, tolerance)],
        Heading("Perplexity by evaluation length"),
        Para("Mean perplexity over seeds"
             + (" ± half-width of the 95% t-interval" if seeds > 1 else "")
             + ". **Bold**: lowest mean in its column within the same protocol, model and train_len"
             + (f"; ≈: not significantly different from it (paired t-test over shared seeds on log perplexity, p ≥ {ALPHA})" if seeds > 1 else "")
             + f". `{NOT_DEFINED}`: the encoding is not defined at that length (a learned table past its size); "
             + f"`{NOT_EVALUATED}`: not evaluated at that length (for at least one seed) on the compared tokens. "
             + (f"`{ratio}`: mean over seeds of the longest multiple's perplexity over 1x. " if ratio else "")
             + f"`extrap. len`: the longest length up to which every evaluated length stays within {tolerance:.0%} of 1x."),
        Table(shown),
        Image("ppl_vs_length.png", FIGURES["ppl_vs_length.png"] + (" (bands: 95% interval over seeds)" if seeds > 1 else "")),
    ]
    if ratio:
        blocks += [Heading("Extrapolation at a glance"),
                   Para(f"Each cell is `{ratio}`, the perplexity at the longest multiple over 1x (mean over seeds): "
                        "green stays flat, red breaks."),
                   Image("ratio_heatmap.png", FIGURES["ratio_heatmap.png"])]
    blocks += _budget_section(conv, curves, table, set(completed["encoding"]), tolerance, improving, spread)
    blocks += ext_blocks
    blocks += task_blocks
    blocks += [
        Heading("Loss by position at the longest length"),
        Para("Mean loss at each position of the window (mean over seeds, moving average). The dotted line marks the "
             "training length: positions right of it were never seen in training. Protocols that score only the last "
             "tokens of a window show only those positions."),
        Image("per_position.png", FIGURES["per_position.png"]),
        Heading("Training curves"),
        Para("Training loss (line, mean over seeds, smoothed) and validation loss (dots) against the optimiser step."),
        Image("training_curves.png", FIGURES["training_curves.png"]),
    ]
    blocks += _not_in_tables(runs_dir, runs, completed[~completed["run_id"].isin(evals["run_id"])], skipped)
    if tuned is not None:
        atomic_write_text(out_dir / "table_tuned.csv", tuned.to_csv(index=False))
        atomic_write_text(out_dir / "tuning.csv", choices.to_csv(index=False))
        picked = choices[choices["chosen"]][["encoding", "model", "train_len", "lr", "lr_mult", "val_loss", "seeds"]]
        blocks += [Heading("Tuned learning rates"),
                   Para("These runs were trained at several learning rates (`train.lr`) and learning-rate multipliers of "
                        "the encoding's own parameters (`encoding.lr_mult`). The table above shows every encoding at the "
                        f"default setting (lr {DEFAULT[0]:g}, lr_mult {DEFAULT[1]:g}, one learning rate for every "
                        "encoding). Below, each encoding at the setting chosen for it on 1x validation loss alone (mean "
                        "final validation loss over seeds; extrapolation played no part in the choice), and the table "
                        "at those settings (`table_tuned.csv`; every setting's loss in `tuning.csv`)."),
                   Table(picked.round({"val_loss": 4}))]
        if (edge := grid_edge_warning(choices)) is not None:
            blocks.append(Para(edge))
        blocks.append(Table(display_table(tuned)))
    if not left_out.empty:
        blocks += [Heading("Records not compared"),
                   Para("Within a protocol, model and train_len the report compares only numbers scored on the same "
                        "tokens: the token set with the most records. These records were scored on another set (other "
                        "`eval.scored_tokens`, `eval.first_scored` or fixed-target settings, or made before token sets "
                        "were recorded), so they are in no table or figure. Re-evaluate the runs with the settings of "
                        "the others to include them."),
                   Table(left_out.rename(columns={"token_set": "scored on", "compared_set": "the panel compares"}))]
    blocks += _provenance(runs_dir, completed if task_runs.empty else pd.concat([completed, task_runs]))
    blocks += [Heading("Files"),
               Para("Beside this report: `table.csv` / `table.tex` (the main table with std, intervals and p-values), "
                    "`runs.csv` (summary metrics of every run), `pairs.csv` (paired tests between every two encodings), "
                    "`evaluations.csv` (every evaluation record) and the figures as PNG."
                    + (TASK_FILES if task_blocks else ""))]
    return _write(blocks, out_dir)


TASK_FILES = (" Tasks and attention: `tasks.csv` (the task table), `task_records.csv` (every task record), "
              "`attention.csv` (attention distance and entropy per run, length, layer and head).")


def _write(blocks: list, out_dir: Path) -> Path:
    md, page = render(blocks, out_dir, "posbench report")
    atomic_write_text(out_dir / "report.html", page)
    report = out_dir / "report.md"
    atomic_write_text(report, md)
    return report


def _not_in_tables(runs_dir: Path, runs: pd.DataFrame, unevaluated: pd.DataFrame, skipped: list[dict]) -> list:
    """Diverged, failed, unevaluated, unfinished and unreadable runs, in one table."""
    other = runs[runs["status"] != "completed"][["run_id", "status", "encoding", "train_len", "seed"]]
    unevaluated = unevaluated[["run_id", "encoding", "train_len", "seed"]]
    other = pd.concat([other, unevaluated.assign(status="trained, not evaluated (run the command again to evaluate)")],
                      ignore_index=True) if not unevaluated.empty else other
    unfinished = pd.DataFrame([_incomplete_row(p) for p in find_incomplete(runs_dir)])
    unreadable = pd.DataFrame([{"run_id": Path(s["run_dir"]).name, "status": f"unreadable: {s['reason']}"} for s in skipped])
    parts = [t for t in (other, unfinished, unreadable) if not t.empty]
    if not parts:
        return []
    return [Heading("Runs not in the table"),
            Para("Diverged or failed runs, incomplete ones (started, no metrics yet: running or killed; "
                 "re-running the sweep resumes them) and unreadable ones (a file missing or corrupt). None of "
                 "their numbers are in the tables above."),
            Table(pd.concat(parts, ignore_index=True).fillna(""))]


def _tasks_only_blocks(runs_dir: Path, runs: pd.DataFrame, completed: pd.DataFrame, skipped: list[dict],
                       task_blocks: list) -> list:
    unevaluated = completed[completed["task_evaluations"].map(lambda t: not t)]
    return [Heading("posbench report", 1),
            Para(f"{len(completed)} completed runs from `{runs_dir}`: byte-level models trained on synthetic tasks "
                 "at windows of `train_len` tokens and scored at multiples of it."),
            *task_blocks,
            *_not_in_tables(runs_dir, runs, unevaluated, skipped),
            *_provenance(runs_dir, completed),
            Heading("Files"), Para("Beside this report:" + TASK_FILES + " The figures as PNG.")]


def _task_sections(records: pd.DataFrame, left_out: pd.DataFrame, att: pd.DataFrame, out_dir: Path,
                   threshold: float, completed: pd.DataFrame, improving: float) -> list:
    """The tasks section (with task runs) and the attention section (with attention records); their
    files, and no figure of an earlier report left behind. ``completed``: the completed runs, whose
    task runs' training budgets the section states."""
    for old in [out_dir / "task_accuracy.png", out_dir / "attention.png", *out_dir.glob(TASK_HEATMAP.format("*"))]:
        old.unlink(missing_ok=True)
    blocks = []
    if not records.empty:
        table = tasks.task_table(records, threshold)
        atomic_write_text(out_dir / "tasks.csv", table.to_csv(index=False))
        atomic_write_text(out_dir / "task_records.csv", records.to_csv(index=False))
        figures.plot_task_accuracy(table, out_dir / "task_accuracy.png")
        heat = tasks.heatmap_frame(records)
        blocks += [Heading("Do the models use far context? Synthetic tasks"),
                   Para("Models trained on a synthetic task at `train_len` and scored at multiples of it "
                        "(`task.loss`: `answer` trains the answer positions only, `mixed` adds the language-model "
                        "loss on every token; each run's setting is under \"How these runs were made\"). Accuracy "
                        "in %: for passkey exact match, the fraction of examples whose every key digit is the "
                        "model's argmax given the true tokens before it (what greedy decoding would produce); for "
                        "MQAR and copy the fraction of answer tokens right (queried values, copied bytes). Mean over the task's grid (passkey: needle depths; MQAR: "
                        "numbers of pairs) and over seeds, ± half-width of the 95% t-interval over seeds. "
                        "`chance`: what answering in the right form without retrieving scores (passkey: guessed "
                        "digits; MQAR: one of the window's values at random, 1/pairs; copy: a random letter), the "
                        "level of a model that has not learned the task. `beyond train_len`: mean "
                        f"over every longer length. `effective length`: the longest length up to which accuracy "
                        f"(mean over seeds) stays at or above {threshold:.0%} in every cell of the grid (0: not "
                        "even at train_len)."),
                   Table(tasks.display_task_table(table)),
                   *[Para(_task_budget(task, g, improving, (records.loc[records["task"] == task, "loss"] == "mixed").any()))
                     for task, g in completed[completed["run_id"].isin(set(records["run_id"]))].groupby("task")],
                   Image("task_accuracy.png", OPTIONAL_FIGURES["task_accuracy.png"])]
        for task, g in heat.groupby("task"):
            condition = _condition_name(task)
            if condition is None:
                continue
            name = TASK_HEATMAP.format(task)
            figures.plot_task_heatmaps(g, task, condition, out_dir / name)
            blocks.append(Image(name, f"{task}: accuracy (%) by evaluation length and {condition}, mean over seeds"))
        if not left_out.empty:
            blocks.append(Para(f"{len(left_out)} task records were scored on another example set (other task settings or "
                               "corpus) and are in no table or figure."))
    if not att.empty:
        att_table = tasks.attention_table(att)
        atomic_write_text(out_dir / "attention.csv", att.to_csv(index=False))
        figures.plot_attention(att_table, out_dir / "attention.png")
        blocks += [Heading("Attention: how far and how spread"),
                   Para("Per layer and head, at every evaluation length (`eval.attention_stats`): the mean distance "
                        "from a query to the keys it attends to, sum_j p_ij (i - j), and the entropy of its attention "
                        "weights, averaged over queries and then over layers, heads and seeds. Measured on "
                        "validation text (`text`) or on a task's evaluation examples. Dotted: attention spread evenly "
                        "over every earlier key. An encoding that stays flat by attending locally keeps its distance "
                        "short as the window grows; attention that dilutes drifts towards the dotted lines. "
                        "Every layer and head: `attention.csv`."),
                   Image("attention.png", OPTIONAL_FIGURES["attention.png"])]
    return blocks


def _task_budget(task: str, runs: pd.DataFrame, improving: float, mixed: bool) -> str:
    """Whether a task's runs had finished learning: their training objective on validation examples
    (``mixed``: some of them trained with ``loss: mixed``)."""
    loss = "the validation loss (the training objective on validation examples)"
    note = ""
    if mixed:
        note = (" With `loss: mixed` that objective includes the language-model loss on the text, which keeps "
                "falling after the answers are learned: read the accuracy at train_len beside it.")
    return budget.budget_paragraph(budget.convergence(runs, improving), improving, f"Training budget ({task})", loss,
                                   budget.TASK_CONSEQUENCE) + note


def _condition_name(task: str) -> str | None:
    cls = TASKS.find(task)
    return cls.condition if cls is not None else None


def _budget_section(conv, curves, table, encodings, tolerance, improving, spread) -> list:
    blocks = [Heading("Training budget"),
              Para("How far each run got in learning. `fall over last doubling`: relative fall of the 1x validation "
                   "loss between half the budget and its end (mean over seeds; `estimated`: runs without a validation "
                   "point at half the budget, the fall between the steps compared scaled to one doubling). "
                   f"`still improving`: runs whose loss fell by more than {improving:.0%} (every run in `convergence.csv`)."),
              Table(budget.budget_table(conv))]
    warnings = budget.spread_warnings(table, encodings, spread)
    if warnings:
        blocks += [Para(f"**Warning:** the compared encodings differ by more than {spread:.0%} already at 1x, where "
                        "published perplexities differ by a few percent:"), *[Para(w) for w in warnings]]
    if not curves.empty:
        wide, notes = budget.stability(curves, tolerance)
        blocks += [Para("Evaluated during training (`eval.during_training`; nonoverlapping, on the tokens of the "
                        "tables): 1x perplexity and the longest multiple's ratio to it against training tokens. Under "
                        "the cosine schedule a point before the end is a model mid-schedule (learning rate still high), "
                        "not one trained to that budget; the last point is the tables' number."),
                   Image("during_training.png", OPTIONAL_FIGURES["during_training.png"]),
                   Para(f"Ratio and verdict at each evaluation step (mean over seeds; flat: within {tolerance:.0%} "
                        f"of 1x, mild: up to {budget.MILD_LIMIT:g}×, broken: more). " + " ".join(notes)),
                   Table(wide.fillna(""))]
    return blocks


def _extension_section(evals: pd.DataFrame, out_dir: Path, tolerance: float) -> list:
    """With extension runs: extension.csv, extension.png and their section (else nothing, and no
    figure of an earlier report left behind)."""
    (out_dir / "extension.png").unlink(missing_ok=True)
    ext = extension.extension_frame(evals)
    if ext.empty:
        return []
    scratch = extension.scratch_frame(evals, ext)
    ext_table = extension.extension_table(ext, scratch, tolerance)
    atomic_write_text(out_dir / "extension.csv", ext_table.to_csv(index=False))
    figures.plot_extension(extension.curves(ext), scratch, out_dir / "extension.png")
    return [Heading("Context extension by fine-tuning"),
            Para("Models trained at `train_len`, continued at a longer target length (`extend`: rows "
                 "`<encoding>[+<method>]@<s>x+ft<steps>`; 0 steps is the parent's weights with the method, the "
                 "zero-shot point), scored at the target length against the number of fine-tuning steps; dashed, "
                 "the same encoding trained from scratch at the target length, on the same tokens. "
                 f"`steps to within {tolerance:.0%}`: the fewest steps whose mean perplexity over seeds comes within "
                 f"{tolerance:.0%} of it (`extension.csv`)."),
            Image("extension.png", OPTIONAL_FIGURES["extension.png"]),
            Table(ext_table.round(2).fillna(""))]


def _provenance(runs_dir: Path, completed: pd.DataFrame) -> list:
    shared, differing = config_split(completed)
    cmds = commands(runs_dir, completed)
    blocks = [Heading("How these runs were made"),
              Para("Commands (from each Hydra sweep's `multirun.yaml` and each run's `metrics.json`):"),
              Code("\n".join(cmds) if cmds else "(not recorded)"),
              Para("Environment (runs per combination; `corpus`: source and content hash of the training data):"),
              Table(environment(completed)),
              Para("Settings shared by every run (resolved config):"),
              Code(nested_yaml(shared), "shared config"),
              ]
    if not differing.empty:
        blocks += [Para("Settings that differ between runs (with the shared ones, each run's full config):"),
                   Table(differing)]
    blocks += [Code(run_config_yaml(d), f"config of {rid}") for rid, d in zip(completed["run_id"], completed["run_dir"])]
    return blocks


