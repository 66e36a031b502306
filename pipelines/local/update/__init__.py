"""One pipeline update on the local engine, in parts:

- `types`: the request, each flow's result, the update's result, the phases' timings;
- `context`: the update's facts, its event log stream, the graph it registered, the lookups all parts make;
- `state`: what several threads touch (the stop's flags, SDP's flow states), with who writes what;
- `stopping`: Ctrl-C and SIGTERM, the stop of SDP's run (local and `--remote`), the wait for its flows;
- `definitions`: registering the definitions, the in-flight record of the flows, the definition events;
- `flow_events`: SDP's events applied (states, held completions, lost outcomes, stopped flows);
- `metrics`: per-batch and per-flow metrics as plain functions from batches, commits and the graph;
- `measurements`: the measurements made on the engine during the run and at the close;
- `lifecycle`: the update from start to close;
- `messages`: error texts as the event log and the console show them.

`pipelines.local.runner.LocalRunner` starts updates; `pipelines.console` prints their results.
"""

from pipelines.local.update.types import FlowResult, Timings, UpdateRequest, UpdateResult

__all__ = ["FlowResult", "Timings", "UpdateRequest", "UpdateResult"]
