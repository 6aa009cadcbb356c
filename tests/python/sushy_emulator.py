"""sushy-tools with emulated hardware, for ferrometal's tests and lab.

The stock fake driver of sushy-tools 2.2.0 implements no processors, memory or
storage, so Ironic's redfish inspection fails against it. This launcher gives
every fake system CPUs, memory and a disk (from its entry in
SUSHY_EMULATOR_FAKE_SYSTEMS), optionally makes power changes immediate instead
of the stock random 1-11 s delay, and then runs the stock emulator.

Config keys read from the emulator config file (Python syntax), per system:
  'cpus' (int), 'memory_gib' (int), 'disk_gib' (int)
and globally:
  FERROMETAL_INSTANT_POWER (bool)
"""
import sys

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


fakedriver.FakeDriver.get_total_cpus = get_total_cpus
fakedriver.FakeDriver.get_total_memory = get_total_memory
fakedriver.FakeDriver.get_processors = get_processors
fakedriver.FakeDriver.get_simple_storage_collection = \
    get_simple_storage_collection
fakedriver.FakeDriver.set_power_state = set_power_state

if __name__ == '__main__':
    sys.exit(emulator.main())
