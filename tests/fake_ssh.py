"""A stand-in for the `ssh` client, for tests of what the remote side sees and answers.

Used as `MLPTUI_SSH="python tests/fake_ssh.py"`. It skips ssh's options up to `--` and the host, then:
- FAKE_SSH_SHELL set: runs the remote command line with `$FAKE_SSH_SHELL -c LINE`, as sshd runs it with
  the user's login shell (stdin passed through), in FAKE_SSH_HOME;
- else: answers the bytes of the file FAKE_SSH_ANSWER ( `{nonce}` replaced by the nonce of the script that
  arrived on stdin) with FAKE_SSH_STDERR on stderr and exit status FAKE_SSH_EXIT.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys


def main(argv: list[str]) -> int:
    rest = argv[argv.index("--") + 1:]
    line = " ".join(rest[1:])
    shell = os.environ.get("FAKE_SSH_SHELL")
    if shell:
        return subprocess.run([shell, "-c", line], cwd=os.environ.get("FAKE_SSH_HOME")).returncode
    script = sys.stdin.buffer.read()
    m = re.match(rb"N=([0-9a-f]+)\n", script)
    nonce = m.group(1) if m else b"?"
    with open(os.environ["FAKE_SSH_ANSWER"], "rb") as f:
        answer = f.read().replace(b"{nonce}", nonce)
    sys.stdout.buffer.write(answer)
    sys.stdout.flush()
    sys.stderr.write(os.environ.get("FAKE_SSH_STDERR", ""))
    return int(os.environ.get("FAKE_SSH_EXIT", "0"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
