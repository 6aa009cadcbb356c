"""Ironic for ferrometal's tests and lab: the all-in-one service, or with
FERROMETAL_IRONIC_ROLE=api or conductor one part of a split Ironic (the API
reaching its conductors over JSON-RPC).

With FERROMETAL_FAST_REDFISH=1 this drops the PBKDF2 iteration count that
Ironic 39's redfish driver spends on every BMC connection lookup (about 0.5 s
of CPU each). The hash only keys a session cache, so lowering the cost changes
nothing observable except speed; it is what makes dozens of emulated redfish
hosts practical on a 2-core machine. Production Ironic is never patched.
"""
import os
import sys

# Must come first: it selects oslo.service's threading backend before anything
# imports eventlet (otherwise "BackendAlreadySelected").
import ironic.command  # noqa: F401
from ironic.command import api
from ironic.command import conductor
from ironic.command import singleprocess

if os.environ.get('FERROMETAL_FAST_REDFISH') == '1':
    import hashlib
    import types

    from ironic.drivers.modules.redfish import utils as redfish_utils

    def _cheap_pbkdf2(name, password, salt, iterations, dklen=None):
        return hashlib.pbkdf2_hmac(name, password, salt, 1, dklen)

    redfish_utils.hashlib = types.SimpleNamespace(pbkdf2_hmac=_cheap_pbkdf2)

ROLES = {'all': singleprocess, 'api': api, 'conductor': conductor}

if __name__ == '__main__':
    sys.exit(ROLES[os.environ.get('FERROMETAL_IRONIC_ROLE', 'all')].main())
