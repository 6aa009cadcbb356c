//! A machine on a provisioning network, played by a network namespace of this machine: a veth
//! pair whose one end stays here with the provisioning address (where a host-network Ironic's
//! dnsmasq and httpd serve) and whose other end is the machine's NIC inside the namespace.
//! Commands run in the namespace with `ip netns exec`; the DHCP client is busybox's `udhcpc`
//! (`scripts/install-packages.sh`). Needs root, as the real node does.

use anyhow::{Context, bail};
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Output;
use tokio::process::Command;

/// The veth pair and the namespace holding its far end. Dropping it removes both, so a failed
/// test leaves no interface behind; [`ProvisioningLink::create`] also removes what a killed run
/// left under the same names.
pub struct ProvisioningLink {
    host_interface: String,
    namespace: String,
    machine_interface: String,
}

/// What the DHCP server answered, as `udhcpc` reports it to its script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub address: Ipv4Addr,
    /// The prefix length of the network the answer gave.
    pub prefix: u8,
    /// The server identifier (option 54): the DHCP server's own address.
    pub server: Ipv4Addr,
    /// The next server (`siaddr`): where TFTP is served.
    pub next_server: Ipv4Addr,
    /// The boot file name (the BOOTP `file` field).
    pub boot_file: String,
}

/// How the client presents itself, as the firmware on a machine's NIC does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// A BIOS PXE ROM: vendor class `PXEClient`, client architecture 0 (option 93).
    BiosPxe,
    /// iPXE, once chain-loaded: user class `iPXE` (option 77) and its encapsulated options
    /// (option 175), which is how a DHCP server tells it from the firmware.
    Ipxe,
}

impl Client {
    /// `udhcpc` arguments: the vendor class and the options the client sends.
    fn arguments(self) -> Vec<&'static str> {
        match self {
            // Option 93 (0x5d): architecture 0, x86 BIOS.
            Client::BiosPxe => vec!["-V", "PXEClient:Arch:00000:UNDI:002001", "-x", "0x5d:0000"],
            // Option 77 (0x4d) "iPXE" as iPXE sends it; option 175 (0xaf) with one of its
            // feature flags (0xb1, 1 byte, 1): its presence is what marks iPXE.
            Client::Ipxe => vec!["-x", "0x4d:69505845", "-x", "0xaf:b10101"],
        }
    }
}

/// Called by `udhcpc` on each event; on `bound` it prints the answer's fields, one a line.
const UDHCPC_SCRIPT: &str = r#"#!/bin/sh
[ "$1" = bound ] || exit 0
printf 'lease ip=%s\nlease mask=%s\nlease serverid=%s\nlease siaddr=%s\nlease boot_file=%s\n' \
  "$ip" "$mask" "$serverid" "$siaddr" "$boot_file"
"#;

impl ProvisioningLink {
    /// `host_interface` here with `host_address/prefix`, its peer `machine_interface` in the
    /// namespace `namespace`, both up. Names of a previous, killed run are removed first.
    pub async fn create(
        host_interface: &str,
        host_address: Ipv4Addr,
        prefix: u8,
        namespace: &str,
        machine_interface: &str,
    ) -> crate::Result<Self> {
        // Leftovers: removing the namespace removes the peer, and with it the pair.
        let _ = ip(&["netns", "del", namespace]).await;
        let _ = ip(&["link", "del", host_interface]).await;
        ip(&["netns", "add", namespace]).await?;
        // From here on, Drop cleans up whatever the next steps leave.
        let link = Self {
            host_interface: host_interface.to_string(),
            namespace: namespace.to_string(),
            machine_interface: machine_interface.to_string(),
        };
        ip(&["link", "add", host_interface, "type", "veth", "peer", "name", machine_interface]).await?;
        ip(&["link", "set", machine_interface, "netns", namespace]).await?;
        ip(&["addr", "add", &format!("{host_address}/{prefix}"), "dev", host_interface]).await?;
        ip(&["link", "set", host_interface, "up"]).await?;
        link.exec(&["ip", "link", "set", "lo", "up"]).await?;
        link.exec(&["ip", "link", "set", machine_interface, "up"]).await?;
        Ok(link)
    }

    /// The machine's NIC's MAC address.
    pub async fn machine_mac(&self) -> crate::Result<String> {
        let output = self.exec(&["cat", &format!("/sys/class/net/{}/address", self.machine_interface)]).await?;
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    }

    /// Runs `args` inside the namespace; an error unless it succeeds.
    pub async fn exec(&self, args: &[&str]) -> crate::Result<Output> {
        let mut all = vec!["netns", "exec", &self.namespace];
        all.extend_from_slice(args);
        ip(&all).await
    }

    /// Asks for a lease as `client` with `udhcpc`: up to `discovers` discovers a second apart,
    /// leaving the NIC unconfigured (the caller decides what to do with the answer); `None`
    /// when no server answered. `scratch` holds the client's script.
    pub async fn dhcp(&self, client: Client, discovers: u32, scratch: &Path) -> crate::Result<Option<Lease>> {
        let script = scratch.join("udhcpc.script");
        write_executable(&script, UDHCPC_SCRIPT)?;
        let script = script.to_string_lossy().into_owned();
        let discovers = discovers.to_string();
        let mut args = vec!["netns", "exec", &self.namespace, "busybox", "udhcpc", "-f", "-q", "-n", "-T", "1"];
        args.extend(["-t", &discovers, "-i", &self.machine_interface, "-s", &script]);
        args.extend(client.arguments());
        let output = Command::new("ip").args(&args).output().await.context("running udhcpc")?;
        let (printed, said) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        if !output.status.success() {
            // -n: it gives up, saying so, when no lease came.
            if said.contains("no lease") {
                return Ok(None);
            }
            bail!("udhcpc failed ({}): {printed}{said}", output.status);
        }
        parse_lease(&printed).map(Some).with_context(|| format!("udhcpc said: {said}"))
    }

    /// Gives the NIC the leased address, so that the machine can talk to the servers.
    pub async fn configure(&self, lease: &Lease) -> crate::Result<()> {
        let address = format!("{}/{}", lease.address, lease.prefix);
        self.exec(&["ip", "addr", "replace", &address, "dev", &self.machine_interface]).await.map(drop)
    }
}

impl Drop for ProvisioningLink {
    fn drop(&mut self) {
        // Synchronous: Drop may run outside the runtime, after a panic.
        for args in [vec!["netns", "del", &self.namespace], vec!["link", "del", &self.host_interface]] {
            let _ = std::process::Command::new("ip").args(&args).output();
        }
    }
}

/// `ip args`, its output; an error with what it printed unless it succeeds.
async fn ip(args: &[&str]) -> crate::Result<Output> {
    let output = Command::new("ip").args(args).output().await.context("running ip")?;
    if !output.status.success() {
        bail!(
            "ip {} failed ({}): {}{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(output)
}

fn write_executable(path: &Path, content: &str) -> crate::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, content).with_context(|| format!("writing {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// The `lease key=value` lines [`UDHCPC_SCRIPT`] prints.
fn parse_lease(printed: &str) -> crate::Result<Lease> {
    let fields: std::collections::BTreeMap<&str, &str> =
        printed.lines().filter_map(|l| l.strip_prefix("lease ")?.split_once('=')).collect();
    let field = |name: &str| fields.get(name).copied().with_context(|| format!("no {name} in the lease: {printed}"));
    Ok(Lease {
        address: field("ip")?.parse().context("the leased address")?,
        prefix: field("mask")?.parse().context("the prefix length")?,
        server: field("serverid")?.parse().context("the server identifier")?,
        next_server: field("siaddr")?.parse().context("the next server")?,
        boot_file: field("boot_file")?.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_read_from_the_lines_the_script_prints() {
        let printed = "lease ip=172.22.0.111\nlease mask=24\nlease serverid=172.22.0.1\n\
            lease siaddr=172.22.0.1\nlease boot_file=http://172.22.0.1:6180/boot.ipxe\n";
        let lease = parse_lease(printed).expect("a lease");
        assert_eq!(lease.address, Ipv4Addr::new(172, 22, 0, 111));
        assert_eq!((lease.prefix, lease.server), (24, Ipv4Addr::new(172, 22, 0, 1)));
        assert_eq!(lease.boot_file, "http://172.22.0.1:6180/boot.ipxe");
        assert!(parse_lease("lease ip=172.22.0.111\n").is_err(), "an answer without its server is no lease");
    }
}
