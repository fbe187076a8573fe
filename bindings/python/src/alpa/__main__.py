"""``python -m alpa ARGS``: runs the ``alpa`` command-line program (with ``ALPA_LIBRARY=
PREFIX/lib/libalpa.so`` set, ``PREFIX/bin/alpa`` when it exists; else the one bundled with the
package by ``pip install``; else ``alpa`` on PATH), with the same arguments and exit code."""
from __future__ import annotations

import os
import pathlib
import shutil
import sys


def find_cli() -> "str | None":
    here = pathlib.Path(__file__).resolve().parent
    candidates = []
    lib_path = os.environ.get("ALPA_LIBRARY")
    if lib_path:  # the program that goes with the library the binding loads
        candidates.append(pathlib.Path(lib_path).resolve().parent.parent / "bin" / "alpa")
    candidates.append(here / "bin" / "alpa")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return shutil.which("alpa")


def main(argv: "list[str] | None" = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    cli = find_cli()
    if cli is None:
        print(
            "python -m alpa: the alpa command-line program is not installed with this package "
            "(it is bundled by `pip install ./bindings/python`) and none is on PATH",
            file=sys.stderr,
        )
        return 127
    env = dict(os.environ)
    lib_dir = None
    if os.environ.get("ALPA_LIBRARY"):
        lib_dir = str(pathlib.Path(os.environ["ALPA_LIBRARY"]).resolve().parent)
    if lib_dir:
        env["LD_LIBRARY_PATH"] = lib_dir + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    sys.stdout.flush()
    os.execve(cli, [cli, *args], env)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
