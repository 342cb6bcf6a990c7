"""Prints, one a line, the requirements of csro and the extras named on the command line
(read from pyproject.toml), leaving out those named after ``--except``.

``scripts/install`` uses it to install every package that PyPI has as a wheel while the
source-only ones compile in the background (issue 39: a fresh install in under 8 minutes).
"""

import pathlib
import re
import sys
import tomllib


def requirements(extras: list[str], leave_out: set[str]) -> list[str]:
    project = tomllib.loads((pathlib.Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in extras:
        wanted += project["optional-dependencies"][extra]
    return [r for r in wanted if _name(r) not in leave_out]


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


if __name__ == "__main__":
    args = sys.argv[1:]
    cut = args.index("--except") if "--except" in args else len(args)
    print("\n".join(requirements(args[:cut], {_name(n) for n in args[cut + 1:]})))
