"""`python -m pipelines.cli`: the `lakewatch` command."""

from pipelines.cli import main

raise SystemExit(main())
