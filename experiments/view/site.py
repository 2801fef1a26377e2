"""The viewer as files next to the run (``RUN/view/``), for a browser to open from disk.

``data/index.js`` is rewritten whenever the store changes and ``data/episode-<id>.js`` whenever that
episode does; every write goes to a temporary file first and is renamed into place, so the page never
reads half a file. ``data/versions.json`` remembers which episode files are current, so a second
``warpgym view`` rewrites only what changed.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .build import Builder, as_script

ASSETS = Path(__file__).parent
PAGE_FILES = {"page.html": "index.html", "view.js": "view.js", "view.css": "view.css"}


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class Site:
    def __init__(
        self, run_dir: Path, out_dir: Path, *, refresh_s: float, report_every_s: float | None
    ) -> None:
        self.out_dir = out_dir
        self.data_dir = out_dir / "data"
        base = os.path.relpath(run_dir, out_dir).replace(os.sep, "/") + "/"
        self.builder = Builder(run_dir, base=base, refresh_s=refresh_s, report_every_s=report_every_s)
        self.versions: dict[str, str] = {}
        self._written: dict[str, Any] | None = None

    def close(self) -> None:
        self.builder.close()

    @property
    def page(self) -> Path:
        return self.out_dir / "index.html"

    def write_page(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        for source, target in PAGE_FILES.items():
            shutil.copyfile(ASSETS / source, self.out_dir / target)
        manifest = self.data_dir / "versions.json"
        if manifest.is_file():
            try:
                self.versions = {str(k): str(v) for k, v in json.loads(manifest.read_text()).items()}
            except (ValueError, AttributeError):
                self.versions = {}

    def update(self) -> dict[str, Any]:
        """Write what changed; returns the index."""
        index = self.builder.index()
        if index is self._written:
            return index
        changed = False
        for row in index["episodes"]:
            key = str(row["id"])
            path = self.data_dir / f"episode-{row['id']}.js"
            if self.versions.get(key) == row["version"] and path.is_file():
                continue
            doc = self.builder.episode(row["id"])
            if doc is None:
                continue
            write_atomic(path, as_script(doc))
            self.versions[key] = doc["version"]
            changed = True
        if changed:
            write_atomic(self.data_dir / "versions.json", json.dumps(self.versions).encode())
        # the index last: an episode it announces is already on disk
        write_atomic(self.data_dir / "index.js", as_script(index))
        self._written = index
        return index

    def watch(self, *, until_idle: bool, on_update: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Rewrite every ``refresh_s`` seconds while the run goes on (``until_idle``: stop once it ended)."""
        while True:
            index = self.update()
            if on_update:
                on_update(index)
            if until_idle and not index["live"]:
                if self.builder.refresh_report(self.builder.signature(), force=True):
                    self.update()
                return
            time.sleep(self.builder.refresh_s)
