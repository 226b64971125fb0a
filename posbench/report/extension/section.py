"""The extension's report section, context extension by fine-tuning (extension runs, posbench/training/extend.py): perplexity at the target
length against fine-tuning steps, beside the encoding trained from scratch at that length."""

from __future__ import annotations

from posbench.report.extension import frames
from posbench.report.extension.figure import plot_extension
from posbench.report.drawing.document import Heading, Image, Para, Table
from posbench.report.section import SECTIONS, Output, Section


def _rows(ctx):
    return ctx.derived("extension", lambda: frames.extension_frame(ctx.evals))


@SECTIONS.register("extension")
class ExtensionSection(Section):
    order = 50
    files = (Output("extension.csv", "perplexity at the target length after each number of fine-tuning steps"),
             Output("extension.png", "perplexity at the target length against fine-tuning steps"))

    def applies(self, ctx) -> bool:
        return ctx.has_lm and not _rows(ctx).empty

    def build(self, ctx, out) -> list:
        ext, tolerance = _rows(ctx), ctx.options.tolerance
        scratch = frames.scratch_frame(ctx.evals, ext)
        table = frames.extension_table(ext, scratch, tolerance, ctx.token_sets)
        out.csv("extension.csv", table)
        out.figure("extension.png", plot_extension, frames.curves(ext), scratch)
        return [Heading("Context extension by fine-tuning"),
                Para("Models trained at `train_len`, continued at a longer target length (`extend`: rows "
                     "`<encoding>[+<method>]@<s>x+ft<steps>`; 0 steps is the parent's weights with the method, the "
                     "zero-shot point), scored at the target length against the number of fine-tuning steps; dashed, "
                     "the same encoding trained from scratch at the target length, on the same tokens. "
                     f"`steps to within {tolerance:.0%}`: the fewest steps whose mean perplexity over seeds comes within "
                     f"{tolerance:.0%} of it (`extension.csv`). The control row (`{frames.CONTROL}`) is the same "
                     "parent continued at its own train_len for the same steps and tokens, scored at the target: "
                     "fine-tuning is also more training. `net of control ft <s>`: each method's gain over it at the "
                     "target after the same steps, 1 - ppl(method) / ppl(control) (geometric means over the seeds both "
                     "have). Brackets: 95% intervals over text and seeds (as the main table: Student's t on the per-seed "
                     "values with the documents' variance added; a method and its control paired by seed and document)."),
                Image("extension.png", self.files[1].description),
                Table(frames.display_extension_table(table))]
