//! Mode Auto: a CA the operator makes, a serving certificate it signs, and the CA's renewal
//! with an overlap ([`crate::pki::rotation`]).
//!
//! Clients trust the published bundle (the `<name>-ca-bundle` ConfigMap; the pods' `ca.crt`,
//! which Ironic gives the ramdisk and its JSON RPC clients). A DaemonSet's pods serve what the
//! serving Secret held when they started, and any change to it rolls them; the one pod of a
//! Deployment reloads it in place ([`super::reloaded_in_place`]). So a step of the rotation
//! has reached everyone once the workload runs, every pod of it, the template of what the
//! Secrets hold now (its content hash), and the one pod that reloads presents the stored
//! certificate; every step waits for that on top of the settle time, which also covers the
//! kubelet's refresh of the mounted `ca.crt`. A crash between writing the Secrets and the
//! pods catching up is seen as a step not reached. The CA Secret keeps the rotation's state
//! (the next and the retired CA); nothing of it is in the spec or needed from the status.

use super::{CA_CERT_KEY, SubjectAltNames};
use crate::ironic::hash;
use crate::ironic::linked::{Source, SourceKind};
use crate::ironic::names::{CONTENT_HASH_ANNOTATION, Names};
use crate::kit::{KubeError, Ledger, Progress, observe};
use crate::pki::certificate::{self, CertifiedPem, inspect};
use crate::pki::rotation::{self, Bundle, Issuer, Plan, Reached, Schedule};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use std::time::{Duration, SystemTime};

/// How the CA is renewed; the operator's settings ([`crate::ironic::Config`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Renewal {
    /// How far into its life the CA gets a successor (two thirds).
    pub at: f64,
    /// How long each step waits, at least, after the one before (beside the pods' rollout):
    /// time for clients to re-read the published bundle.
    pub settle: Duration,
}

impl Default for Renewal {
    fn default() -> Self {
        Self { at: 2.0 / 3.0, settle: Duration::from_secs(600) }
    }
}

impl Renewal {
    fn schedule(self) -> Schedule {
        // `pki::new_ca` and `issue_serving` start certificates five minutes early.
        Schedule { renewal: self.at, settle: self.settle, backdate: Duration::from_secs(300) }
    }
}

/// The workload as read: the content hash of its pod template, whether every pod runs that
/// template, and, for one pod that reloads its certificate in place, what its API presents.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rollout {
    pub content_hash: Option<String>,
    pub done: bool,
    /// The pods reload a new certificate without rolling ([`super::reloaded_in_place`]).
    pub reloads: bool,
    /// The leaf certificate (DER) the API presented, looked at while a renewal is under way.
    pub presented: Option<Vec<u8>>,
}

impl Rollout {
    pub(crate) fn of_deployment(deployment: &Deployment) -> Self {
        let template = deployment.spec.as_ref().map(|s| &s.template);
        Self { reloads: super::reloaded_in_place(false), ..Self::of(template, observe::deployment_rollout(deployment)) }
    }

    pub(crate) fn of_daemonset(daemonset: &DaemonSet) -> Self {
        let template = daemonset.spec.as_ref().map(|s| &s.template);
        Self { reloads: super::reloaded_in_place(true), ..Self::of(template, observe::daemonset_rollout(daemonset)) }
    }

    fn of(template: Option<&PodTemplateSpec>, progress: Progress) -> Self {
        let annotations = template.and_then(|t| t.metadata.as_ref()).and_then(|m| m.annotations.as_ref());
        Self {
            content_hash: annotations.and_then(|a| a.get(CONTENT_HASH_ANNOTATION)).cloned(),
            done: progress == Progress::Done,
            ..Self::default()
        }
    }

    /// Whether every pod runs the template whose content hash is `content_hash`.
    pub(crate) fn serves(&self, content_hash: &str) -> bool {
        self.done && self.content_hash.as_deref() == Some(content_hash)
    }
}

/// Reads the workload of the Ironic `names` names: its DaemonSet with `high_availability`,
/// else its Deployment.
pub(crate) async fn read_rollout(
    ledger: &Ledger,
    names: &Names,
    high_availability: bool,
) -> Result<Option<Rollout>, KubeError> {
    let name = names.workload();
    Ok(if high_availability {
        ledger.get::<DaemonSet>(&name).await?.as_ref().map(Rollout::of_daemonset)
    } else {
        ledger.get::<Deployment>(&name).await?.as_ref().map(Rollout::of_deployment)
    })
}

/// The Ironic's certificates: its CA (`common_name`, `ca_days`) and serving certificates
/// for `sans` (`cert_days`).
pub(crate) struct Auto<'a> {
    pub common_name: String,
    pub ca_days: i64,
    pub cert_days: i64,
    pub sans: &'a SubjectAltNames,
}

impl Issuer for Auto<'_> {
    type Error = certificate::Error;

    fn ca(&self, now: SystemTime) -> Result<CertifiedPem, Self::Error> {
        certificate::new_ca(&self.common_name, self.ca_days, rotation::unix(now))
    }

    fn serving(&self, ca: &CertifiedPem, now: SystemTime) -> Result<CertifiedPem, Self::Error> {
        certificate::issue_serving(ca, self.sans, self.cert_days, rotation::unix(now))
    }

    fn serving_due(&self, serving: &CertifiedPem, ca: &CertifiedPem, now: SystemTime) -> bool {
        inspect(&ca.cert)
            .is_none_or(|ca| certificate::serving_problem(&ca, Some(serving), self.sans, rotation::unix(now)).is_some())
    }
}

/// What the Auto certificates become in one reconcile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decided {
    pub bundle: Bundle,
    /// Why a serving certificate was stored just now.
    pub issued: Option<&'static str>,
    /// The step of the CA's renewal taken just now.
    pub step: Option<&'static str>,
}

/// The stored CA Secret's data and serving pair as a bundle; `None` without a readable CA.
pub(crate) fn stored(ca: Option<&Source>, serving: Option<&Source>) -> Option<Bundle> {
    let pair =
        serving.and_then(|s| Some(CertifiedPem { cert: s.text("tls.crt")?.into(), key: s.text("tls.key")?.into() }));
    // A missing serving certificate reads as an unusable one: the plan re-signs it.
    let serving = pair.unwrap_or(CertifiedPem { cert: String::new(), key: String::new() });
    rotation::from_data(|key| ca?.text(key).map(str::to_string), serving)
}

/// Moves the stored bundle along at `now`; `served` tells that every pod runs what the
/// Secrets hold now.
pub(crate) fn decide(
    stored: Option<&Bundle>,
    issuer: &Auto<'_>,
    renewal: Renewal,
    served: bool,
    now: SystemTime,
) -> Result<Decided, certificate::Error> {
    // Both reach everyone the same way: the ConfigMap is written before the workload, and the
    // pods roll for, or reload, every change of the serving Secret (which carries the bundle
    // too).
    let reached = Reached { next_trusted: served, serving: served };
    let plan = rotation::plan(stored, issuer, &renewal.schedule(), now, reached)?;
    let bundle = match (plan, stored) {
        (Plan::Write(bundle), _) => bundle,
        (Plan::Keep, Some(old)) => return Ok(Decided { bundle: old.clone(), issued: None, step: None }),
        // Never planned (nothing stored is always written), yet total.
        (Plan::Keep, None) => rotation::fresh(issuer, now)?,
    };
    let issued = match stored {
        None => Some("there is no CA yet"),
        Some(old) if old.serving != bundle.serving => Some(why_issued(old, &bundle, issuer, now)),
        Some(_) => None,
    };
    let step = stored.and_then(|old| step(old, &bundle));
    Ok(Decided { bundle, issued, step })
}

/// Why the serving certificate of `new` replaced that of `old`.
fn why_issued(old: &Bundle, new: &Bundle, issuer: &Auto<'_>, now: SystemTime) -> &'static str {
    if old.ca != new.ca {
        return if old.next.as_ref() == Some(&new.ca) {
            "the CA is renewed: the next CA signs"
        } else {
            "the CA expired or is unusable: a new CA replaced it"
        };
    }
    let ca = inspect(&old.ca.cert);
    ca.and_then(|ca| certificate::serving_problem(&ca, Some(&old.serving), issuer.sans, rotation::unix(now)))
        .unwrap_or("the serving certificate was unusable")
}

/// The step of the CA's renewal between `old` and `new`, if one was taken.
fn step(old: &Bundle, new: &Bundle) -> Option<&'static str> {
    match (&old.next, &new.next, &old.retired, &new.retired) {
        (None, Some(_), _, _) => Some("made the next CA and published it beside the current one"),
        (Some(_), None, _, Some(_)) => Some("the next CA signs the serving certificate; the old one stays published"),
        (_, _, Some(_), None) => Some("every pod serves the new CA's certificate: the old CA left the bundle"),
        _ => None,
    }
}

/// The serving Secret's content: the certificate, its key, and every CA to trust (clients in
/// the pods, the ramdisk and JSON RPC, may meet a pod serving from any of them).
pub(crate) fn serving_source(name: &str, bundle: &Bundle) -> Source {
    let trusted = bundle.trusted();
    let data = [("tls.crt", &bundle.serving.cert), ("tls.key", &bundle.serving.key), (CA_CERT_KEY, &trusted)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect();
    Source { kind: SourceKind::Secret, name: name.to_string(), data }
}

/// Whether every pod runs what the Secrets hold now. The workload's template carries the
/// content hash of `others` (everything else the pods mount) and, when the pods roll for a new
/// certificate, of the stored serving Secret too; its rollout is done; and a pod that reloads
/// in place presents the stored certificate. Only the keys the operator writes count: a key
/// someone else added is not mounted differently and must not hold the rotation up.
pub(crate) fn served(rollout: Option<&Rollout>, stored_serving: Option<&Source>, others: &[&Source]) -> bool {
    let (Some(rollout), Some(serving)) = (rollout, stored_serving) else { return false };
    if rollout.reloads {
        let stored = serving.text("tls.crt").and_then(super::presented::leaf);
        return rollout.serves(&hash::content_hash(others.iter().copied()))
            && stored.is_some()
            && rollout.presented == stored;
    }
    let mut ours = serving.clone();
    ours.data.retain(|key, _| ["tls.crt", "tls.key", CA_CERT_KEY].contains(&key.as_str()));
    rollout.serves(&hash::content_hash(others.iter().copied().chain([&ours])))
}

/// Whether a step of the CA's renewal waits for the one pod to reload the stored certificate,
/// which no watch event tells: the controller then looks again on its progress interval.
pub(crate) fn awaits_reload(rollout: Option<&Rollout>, bundle: &Bundle, served: bool) -> bool {
    let under_way = bundle.next.is_some() || bundle.retired.is_some();
    under_way && !served && rollout.is_some_and(|r| r.reloads)
}

/// When the operator next renews something, Unix seconds after `now`: the CA's renewal point,
/// the serving certificate's (when its CA could give it longer), or the next step of a
/// renewal under way; the CA's renewal point when all of them passed (a step waits for the
/// pods' rollout, which the controller watches).
pub(crate) fn renewal_at(bundle: &Bundle, renewal: Renewal, now: i64) -> Option<i64> {
    let schedule = renewal.schedule();
    let ca_point = rotation::renewal_at(bundle, &schedule).map(rotation::unix);
    let (serving, ca) = (inspect(&bundle.serving.cert), inspect(&bundle.ca.cert));
    let serving_point = serving.zip(ca).filter(|(s, c)| s.not_after < c.not_after).map(|(s, _)| s.renewal_at());
    let step = rotation::step_at(bundle, &schedule).map(rotation::unix);
    [ca_point, serving_point, step].into_iter().flatten().filter(|at| *at > now).min().or(ca_point)
}

#[cfg(test)]
#[path = "auto_tests.rs"]
mod tests;
