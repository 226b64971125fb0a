import sys

from posbench.report import main

main(sys.argv[1:])
