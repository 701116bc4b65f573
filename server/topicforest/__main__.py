"""`python -m topicforest` runs the same command line as `topicforest`."""

import sys

from topicforest.cli import main

sys.exit(main())
