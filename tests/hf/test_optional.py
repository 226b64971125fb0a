"""transformers is optional: posbench and its other commands import without it, and the HF commands say
in one line how to install it."""

import subprocess
import sys

HIDE = ("import sys, importlib.abc\n"
        "class Hide(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name == 'transformers' or name.startswith('transformers.'):\n"
        "            raise ImportError('hidden')\n"
        "sys.meta_path.insert(0, Hide())\n")


def run(code):
    return subprocess.run([sys.executable, "-c", HIDE + code], capture_output=True, text=True, timeout=120)


def test_posbench_imports_without_transformers():
    proc = run("import posbench.hf, posbench.hf.row, posbench.hf.export, posbench.cli.eval_hf, posbench.jobs.evaluate\n"
               "print('ok')")
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def test_the_hf_command_without_transformers_is_one_line(tmp_path):
    proc = run(f"sys.argv = ['posbench-eval-hf', {str(tmp_path)!r}]\nfrom posbench.cli.eval_hf import main\nmain()")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "posbench: error: this command needs Hugging Face transformers: pip install 'posbench[hf]'"
