"""``python -m rmqlab ...``: the same command line as the ``rmqlab`` script."""
import sys

from rmqlab.cli import main

if __name__ == "__main__":
    sys.exit(main())
