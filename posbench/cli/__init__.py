"""The command-line layer: posbench-train, posbench-eval, posbench-report and posbench-records (``console``
is what the console scripts call), Hydra's composition and pre-flight (``app``), the configs (``config``) and
``--help`` (``help``). Nothing below this layer sees a Hydra ``DictConfig``."""
