"""`python -m caramel` is the same as the `bench` command."""

import sys

from caramel.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
