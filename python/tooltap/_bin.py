"""Locate the ``tooltap`` executable the wheel installed (as ruff's ``find_ruff_bin`` does)."""

import os
import shutil
import sys
import sysconfig


def find_tooltap_bin() -> str:
    """The path of the tooltap executable: ``$TOOLTAP_BIN`` when set, else the one in this
    interpreter's scripts folder (where the wheel puts it; the user scheme for ``--user``
    installs), else the first on ``PATH``."""
    override = os.environ.get("TOOLTAP_BIN")
    if override:
        return override
    exe = "tooltap" + sysconfig.get_config_var("EXE") if sysconfig.get_config_var("EXE") else "tooltap"
    candidates = [os.path.join(sysconfig.get_path("scripts"), exe)]
    user_scheme = {"nt": "nt_user", "posix": "posix_user"}.get(os.name)
    if user_scheme:
        candidates.append(os.path.join(sysconfig.get_path("scripts", scheme=user_scheme), exe))
    candidates.append(os.path.join(os.path.dirname(sys.executable), exe))
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which(exe)
    if found:
        return found
    raise FileNotFoundError(
        "tooltap executable not found: install the tooltap wheel (pip install tooltap) "
        "or set TOOLTAP_BIN to its path"
    )
