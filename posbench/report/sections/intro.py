"""The title and one line on what the runs are (a rebuilt report's full account opens its provenance section); the headline table follows it (sections/headline.py),
and how the numbers were scored (protocols, scored text) opens the summary."""

from __future__ import annotations

from posbench.report.drawing.document import Heading, Para
from posbench.report.analysis.prose import join_words
from posbench.report.section import SECTIONS, Section


@SECTIONS.register("intro")
class Intro(Section):
    order = 0

    def build(self, ctx, out) -> list:
        title = Heading("posbench report", 1)
        where = join_words([f"`{name}`" for name in ctx.folder_names])  # never the machine's absolute path
        if ctx.recorded is not None:
            # one sentence here, so the headline is on a phone's first screen; the rest opens "How these runs were made"
            return [title, Para(f"{_runs(len(ctx.all_completed), 'completed')} of the committed report in "
                                f"{where}, rebuilt from the records it kept: the perplexities are the committed ones, "
                                "the statistics the current code's (what else, in \"How these runs were made\").")]
        if not ctx.has_lm:
            return [title, Para(f"{len(ctx.completed)} completed runs from {where}{chosen(ctx)}: byte-level models "
                                "trained on synthetic tasks at windows of `train_len` tokens and scored at multiples "
                                "of it." + smoke_text(ctx))]
        # every completed run is counted: language models at every setting of a learning-rate grid, and task runs
        n_lm, n_tasks = len(ctx.lm_runs), len(ctx.task_runs)
        runs = _runs(n_lm, "completed") if not n_tasks else \
            f"{n_lm + n_tasks} completed runs ({_runs(n_lm, 'language-model')} and {_runs(n_tasks, 'task')})"
        subword = ctx.lm_runs["model"].astype(str).str.contains("/").any()
        kind = ("language models (byte-level, and `<model>/<tokenizer>` a subword tokenizer's, compared in bits per "
                "byte in the Tokenizers section)" if subword else "byte-level language models")
        return [title,
                Para(f"{runs} from {where}{chosen(ctx)}: {kind} trained on windows of `train_len` "
                     "tokens, evaluated at multiples of it. Lower perplexity is better; an encoding that extrapolates "
                     "keeps its 1x perplexity (ratio near 1) at lengths it never saw." + smoke_text(ctx))]


def chosen(ctx) -> str:
    """The filter the runs passed (posbench-report --only / --where), where one was given."""
    selection = ctx.options.selection
    return f" (those of {selection.describe()})" if selection else ""


def smoke_text(ctx) -> str:
    """One sentence on the smoke runs left out beside runs of a real budget (report/records/selection.py)."""
    n = ctx.smoke_left_out
    if not n:
        return ""
    return (f" {_runs(n, '`train=smoke`')} (a smoke test of a few steps) left out: a smoke test is no training "
            "budget of the other runs.")


def _runs(n: int, kind: str) -> str:
    return f"{n} {kind} run{'' if n == 1 else 's'}"


def rebuilt_text(recorded, has_lm: bool = True) -> str:
    """What a report rebuilt from records is (posbench/report/records/committed.py)."""
    text = ("rebuilt from the records it kept (`posbench-report FOLDER --rebuild`): its runs are not on the machine "
            "that rebuilt it. The perplexities and accuracies are the committed ones; every table, interval, test, "
            "rank, verdict and figure that reads them is the current code's.")
    if has_lm:
        text += (" The training curves, per-position losses and a learning-rate grid's tuned table need what the "
                 "records do not keep: where the committed report had them, they are its own, and say so.")
    if recorded.joins:
        text += (" Runs retrained later (the same run ids) replace their records on the protocols these reports "
                 "scored: " + "; ".join(j.line() for j in recorded.joins) + ".")
    return text
