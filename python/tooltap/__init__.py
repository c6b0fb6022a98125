"""tooltap for Python test suites.

The wheel carries the ``tooltap`` executable (found by :func:`find_tooltap_bin`) and a pytest
plugin (:mod:`tooltap.pytest_plugin`) whose ``tooltap`` fixture runs ``tooltap replay`` or
``tooltap proxy`` around each test. See docs/testing.md.
"""

from tooltap._bin import find_tooltap_bin

__all__ = ["find_tooltap_bin"]
