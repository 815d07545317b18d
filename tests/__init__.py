"""The test suite (a package, so helpers import as `tests.<module>`).

Imported before `tests/conftest.py` and any test module, so the setting below covers the SDK imports too: the
suite keeps hundreds of thousands of long-lived objects (pulumi_aws, pulumi_kubernetes, the schemas), and at the
default generation-0 threshold (700 allocations) the garbage collector walks them thousands of times. A larger
threshold collects the same garbage, less often: ~20% off `make test-fast`. See docs/testing.md "Speed".

Bytecode caches are written even where the environment turns them off (container images often set
PYTHONDONTWRITEBYTECODE=1): otherwise every run, and every pytest-xdist worker in it, parses, rewrites and compiles
each test module and program module again (~1 s a worker). `__pycache__/` is ignored by git.
"""

import gc
import sys

gc.set_threshold(50_000, 20, 100)
sys.dont_write_bytecode = False
