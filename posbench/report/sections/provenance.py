"""How these runs were made: the commands, the environment and corpus, the settings shared by
every run and one table of those that differ (posbench/report/records/provenance.py). Together they are each
run's whole config, which manifest.json.gz beside the report also keeps run by run: a listing of every
run's config here made the map's report.md 0.8 MB."""

from __future__ import annotations

from posbench.report.drawing.document import Code, Heading, Para, Table
from posbench.report.records.provenance import config_split, nested_yaml, shown_commands, shown_environment, shown_runs
from posbench.report.section import SECTIONS, Section
from posbench.report.sections.intro import rebuilt_text


@SECTIONS.register("provenance")
class Provenance(Section):
    order = 130

    def build(self, ctx, out) -> list:
        runs = shown_runs(ctx)
        shared, differing = config_split(runs, ctx.configs)
        recorded = ctx.recorded  # rebuilt from records: the committed report's commands and environment
        cmds, env = shown_commands(ctx), shown_environment(ctx)
        source = ("as the committed report recorded them" if recorded is not None
                  else "from each Hydra sweep's `multirun.yaml` and each run's `metrics.json`")
        blocks = [Heading("How these runs were made")]
        if recorded is not None:
            blocks.append(Para("This report was " + rebuilt_text(recorded, ctx.has_lm)))
        blocks += [Para(f"Commands ({source}):"),
                   Code("\n".join(cmds) if cmds else "(not recorded)"),
                   Para("Environment (runs per combination; `corpus`: source and content hash of the training data):"),
                   Table(env) if not env.empty else Para("(not recorded)"),
                   Para("Settings shared by every run (resolved config):"),
                   Code(nested_yaml(shared), "shared config")]
        if not differing.empty:
            blocks += [Para("Settings that differ between runs (with the shared ones, each run's whole config; "
                            "`manifest.json.gz` keeps each run's config as written):"),
                       Table(differing)]
        return blocks
