//! The headless Service: the StatefulSet's governing Service, and the stable name Ironic and
//! the Jobs connect to. Headless, so the name resolves straight to the ready pod.

use super::Inputs;
use super::stateful_set::port_name;
use crate::database::connection::MARIADB_PORT;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};

pub(crate) fn render(inputs: &Inputs<'_>) -> Service {
    let names = inputs.names;
    Service {
        metadata: inputs.meta(names.service(), names.labels()),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_string()),
            selector: Some(names.selector()),
            ports: Some(vec![ServicePort {
                name: Some("mysql".to_string()),
                port: i32::from(MARIADB_PORT),
                target_port: Some(port_name()),
                protocol: Some("TCP".to_string()),
                ..Default::default()
            }]),
            // Only a ready server is a target: never one still recovering.
            publish_not_ready_addresses: Some(false),
            ..Default::default()
        }),
        ..Default::default()
    }
}
