"""The dashboard pictures of the docs (`make docs-images`): the page `lakewatch dashboard` renders from
the demo's tables, opened in headless Chromium (Debian's, driven by Playwright, as the dashboard page
test opens it), one PNG per picture under docs/images/.

Usage: `python docs/tools/screenshots.py [--html PAGE] [--output FOLDER]`. Without `--html` it runs
`lakewatch demo` on a throwaway state folder first and takes that demo's page.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: the project's packages come from its root
    sys.path.insert(0, str(ROOT))

from tests.integration.chromium import CHROMIUM, headless_chromium  # noqa: E402

# The page's layout width (the dashboard page test's is the same); narrower pictures stay readable.
WIDTH = 1280
DASHBOARD_FILE = "lakewatch_observability.html"


@dataclass(frozen=True)
class Picture:
    file: str
    selector: str  # the element shown, from its top
    height: int  # CSS pixels shown from the element's top (the whole element when it is shorter)


PICTURES: tuple[Picture, ...] = (
    Picture("dashboard-run-status.png", "#page-run_status", 900),
    Picture("dashboard-data-quality.png", "#page-data_quality", 900),
    Picture("dashboard-reconciliation.png", "#page-reconciliation", 900),
)


def run_demo(home: Path) -> Path:
    """`lakewatch --home HOME demo`; the dashboard page it wrote."""
    from pipelines import cli

    code = cli.main(["--home", str(home), "demo"])
    if code != 0:
        raise SystemExit(f"lakewatch demo exited {code}")
    cli.main(["--home", str(home), "engine", "stop"])
    return home / DASHBOARD_FILE


def shoot(html: Path, output: Path, pictures: Sequence[Picture] = PICTURES) -> list[Path]:
    """Writes each picture of `html` into `output`; returns the files."""
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    output.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="lakewatch-chromium-") as profile:
        with headless_chromium(Path(profile)) as context:
            page: Any = context.new_page()
            page.set_viewport_size({"width": WIDTH, "height": 1000})
            page.goto(html.resolve().as_uri(), wait_until="load")
            for picture in pictures:
                box = page.locator(picture.selector).bounding_box()
                if box is None:
                    raise SystemExit(f"{html} has no element {picture.selector}")
                target = output / picture.file
                page.screenshot(path=str(target), full_page=True, clip={
                    "x": box["x"], "y": box["y"], "width": box["width"],
                    "height": min(box["height"], picture.height)})
                written.append(target)
            page.close()
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", type=Path, help="a page `lakewatch dashboard` wrote (default: run the demo)")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args(argv)
    home = None
    try:
        if args.html is None:
            home = Path(tempfile.mkdtemp(prefix="lakewatch-docs-"))
            args.html = run_demo(home)
        for path in shoot(args.html, args.output):
            print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    finally:
        if home is not None:
            shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
