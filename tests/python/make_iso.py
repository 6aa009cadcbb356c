"""Writes a tiny ISO 9660 image: the `live-iso` that tests and the lab deploy.

Ironic's ramdisk deploy with redfish virtual media only needs a reachable ISO;
it never looks inside. Usage: make_iso.py OUTPUT.iso
"""
import io
import sys

import pycdlib

iso = pycdlib.PyCdlib()
iso.new(interchange_level=3, joliet=3, rock_ridge='1.09', vol_ident='FERROMETAL')
data = b'ferrometal live-iso\n'
iso.add_fp(io.BytesIO(data), len(data), '/README.TXT;1',
           joliet_path='/README.TXT', rr_name='README.TXT')
iso.write(sys.argv[1])
iso.close()
