"""Lists every subpackage under the mapped top-level folders (see pyproject.toml)."""

from pathlib import Path

from setuptools import setup

ROOTS = {"warpgym": "warpgym", "env": "warpgym.env", "tasks": "warpgym.tasks",
         "prompts": "warpgym.prompts", "agents": "warpgym.agents", "experiments": "warpgym.experiments"}


def _packages() -> tuple[list[str], dict[str, str]]:
    packages, package_dir = [], {}
    for folder, name in ROOTS.items():
        for init in sorted(Path(folder).rglob("__init__.py")):
            rel = init.parent.relative_to(folder)
            dotted = ".".join((name, *rel.parts)) if rel.parts else name
            packages.append(dotted)
            package_dir[dotted] = str(init.parent)
    return packages, package_dir


packages, package_dir = _packages()
setup(packages=packages, package_dir=package_dir)
