"""The embedded testbed: generator, SUT and sink network namespaces joined by veth."""

from netassay.names import validate_name
from netassay.testbed.bed import Testbed, require_root

__all__ = ["Testbed", "require_root", "validate_name"]
