import sys

from fairmt.cli import main

sys.exit(main())
