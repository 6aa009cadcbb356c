//! Completions and approvals recorded before a service's hash counted the content of what its
//! Job reads (`crds::nodesetservice::run_hash`): they carry the service's spec hash alone. Read
//! as they are, every service that reads a Secret or ConfigMap would run again after an
//! upgrade of the operator (or wait for a token, on a Manual NodeSet), though nobody asked. So
//! they are taken as having run with the content as it is now: the next content change reruns.
//!
//! Unambiguous: this operator records a service that reads anything by its run hash, never by
//! its spec hash, and a service that came to read something had its spec, and so that hash,
//! change.

use super::facts::Facts;
use crds::nodeset::{ApprovedService, CompletedService};
use crds::nodesetservice::{run_hash, service_hash};
use std::collections::BTreeMap;

/// Per listed service whose run hash is not its spec hash: (spec hash, run hash).
#[derive(Clone, Debug, Default)]
pub(super) struct Upgrade(BTreeMap<String, (String, String)>);

impl Upgrade {
    pub(super) fn of(facts: &Facts) -> Self {
        let hashes = facts.services.iter().map(|(name, service)| {
            (name.clone(), (service_hash(&service.spec), run_hash(&service.spec, &facts.sources)))
        });
        Upgrade(hashes.filter(|(_, (spec, run))| spec != run).collect())
    }

    /// The run hash for `hash` recorded for `service` by an operator before this one.
    fn run_hash(&self, service: &str, hash: Option<&String>) -> Option<String> {
        let (spec, run) = self.0.get(service)?;
        (hash == Some(spec)).then(|| run.clone())
    }

    /// `completed` with the spec hashes of services that read something upgraded.
    pub(super) fn completions(&self, completed: &[CompletedService]) -> Vec<CompletedService> {
        let upgrade = |c: &CompletedService| {
            let hash = self.run_hash(&c.name, c.service_hash.as_ref()).or_else(|| c.service_hash.clone());
            CompletedService { service_hash: hash, ..c.clone() }
        };
        completed.iter().map(upgrade).collect()
    }

    /// `approved` likewise.
    pub(super) fn approvals(&self, approved: &mut [ApprovedService]) {
        for entry in approved {
            if let Some(run) = self.run_hash(&entry.name, entry.service_hash.as_ref()) {
                entry.service_hash = Some(run);
            }
        }
    }
}
