"""A worker launcher for restart tests: exits with code 3 for its first N starts, then
becomes a real worker. Usage: python flaky_worker.py COUNTER_FILE N"""

from __future__ import annotations

import os
import sys
from pathlib import Path

counter = Path(sys.argv[1])
failures = int(sys.argv[2])
starts = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(starts))
if starts <= failures:
    sys.exit(3)
os.execv(sys.executable, [sys.executable, "-m", "rag_worker"])
