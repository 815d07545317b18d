"""The test suite (a package, so helpers import as `tests.<module>`).

Imported before `tests/conftest.py` and any test module, so the suite's interpreter settings (offline/speed.py
says why each exists) cover the SDK imports too.
"""

from offline import speed

speed.for_the_suite()
