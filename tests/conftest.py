import os
import sys

import matplotlib

matplotlib.use("Agg")
sys.path.insert(0, os.path.dirname(__file__))  # tests/naive.py, tests/naive_private.py

from hypothesis import settings  # noqa: E402

settings.register_profile("stabsim", deadline=None, print_blob=True)
settings.load_profile("stabsim")
