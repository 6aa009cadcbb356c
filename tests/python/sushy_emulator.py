"""sushy-tools with emulated hardware, for ferrometal's tests and lab.

The stock fake driver of sushy-tools 2.2.0 implements no processors, memory or
storage, so Ironic's redfish inspection fails against it. This launcher gives
every fake system CPUs, memory and a disk (from its entry in
SUSHY_EMULATOR_FAKE_SYSTEMS), optionally makes power changes immediate instead
of the stock random 1-11 s delay, and then runs the stock emulator.

It also gives every fake system BIOS attributes (those of the attribute registry
sushy-tools serves, with the values of its libvirt driver's defaults), kept per
system and changed by a PATCH of `Bios/Settings` at once (a real BMC applies
them at the next boot, which Ironic's redfish bios interface always makes), and
a BIOS version that `set_versions` changes. A PATCH with the value
'refused-by-bmc' is refused (400), for tests of a failed BIOS step, and so is
a SimpleUpdate of an image whose URL holds it, for tests of a failed update. Since a PATCH applies at once, the
pending settings (`GET Bios/Settings`) are empty, as a BMC's are once it applied
them; stock sushy-tools lists every attribute there as pending, which Ironic
35.1 reads as a change never applied (its clean then waits forever).

It also serves a Redfish EventService whose subscriptions are kept in memory:
created by a POST (201 and the Location), read, listed and deleted, as
Ironic's redfish vendor passthru and sushy use them. Their HttpHeaders are
write-only, as Redfish has them: a subscription shows only the header names it
was given (under Oem.Ferrometal.HeaderNames), so tests can tell they arrived
without any value being echoed. A Destination holding 'refused-by-bmc' is
refused (400).

Config keys read from the emulator config file (Python syntax), per system:
  'cpus' (int), 'memory_gib' (int), 'disk_gib' (int), 'bios_version' (str)
and globally:
  FERROMETAL_INSTANT_POWER (bool)
"""
import json
import sys

import flask
from sushy_tools import error
from sushy_tools.emulator import main as emulator
from sushy_tools.emulator.resources.systems import fakedriver


def _system(driver, identity):
    return driver._get(identity)


def get_total_cpus(self, identity):
    return int(_system(self, identity).get('cpus', 2))


def get_total_memory(self, identity):
    # sushy-tools reports memory in GiB.
    return int(_system(self, identity).get('memory_gib', 4))


def get_processors(self, identity):
    count = get_total_cpus(self, identity)
    return [{'id': f'CPU{i}', 'socket': f'CPU {i}', 'model': 'Emulated CPU',
             'vendor': 'ferrometal', 'cores': '1', 'threads': '1'}
            for i in range(count)]


def get_simple_storage_collection(self, identity):
    disk_gib = int(_system(self, identity).get('disk_gib', 20))
    return {'sata': {'Id': 'sata', 'Name': 'sata', 'DeviceList': [
        {'Name': 'disk0', 'CapacityBytes': disk_gib * 1024 ** 3}]}}


_stock_set_power_state = fakedriver.FakeDriver.set_power_state


def set_power_state(self, identity, state):
    _stock_set_power_state(self, identity, state)
    if self._config.get('FERROMETAL_INSTANT_POWER'):
        system = self._get(identity)
        pending = system.get('pending_power')
        if pending:
            pending['apply_time'] = 0
            self._update(system, pending_power=pending)
            # Reading applies a due pending change.
            self._get(identity)


# The registry's attributes (sushy-tools' templates/bios_registry.json) with the
# values of sushy-tools' libvirt driver (DEFAULT_BIOS_ATTRIBUTES).
DEFAULT_BIOS = {'BootMode': 'Uefi', 'EmbeddedSata': 'Raid',
                'L2Cache': '10x256 KB', 'NicBoot1': 'NetworkBoot',
                'NumCores': '10', 'QuietBoot': 'true',
                'ProcTurboMode': 'Enabled', 'SecureBootStatus': 'Enabled',
                'SerialNumber': 'QPX12345', 'SysPassword': ''}


def get_bios(self, identity):
    return dict(DEFAULT_BIOS, **_system(self, identity).get('bios', {}))


# A value the BMC refuses (with a 400), for tests of a failed BIOS step: the registry
# accepts it (a short string), so Ironic sends it.
REFUSED = 'refused-by-bmc'


def set_bios(self, identity, attributes):
    if REFUSED in attributes.values():
        raise error.FishyError(f'the BMC refuses the value {REFUSED!r}', code=400)
    system = self._get(identity)
    self._update(system, bios=dict(system.get('bios', {}), **attributes))


def reset_bios(self, identity):
    self._update(self._get(identity), bios={})


def get_versions(self, identity):
    system = _system(self, identity)
    return {'BiosVersion': system.get('bios_version', '1.0.0')}


def set_versions(self, identity, firmware_versions):
    version = firmware_versions.get('BiosVersion')
    if version:
        self._update(self._get(identity), bios_version=version)


fakedriver.FakeDriver.get_total_cpus = get_total_cpus
fakedriver.FakeDriver.get_total_memory = get_total_memory
fakedriver.FakeDriver.get_processors = get_processors
fakedriver.FakeDriver.get_simple_storage_collection = \
    get_simple_storage_collection
fakedriver.FakeDriver.set_power_state = set_power_state
fakedriver.FakeDriver.get_bios = get_bios
fakedriver.FakeDriver.set_bios = set_bios
fakedriver.FakeDriver.reset_bios = reset_bios
fakedriver.FakeDriver.get_versions = get_versions
fakedriver.FakeDriver.set_versions = set_versions

_stock_bios_settings = emulator.app.view_functions['bios_settings']


def bios_settings(identity):
    response = _stock_bios_settings(identity)
    if flask.request.method != 'GET' or response.status_code != 200:
        return response
    body = json.loads(response.get_data())
    body['Attributes'] = {}
    response.set_data(json.dumps(body))
    return response


emulator.app.view_functions['bios_settings'] = bios_settings


@emulator.app.before_request
def refuse_firmware_image():
    """A firmware image whose URL holds 'refused-by-bmc' is refused (400), for
    tests of a failed firmware update; any other is taken as stock sushy-tools
    takes it (it bumps the BIOS version without fetching anything)."""
    if not flask.request.path.endswith('/UpdateService.SimpleUpdate'):
        return None
    body = flask.request.get_json(silent=True) or {}
    if REFUSED in str(body.get('ImageURI', '')):
        return flask.jsonify({'error': {'message': f'the BMC refuses the image {REFUSED!r}'}}), 400
    return None

SUBSCRIPTIONS_PATH = '/redfish/v1/EventService/Subscriptions'
_subscriptions = {}
_stock_root = emulator.app.view_functions['root_resource']


def root_resource():
    response = _stock_root()
    body = json.loads(response.get_data())
    body['EventService'] = {'@odata.id': '/redfish/v1/EventService'}
    response.set_data(json.dumps(body))
    return response


emulator.app.view_functions['root_resource'] = root_resource


@emulator.app.route('/redfish/v1/EventService')
def event_service():
    return flask.jsonify({
        '@odata.id': '/redfish/v1/EventService', 'Id': 'EventService', 'Name': 'Event Service',
        'ServiceEnabled': True, 'EventTypesForSubscription': ['Alert'],
        'Subscriptions': {'@odata.id': SUBSCRIPTIONS_PATH},
        'Actions': {'#EventService.SubmitTestEvent': {
            'target': '/redfish/v1/EventService/Actions/EventService.SubmitTestEvent'}},
    })


def _shown(ident):
    entry = _subscriptions[ident]
    return {
        '@odata.id': f'{SUBSCRIPTIONS_PATH}/{ident}', 'Id': ident, 'Name': f'Subscription {ident}',
        'Destination': entry['Destination'], 'Context': entry.get('Context', ''),
        'Protocol': entry.get('Protocol', 'Redfish'), 'EventTypes': entry.get('EventTypes', ['Alert']),
        'HttpHeaders': [],
        'Oem': {'Ferrometal': {'HeaderNames': sorted(k for h in entry.get('HttpHeaders', []) for k in h)}},
    }


@emulator.app.route(SUBSCRIPTIONS_PATH, methods=['GET', 'POST'])
def subscriptions():
    if flask.request.method == 'GET':
        members = [{'@odata.id': f'{SUBSCRIPTIONS_PATH}/{i}'} for i in sorted(_subscriptions)]
        return flask.jsonify({'@odata.id': SUBSCRIPTIONS_PATH, 'Name': 'Subscriptions',
                              'Members': members, 'Members@odata.count': len(members)})
    body = flask.request.get_json(silent=True) or {}
    destination = str(body.get('Destination') or '')
    if not destination or REFUSED in destination:
        return flask.jsonify({'error': {'message': f'the BMC refuses the destination {destination!r}'}}), 400
    ident = str(len(_subscriptions) + 1)
    while ident in _subscriptions:
        ident = str(int(ident) + 1)
    _subscriptions[ident] = body
    response = flask.jsonify(_shown(ident))
    response.status_code = 201
    response.headers['Location'] = f'{SUBSCRIPTIONS_PATH}/{ident}'
    return response


@emulator.app.route(SUBSCRIPTIONS_PATH + '/<ident>', methods=['GET', 'DELETE'])
def subscription(ident):
    if ident not in _subscriptions:
        return flask.jsonify({'error': {'message': f'no subscription {ident}'}}), 404
    if flask.request.method == 'DELETE':
        del _subscriptions[ident]
        return '', 204
    return flask.jsonify(_shown(ident))


if __name__ == '__main__':
    sys.exit(emulator.main())
