"""The test suite (a package, so helpers import as `tests.<module>`).

Imported before `tests/conftest.py` and any test module, so the setting below covers the SDK imports too: the
suite keeps hundreds of thousands of long-lived objects (pulumi_aws, pulumi_kubernetes, the schemas), and at the
default generation-0 threshold (700 allocations) the garbage collector walks them thousands of times. A larger
threshold collects the same garbage, less often: ~20% off `make test-fast`. See docs/testing.md "Speed".
"""

import gc

gc.set_threshold(50_000, 20, 100)
