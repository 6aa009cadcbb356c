//! Inspection data: Ironic's inventory (agent or out-of-band format) as
//! baremetal-operator's `HardwareDetails`, in full for the `HardwareData`
//! object and as a summary for the host's status.

use crds::baremetalhost::{Cpu, DiskType, Firmware, HardwareDetails, Nic, Storage, SystemVendor};
use ironic_client::{Inventory, NodeInventory};
use serde_json::Value;

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn frequency(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn disk_type(name: Option<&str>, rotational: Option<bool>) -> Option<DiskType> {
    if name.is_some_and(|n| n.contains("nvme")) {
        return Some(DiskType::Nvme);
    }
    rotational.map(|r| if r { DiskType::Hdd } else { DiskType::Ssd })
}

fn firmware(vendor: Option<&ironic_client::SystemVendor>) -> Option<Firmware> {
    let fw = vendor?.firmware.as_ref()?;
    let text = |key: &str| fw.get(key).and_then(Value::as_str).map(str::to_string);
    let bios = crds::baremetalhost::Bios { date: text("build_date"), vendor: text("vendor"), version: text("version") };
    (bios.date.is_some() || bios.vendor.is_some() || bios.version.is_some()).then_some(Firmware { bios: Some(bios) })
}

fn nics(inventory: &Inventory) -> Vec<Nic> {
    let mut nics = Vec::new();
    for iface in &inventory.interfaces {
        let model = match (&iface.vendor, &iface.product) {
            (Some(v), Some(p)) => Some(format!("{v} {p}")),
            _ => None,
        };
        let base = Nic {
            name: iface.name.clone(),
            mac: iface.mac_address.clone().map(|m| m.to_ascii_lowercase()),
            model,
            speed_gbps: iface.speed_mbps.map(|s| i32::try_from(s / 1000).unwrap_or(i32::MAX)),
            pxe: Some(false),
            ..Nic::default()
        };
        let ips: Vec<String> = [&iface.ipv4_address, &iface.ipv6_address].into_iter().flatten().cloned().collect();
        if ips.is_empty() {
            nics.push(base);
        } else {
            // Dual-stack interfaces appear once per address, as in metal3.
            for ip in ips {
                nics.push(Nic { ip: Some(ip), ..base.clone() });
            }
        }
    }
    nics
}

/// The full hardware details of an inventory; `pxe_mac` marks the boot NIC.
pub(super) fn details(data: &NodeInventory, pxe_mac: Option<&str>) -> HardwareDetails {
    let inv = &data.inventory;
    let cpu = inv.cpu.as_ref().map(|c| Cpu {
        arch: c.architecture.clone(),
        clock_megahertz: c.frequency.as_ref().and_then(frequency),
        count: c.count.map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
        flags: (!c.flags.is_empty()).then(|| c.flags.clone()),
        model: c.model_name.clone(),
    });
    let ram_mebibytes = inv
        .memory
        .as_ref()
        .and_then(|m| m.physical_mb.map(to_i64).or_else(|| m.total.map(|bytes| to_i64(bytes / (1024 * 1024)))));
    let storage: Vec<Storage> = inv
        .disks
        .iter()
        .map(|d| Storage {
            alternate_names: d.by_path.as_ref().and(d.name.as_ref()).map(|n| vec![n.clone()]),
            hctl: d.hctl.clone(),
            model: d.model.clone(),
            name: d.by_path.clone().or_else(|| d.name.clone()),
            rotational: d.rotational,
            serial_number: d.serial.clone(),
            size_bytes: d.size.map(to_i64),
            type_: disk_type(d.name.as_deref(), d.rotational),
            vendor: d.vendor.clone(),
            wwn: d.wwn.clone(),
            ..Storage::default()
        })
        .collect();
    let mut nics = nics(inv);
    if let Some(mac) = pxe_mac {
        for nic in &mut nics {
            if nic.mac.as_deref().is_some_and(|m| m.eq_ignore_ascii_case(mac)) {
                nic.pxe = Some(true);
            }
        }
    }
    let system_vendor = inv.system_vendor.as_ref().map(|v| SystemVendor {
        manufacturer: v.manufacturer.clone(),
        product_name: v.product_name.clone(),
        serial_number: v.serial_number.clone(),
    });
    HardwareDetails {
        cpu,
        firmware: firmware(inv.system_vendor.as_ref()),
        hostname: inv.hostname.clone(),
        nics: (!nics.is_empty()).then_some(nics),
        ram_mebibytes,
        storage: (!storage.is_empty()).then_some(storage),
        system_vendor,
    }
}

/// The summary kept in the host's status: CPU without flags, memory, the
/// make, and NICs and disks by name, address and size. The full data is in
/// the HardwareData of the same name.
pub(super) fn summary(full: &HardwareDetails) -> HardwareDetails {
    HardwareDetails {
        cpu: full.cpu.as_ref().map(|c| Cpu { flags: None, ..c.clone() }),
        firmware: full.firmware.clone(),
        hostname: full.hostname.clone(),
        nics: full.nics.as_ref().map(|nics| {
            nics.iter()
                .map(|n| Nic {
                    name: n.name.clone(),
                    mac: n.mac.clone(),
                    ip: n.ip.clone(),
                    pxe: n.pxe,
                    speed_gbps: n.speed_gbps,
                    ..Nic::default()
                })
                .collect()
        }),
        ram_mebibytes: full.ram_mebibytes,
        storage: full.storage.as_ref().map(|disks| {
            disks
                .iter()
                .map(|d| Storage {
                    name: d.name.clone(),
                    size_bytes: d.size_bytes,
                    type_: d.type_,
                    rotational: d.rotational,
                    ..Storage::default()
                })
                .collect()
        }),
        system_vendor: full.system_vendor.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn inventory() -> NodeInventory {
        serde_json::from_value(json!({
            "inventory": {
                "cpu": {"model_name": "Xeon", "count": 8, "architecture": "x86_64", "frequency": "2400", "flags": ["vmx"]},
                "memory": {"physical_mb": 16384, "total": 17179869184u64},
                "interfaces": [
                    {"name": "eno1", "mac_address": "52:54:00:AA:BB:CC", "ipv4_address": "192.0.2.10",
                     "ipv6_address": "2001:db8::10", "speed_mbps": 10000, "vendor": "0x8086", "product": "0x1572"},
                    {"name": "eno2", "mac_address": "52:54:00:aa:bb:cd"}
                ],
                "disks": [
                    {"name": "/dev/sda", "size": 107374182400u64, "rotational": true, "model": "Disk", "serial": "S1"},
                    {"name": "/dev/nvme0n1", "size": 1000, "rotational": false, "by_path": "/dev/disk/by-path/pci-1"}
                ],
                "system_vendor": {"manufacturer": "Sushy", "product_name": "Emulated", "serial_number": "123",
                                  "firmware": {"vendor": "Acme", "version": "1.0", "build_date": "2024-01-01"}},
                "hostname": "host-0"
            },
            "plugin_data": {}
        }))
        .expect("inventory parses")
    }

    #[test]
    fn the_inventory_becomes_hardware_details() {
        let d = details(&inventory(), Some("52:54:00:aa:bb:cc"));
        let cpu = d.cpu.as_ref().expect("cpu");
        assert_eq!((cpu.arch.as_deref(), cpu.count, cpu.clock_megahertz), (Some("x86_64"), Some(8), Some(2400.0)));
        assert_eq!(d.ram_mebibytes, Some(16384));
        let nics = d.nics.as_ref().expect("nics");
        assert_eq!(nics.len(), 3, "the dual-stack NIC appears once per address");
        assert_eq!(nics[0].mac.as_deref(), Some("52:54:00:aa:bb:cc"));
        assert_eq!(nics[0].pxe, Some(true));
        assert_eq!(nics[0].speed_gbps, Some(10));
        assert_eq!(nics[0].model.as_deref(), Some("0x8086 0x1572"));
        assert_eq!(nics[2].pxe, Some(false));
        let disks = d.storage.as_ref().expect("disks");
        assert_eq!(disks[0].type_, Some(DiskType::Hdd));
        assert_eq!(disks[1].type_, Some(DiskType::Nvme));
        assert_eq!(disks[1].name.as_deref(), Some("/dev/disk/by-path/pci-1"));
        assert_eq!(disks[1].alternate_names, Some(vec!["/dev/nvme0n1".to_string()]));
        assert_eq!(d.system_vendor.as_ref().and_then(|v| v.manufacturer.as_deref()), Some("Sushy"));
        let bios = d.firmware.as_ref().and_then(|f| f.bios.as_ref()).expect("bios");
        assert_eq!(bios.version.as_deref(), Some("1.0"));
        assert_eq!(d.hostname.as_deref(), Some("host-0"));
    }

    #[test]
    fn the_summary_drops_the_bulk() {
        let full = details(&inventory(), None);
        let s = summary(&full);
        assert_eq!(s.cpu.as_ref().and_then(|c| c.flags.as_ref()), None);
        assert_eq!(s.ram_mebibytes, Some(16384));
        assert_eq!(s.storage.as_ref().map(Vec::len), Some(2));
        assert_eq!(s.storage.as_ref().and_then(|d| d[0].serial_number.as_ref()), None);
        assert_eq!(s.nics.as_ref().and_then(|n| n[0].model.as_ref()), None);
    }

    #[test]
    fn memory_falls_back_to_total_bytes() {
        let mut inv = inventory();
        if let Some(m) = inv.inventory.memory.as_mut() {
            m.physical_mb = None;
        }
        assert_eq!(details(&inv, None).ram_mebibytes, Some(16384));
    }
}
