"""``python -m tooltap ...`` runs the executable, like the ``tooltap`` command."""

import os
import sys

from tooltap._bin import find_tooltap_bin

if __name__ == "__main__":
    binary = find_tooltap_bin()
    if sys.platform == "win32":
        import subprocess

        sys.exit(subprocess.call([binary, *sys.argv[1:]]))
    os.execv(binary, [binary, *sys.argv[1:]])
