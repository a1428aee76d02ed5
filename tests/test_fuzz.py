"""The fuzz target (tests/fuzz/fuzz_trace.py) run for a bounded time, as CI does: atheris (libFuzzer)
mutates the seeds (slices of the bundled samples and ../shared/corpus, plus the known hostile inputs)
for MLPTUI_FUZZ_SECONDS (default 30) and must finish without a crash, a hang over 15 s or an input over
1 GB of RSS. docs/inputs.md gives the command for a longer run."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("atheris")

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "tests" / "fuzz" / "fuzz_trace.py"


def test_fuzz_target_runs_clean_for_a_bounded_time(tmp_path: Path) -> None:
    seconds = int(os.environ.get("MLPTUI_FUZZ_SECONDS", "30"))
    # libFuzzer checks the process's peak RSS, and Linux carries a parent's peak over fork and exec: under a
    # pytest that has grown, the fuzzer would start "over" 1 GB. The budget is 1 GB above what it inherits.
    rss_limit = 1024 + resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    out = subprocess.run(
        [sys.executable, str(TARGET), f"-max_total_time={seconds}", "-max_len=65536", f"-rss_limit_mb={rss_limit}",
         # a limit well above the slowest input's time alone: on a loaded machine a tighter one ended the
         # run with SIGALRM (a hang is still caught)
         "-timeout=15", f"-artifact_prefix={tmp_path}/", "-print_final_stats=1", str(corpus),
         str(ROOT / "tests" / "fuzz" / "seeds")],
        capture_output=True, text=True, timeout=seconds + 50, cwd=tmp_path)
    log = out.stderr[-6000:]
    assert out.returncode == 0, log
    done = re.search(r"^Done (\d+) runs in (\d+) second", out.stderr, re.M)
    assert done and int(done.group(1)) > 0, log
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("timeout-*")) \
        and not list(tmp_path.glob("oom-*")), log
