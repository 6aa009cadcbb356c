//! The Ironic pod template, with `spec.overrides` applied last.

use super::{containers, volumes};
use crate::ironic::names::{self, CONTENT_HASH_ANNOTATION};
use crate::ironic::resolve::Resolved;
use crds::ironic::Overrides;
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use kube::api::ObjectMeta;
use std::collections::BTreeMap;

pub(crate) fn template(resolved: &Resolved) -> PodTemplateSpec {
    let settings = &resolved.settings;
    let pod_volumes = volumes::pod(resolved);

    let mut containers = vec![
        containers::ironic(resolved, &pod_volumes),
        containers::httpd(resolved, &pod_volumes),
        containers::ramdisk_logs(resolved, &pod_volumes),
    ];
    // DHCP is not supported with highAvailability: the resolved network has none then.
    if let Some(dhcp) = &resolved.network.dhcp {
        containers.push(containers::dnsmasq(resolved, dhcp));
    }
    if let Some(image) = &resolved.version.keepalived_image {
        containers.push(containers::keepalived(resolved, image));
    }
    if let Some(exporter) = &settings.exporter {
        containers.push(containers::prometheus_exporter(resolved, &pod_volumes, exporter.bind_address()));
    }
    let init_containers: Vec<Container> = resolved
        .version
        .downloader_image
        .iter()
        .map(|image| containers::ramdisk_downloader(resolved, image, &pod_volumes))
        .collect();

    let mut labels = names::common_labels(&resolved.names.ironic, &resolved.version.version.to_string());
    labels.extend(names::selector(&resolved.names));
    let annotations: BTreeMap<String, String> =
        [(CONTENT_HASH_ANNOTATION.to_string(), resolved.content_hash.clone())].into();
    let host_network = resolved.network.host_network;
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta { labels: Some(labels), annotations: Some(annotations), ..Default::default() }),
        spec: Some(PodSpec {
            containers,
            init_containers: (!init_containers.is_empty()).then_some(init_containers),
            volumes: Some(pod_volumes.volumes),
            // Hosts on the provisioning network reach Ironic, httpd and dnsmasq directly.
            host_network: host_network.then_some(true),
            dns_policy: host_network.then(|| "ClusterFirstWithHostNet".to_string()),
            node_selector: settings.node_selector.clone(),
            automount_service_account_token: Some(false),
            ..Default::default()
        }),
    };
    apply_overrides(template, settings.overrides.as_ref())
}

/// Applies `overrides`: labels and annotations (never replacing the operator's own),
/// containers and init containers (replacing the generated one of the same name, or
/// appended), volumes (appended) and tolerations.
pub(crate) fn apply_overrides(mut template: PodTemplateSpec, overrides: Option<&Overrides>) -> PodTemplateSpec {
    let Some(overrides) = overrides else {
        return template;
    };
    let metadata = template.metadata.get_or_insert_with(Default::default);
    merge_under(&mut metadata.labels, overrides.labels.as_ref());
    merge_under(&mut metadata.annotations, overrides.annotations.as_ref());
    let spec = template.spec.get_or_insert_with(Default::default);
    for extra in overrides.containers.iter().flatten() {
        replace_or_append(&mut spec.containers, extra);
    }
    if let Some(extras) = overrides.init_containers.as_ref().filter(|c| !c.is_empty()) {
        let init = spec.init_containers.get_or_insert_with(Vec::new);
        for extra in extras {
            replace_or_append(init, extra);
        }
    }
    if let Some(extra) = overrides.volumes.as_ref().filter(|v| !v.is_empty()) {
        spec.volumes.get_or_insert_with(Vec::new).extend(extra.iter().cloned());
    }
    if let Some(tolerations) = overrides.tolerations.as_ref().filter(|t| !t.is_empty()) {
        spec.tolerations = Some(tolerations.clone());
    }
    template
}

/// Adds `extra` entries whose keys `map` does not have.
pub(crate) fn merge_under(map: &mut Option<BTreeMap<String, String>>, extra: Option<&BTreeMap<String, String>>) {
    let Some(extra) = extra.filter(|e| !e.is_empty()) else {
        return;
    };
    let map = map.get_or_insert_with(BTreeMap::new);
    for (key, value) in extra {
        map.entry(key.clone()).or_insert_with(|| value.clone());
    }
}

fn replace_or_append(list: &mut Vec<Container>, extra: &Container) {
    match list.iter_mut().find(|c| c.name == extra.name) {
        Some(existing) => *existing = extra.clone(),
        None => list.push(extra.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Toleration;

    #[test]
    fn overrides_replace_by_name_append_the_rest_and_never_replace_our_labels() {
        let template = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some([("ironic.metal3.io/app".to_string(), "ironic-service".to_string())].into()),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container { name: "httpd".into(), image: Some("a".into()), ..Default::default() }],
                ..Default::default()
            }),
        };
        let overrides = Overrides {
            labels: Some(
                [("ironic.metal3.io/app".to_string(), "hijack".to_string()), ("team".to_string(), "metal".to_string())]
                    .into(),
            ),
            containers: Some(vec![
                Container { name: "httpd".into(), image: Some("b".into()), ..Default::default() },
                Container { name: "sidecar".into(), ..Default::default() },
            ]),
            tolerations: Some(vec![Toleration { operator: Some("Exists".into()), ..Default::default() }]),
            ..Default::default()
        };
        let out = apply_overrides(template, Some(&overrides));
        let labels = out.metadata.and_then(|m| m.labels).expect("labels");
        assert_eq!(labels["ironic.metal3.io/app"], "ironic-service");
        assert_eq!(labels["team"], "metal");
        let spec = out.spec.expect("spec");
        let names: Vec<_> = spec.containers.iter().map(|c| (c.name.as_str(), c.image.as_deref())).collect();
        assert_eq!(names, [("httpd", Some("b")), ("sidecar", None)]);
        assert_eq!(spec.tolerations.map(|t| t.len()), Some(1));
    }
}
