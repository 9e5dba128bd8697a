"""Check that Java 17+ is on the PATH (PySpark needs it); print a one-line fix otherwise."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

INSTALL_HINT = "apt-get install -y openjdk-17-jre-headless"


def java_major_version() -> int | None:
    java = shutil.which("java")
    if java is None:
        return None
    proc = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', proc.stderr + proc.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2)) if major == 1 and match.group(2) else major


def main() -> int:
    major = java_major_version()
    if major is None or major < 17:
        found = "no java on PATH" if major is None else f"java {major} found"
        print(f"rmqsim: PySpark needs Java 17+ ({found}); install it with: {INSTALL_HINT}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
