"""Every interpreter trick that keeps the synth and the test suite fast, in one place. None changes an output byte.

Why each exists (figures: docs/benchmarks.md, docs/testing.md "Speed"):

- `collector_off` (synth.py, bench's floor): a synth is a short batch run that imports the SDKs (~300k long-lived
  objects) and then creates thousands of asyncio tasks. Each collection walks the objects allocated since the last
  one, so at any threshold the collector costs about a tenth of the run and finds little: the run exits before
  garbage could matter (peak memory unchanged: ~160 MB staging, ~180 MB with 50 pools).
- `exit_now` (synth.py, bench's floor): once everything is written, end the process without tearing down the
  interpreter, which would free those objects one by one (~0.5 s, a third of the run) only to exit.
- `for_the_suite` (tests/__init__.py, before any SDK import), three tricks:
  - a generation-0 threshold of 50,000: the suite keeps hundreds of thousands of long-lived objects (pulumi_aws,
    pulumi_kubernetes, the schemas), and at the default (700 allocations) the collector walks them thousands of
    times; a larger threshold collects the same garbage, less often (~20% off `make test-fast`);
  - bytecode caches written even where the environment turns them off (container images often set
    PYTHONDONTWRITEBYTECODE=1): otherwise every run, and every pytest-xdist worker in it, parses, rewrites and
    compiles each test module and program module again (~1 s a worker). `__pycache__/` is ignored by git;
  - a stand-in `rfc3987_syntax`: jsonschema imports it for its `iri` format when installed (jupyterhub's
    jupyter-events pulls it in), and that module compiles a Lark grammar at import (~2 s for every interpreter
    that imports jsonschema). The stand-in's `is_valid_syntax` imports the real one on its first call: the check
    stays, and its cost falls on a schema that uses `iri` (none of the shared schemas does).
- `freeze_the_heap` (tests/conftest.py, after collection): collection imported the SDKs; moving them out of the
  collector's reach stops the full collections the Pulumi runtime's many tasks trigger from walking them (a synth
  in the suite runs ~1.8x faster). Nothing allocated later is affected.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
import types
from typing import NoReturn

SUITE_GC_THRESHOLD = (50_000, 20, 100)


def collector_off() -> None:
    gc.disable()


def exit_now(code: int) -> NoReturn:
    """Flush what was printed and end the process, skipping the interpreter's teardown."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def for_the_suite() -> None:
    gc.set_threshold(*SUITE_GC_THRESHOLD)
    sys.dont_write_bytecode = False
    _defer_the_iri_grammar()


def freeze_the_heap() -> None:
    gc.collect()
    gc.freeze()


def _defer_the_iri_grammar() -> None:
    spec = importlib.util.find_spec("rfc3987_syntax")
    if spec is None or "rfc3987_syntax" in sys.modules or "jsonschema" in sys.modules:
        return
    stand_in = types.ModuleType("rfc3987_syntax")
    stand_in.__path__ = list(spec.submodule_search_locations or [])

    def is_valid_syntax(term: str, value: str) -> bool:
        from rfc3987_syntax.syntax_helpers import is_valid_syntax as real

        return bool(real(term, value))

    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    sys.modules["rfc3987_syntax"] = stand_in
