"""The embedded testbed: generator, SUT and sink network namespaces joined by veth."""

from netassay.testbed.bed import Testbed, require_root
from netassay.testbed.names import validate_name

__all__ = ["Testbed", "require_root", "validate_name"]
