//! The wanted BIOS settings of a `HostFirmwareSettings` against the `FirmwareSchema` its status
//! names, read from the apiserver in the object's own namespace (never another: the status is
//! as hostile as any input). A schema that cannot be read (not there yet, a namespace this
//! operator does not serve, the apiserver unavailable) lets the object in: the firmware
//! controller checks every value against what Ironic reads, and says so as a condition.

use super::envelope::{Answer, SchemaCheck};
use crds::firmware::{FirmwareSchema, validate_host_firmware_settings};
use crds::validation::summarize;
use kube::Client;
use kube::api::Api;

/// The answer, once the wanted settings follow their schema.
pub(super) async fn checked(client: &Client, watched: &[String], answer: Answer) -> Answer {
    let Some(check) = answer.schema.clone() else { return answer };
    if !answer.response.allowed || !super::authorize::concerns(watched, &check.namespace) {
        return answer;
    }
    let api: Api<FirmwareSchema> = Api::namespaced(client.clone(), &check.namespace);
    let schema = match api.get_opt(&check.name).await {
        Ok(Some(schema)) => schema,
        Ok(None) => return answer,
        Err(err) => {
            tracing::warn!(error = %err, schema = %check.name, "cannot read a FirmwareSchema; the controller checks the settings");
            return answer;
        }
    };
    match refusal(&check, &schema) {
        Some(message) => Answer::deny(&answer.response.uid, message),
        None => answer,
    }
}

/// Why the wanted settings cannot be set on a host of this schema, if they cannot.
fn refusal(check: &SchemaCheck, schema: &FirmwareSchema) -> Option<String> {
    let errors = validate_host_firmware_settings(&check.spec, &check.current, Some(&schema.spec.schema));
    (!errors.is_empty()).then(|| summarize(&errors))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::firmware::{FirmwareSchemaSpec, HostFirmwareSettingsSpec, SettingSchema};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    use std::collections::BTreeMap;

    fn check(value: IntOrString) -> SchemaCheck {
        SchemaCheck {
            namespace: "metal3".into(),
            name: "schema-1".into(),
            spec: HostFirmwareSettingsSpec { settings: BTreeMap::from([("NumCores".to_string(), value)]) },
            current: BTreeMap::from([("NumCores".to_string(), "8".to_string())]),
        }
    }

    fn schema() -> FirmwareSchema {
        let cores = SettingSchema {
            attribute_type: Some("Integer".into()),
            lower_bound: Some(1),
            upper_bound: Some(16),
            ..SettingSchema::default()
        };
        FirmwareSchema::new(
            "schema-1",
            FirmwareSchemaSpec { schema: BTreeMap::from([("NumCores".to_string(), cores)]), ..Default::default() },
        )
    }

    #[test]
    fn a_value_out_of_the_schemas_bounds_is_refused_with_the_field_and_the_bounds() {
        let message = refusal(&check(IntOrString::Int(32)), &schema()).expect("refused");
        assert!(message.contains("spec.settings[NumCores]") && message.contains("from 1 to 16"), "{message}");
    }

    #[test]
    fn a_value_within_them_or_the_hosts_own_is_allowed() {
        assert_eq!(refusal(&check(IntOrString::Int(12)), &schema()), None);
        assert_eq!(refusal(&check(IntOrString::String("8".into())), &schema()), None);
    }
}
