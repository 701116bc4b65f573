"""`python -m topicforest.eval [conversation.json ...]`: see topicforest.eval.cli."""

import sys

from topicforest.eval.cli import main

sys.exit(main())
