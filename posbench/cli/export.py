"""``posbench-export RUN_DIR OUT_DIR``: a trained posbench ``rope`` or ``nope`` run as a transformers checkpoint
(GPTNeoXForCausalLM: posbench/hf/export.py says why that class), with its tokenizer and a model card.

    posbench-export runs/rope_small_L64_s0_<hash> exports/rope_small_L64_s0
    posbench-eval-hf exports/rope_small_L64_s0 --out runs/hf --bos no       # the same numbers through transformers
"""

from __future__ import annotations

import argparse
import sys

from posbench.core.errors import user_errors


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"posbench: error: {message} (posbench-export --help lists the arguments)", file=sys.stderr)
        sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    if "--version" in (sys.argv[1:] if argv is None else argv):  # like the other commands': before RUN_DIR is asked for
        from posbench.core.version import version_text  # torch loads inside console.py's handlers

        print(version_text())
        sys.exit(0)
    parser = _Parser(prog="posbench-export", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="a completed posbench run (its checkpoint.pt)")
    parser.add_argument("out_dir", help="a new folder for the transformers checkpoint")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    with user_errors():
        from posbench.hf.export import export  # torch and transformers load inside user_errors

        print(export(args.run_dir, args.out_dir))


if __name__ == "__main__":
    main()
