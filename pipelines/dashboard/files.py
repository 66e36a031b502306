"""The bundle's dashboards as files: where each `.lvdash.json` is, and its rendering to one HTML page
under the local state folder (`lakewatch dashboard`, the demo)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable


def dashboard_files(project: Any) -> list[tuple[str, Path]]:
    """(resource key, .lvdash.json path) of every dashboard resource in the bundle."""
    result = []
    for key, raw in sorted(project.bundle.resources("dashboards").items()):
        source = project.bundle.resource_file("dashboards", key)
        result.append((key, (source.parent / raw["file_path"]).resolve()))
    return result


def write_dashboard_file(project: Any, key: str, path: Path, say: Callable[[str], None],
                         output: Path | None = None) -> int:
    """Renders one dashboard to HTML; says where it is and which widgets failed. Returns failures."""
    from pipelines.dashboard.render import render_dashboard

    title = project.bundle.resources("dashboards").get(key, {}).get("display_name")
    rendered = render_dashboard(project.spark, path, title=str(title) if title else None)
    target = output or project.home.root / f"{key}.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(rendered.html, encoding="utf-8")
    say(f"dashboard {key}: {target} ({len(rendered.results)} widgets in {rendered.seconds:.0f}s; open it in a browser)")
    for result in rendered.failed():
        say(f"error: dashboard {key} widget {result.widget.name}: {result.error}")
    return len(rendered.failed())
