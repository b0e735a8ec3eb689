"""Run every benchmark script in this folder, one after the other (``make bench``)."""

import subprocess
import sys
from pathlib import Path

if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    failures = 0
    for script in sorted(here.glob("bench_*.py")):
        print(f"\n===== {script.name} =====", flush=True)
        failures += subprocess.call([sys.executable, str(script)]) != 0
    sys.exit(1 if failures else 0)
