//! Addresses of the nodes Ironic may run on. With host networking and no fixed provisioning
//! IP, Ironic serves on its node's address, which the serving certificate must then cover.
//! Nodes, not pods: a rescheduled pod must not make the certificate (and the pods) change.

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// What listing the nodes gave: their InternalIP addresses, or why there are none.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct NodeAddresses {
    pub ips: Vec<IpAddr>,
    /// Set when the operator may not list nodes: the optional `NodeAddresses` role is not
    /// installed. Expected in a default install, so it is said once per generation as an
    /// Event (see `validate`), not logged as a warning on every reconcile.
    pub forbidden: bool,
}

/// The InternalIP addresses of the nodes matching `selector`, sorted. Best effort: without
/// permission to list nodes the certificate covers the Service names and the spec's
/// addresses only.
pub(crate) async fn addresses(client: &kube::Client, selector: Option<&BTreeMap<String, String>>) -> NodeAddresses {
    let nodes: Api<Node> = Api::all(client.clone());
    let mut params = ListParams::default();
    if let Some(selector) = selector.filter(|s| !s.is_empty()) {
        params = params.labels(&selector.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(","));
    }
    match nodes.list(&params).await {
        Ok(list) => NodeAddresses { ips: internal_addresses(&list.items), forbidden: false },
        Err(kube::Error::Api(status)) if status.code == 403 => {
            tracing::debug!("may not list nodes; the serving certificate will not cover node addresses");
            NodeAddresses { ips: Vec::new(), forbidden: true }
        }
        Err(err) => {
            // Transient: the next reconcile lists again.
            tracing::warn!(error = %err, "cannot list nodes; the serving certificate will not cover node addresses");
            NodeAddresses::default()
        }
    }
}

/// The InternalIP addresses of `nodes`, sorted and unique.
pub(crate) fn internal_addresses(nodes: &[Node]) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = nodes
        .iter()
        .flat_map(|n| n.status.iter().flat_map(|s| s.addresses.iter().flatten()))
        .filter(|a| a.type_ == "InternalIP")
        .filter_map(|a| a.address.parse().ok())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeAddress, NodeStatus};

    #[test]
    fn only_internal_addresses_count() {
        let node = |addresses: &[(&str, &str)]| Node {
            status: Some(NodeStatus {
                addresses: Some(
                    addresses
                        .iter()
                        .map(|(t, a)| NodeAddress { type_: t.to_string(), address: a.to_string() })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        };
        let nodes = [
            node(&[("InternalIP", "10.0.0.6"), ("Hostname", "n1"), ("ExternalIP", "203.0.113.1")]),
            node(&[("InternalIP", "10.0.0.5")]),
            node(&[("InternalIP", "10.0.0.6")]),
        ];
        let expected: Vec<IpAddr> = vec!["10.0.0.5".parse().expect("ip"), "10.0.0.6".parse().expect("ip")];
        assert_eq!(internal_addresses(&nodes), expected);
    }
}
