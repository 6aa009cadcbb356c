//! Names and labels of everything the managed database consists of. One place, so that the
//! builders, the driver and the tests agree.

use crate::kit::names::{MANAGED_BY, MANAGED_BY_LABEL, bounded};
use crds::ironic::{IRONIC_LABEL, Ironic};
use kube::ResourceExt;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Selector label of the MariaDB pod; its value is the StatefulSet's name.
pub(crate) const DATABASE_LABEL: &str = "ironic.ferrometal.io/database";
/// On the Jobs and their pods: `backup` or `mariadb-upgrade`.
pub const JOB_LABEL: &str = "ironic.ferrometal.io/database-job";
/// Pod-template annotation: a digest of the TLS material MariaDB serves, so that a renewed
/// certificate restarts the server (MariaDB reads its certificate at start-up).
pub(crate) const TLS_HASH_ANNOTATION: &str = "ironic.ferrometal.io/database-tls-hash";
/// Pod-template annotation: a digest of the maintenance account's password hash, so that a new
/// password restarts the server, which applies it from its init file at start-up.
pub(crate) const ACCOUNT_HASH_ANNOTATION: &str = "ironic.ferrometal.io/database-account-hash";
/// The volume claim template of the data directory.
pub(crate) const DATA_VOLUME: &str = "data";

/// A StatefulSet's name must leave room for the `controller-revision-hash` label of its pods
/// (`<name>-<hash>`, at most 63 characters).
const MAX_STATEFUL_SET_NAME: usize = 52;
/// Kubernetes' limit for label values, which Job names become (`job-name`).
const MAX_JOB_NAME: usize = 63;

/// Names derived from one Ironic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    /// The Ironic's name.
    pub ironic: String,
    /// `<ironic>-mariadb`, the stem of every name.
    base: String,
}

impl Names {
    pub fn of(ironic: &Ironic) -> Self {
        Self::new(ironic.name_any())
    }

    pub fn new(ironic: impl Into<String>) -> Self {
        let ironic = ironic.into();
        Self { base: format!("{ironic}-mariadb"), ironic }
    }

    fn base(&self) -> String {
        self.base.clone()
    }

    /// The StatefulSet, `<ironic>-mariadb`.
    pub fn stateful_set(&self) -> String {
        bounded(&self.base(), MAX_STATEFUL_SET_NAME)
    }

    /// The headless Service; the same name as the StatefulSet.
    pub fn service(&self) -> String {
        self.stateful_set()
    }

    /// The one pod of the StatefulSet.
    pub fn pod(&self) -> String {
        format!("{}-0", self.stateful_set())
    }

    /// The data directory's claim, made by the StatefulSet controller from the template.
    pub fn data_claim(&self) -> String {
        format!("{DATA_VOLUME}-{}", self.pod())
    }

    /// Generated credentials of Ironic's database user (`username`, `password`).
    pub fn credentials(&self) -> String {
        format!("{}-credentials", self.base())
    }

    /// Generated credentials of `root` (`username`, `password`), used on the pod's socket only.
    pub fn admin(&self) -> String {
        format!("{}-admin", self.base())
    }

    /// Generated credentials of the maintenance account (`username`, `password`): the network
    /// account of the operator's checks and the Jobs.
    pub fn maintenance(&self) -> String {
        format!("{}-maintenance", self.base())
    }

    /// The SQL the server applies at every start (`init.sql`): the maintenance account, `root`
    /// kept to the socket.
    pub fn init(&self) -> String {
        format!("{}-init", self.base())
    }

    /// The operator-made CA (`ca.crt`, `ca.key`), when TLS is on without a user certificate.
    pub fn tls_ca(&self) -> String {
        format!("{}-tls-ca", self.base())
    }

    /// The serving certificate that CA signs (`tls.crt`, `tls.key`, `ca.crt`).
    pub fn tls_serving(&self) -> String {
        format!("{}-tls", self.base())
    }

    /// The CA clients trust (`tls.crt`, as ironic-image reads it, and `ca.crt`), without any
    /// private key: this is what Ironic's pods and the Jobs mount.
    pub fn client_ca(&self) -> String {
        format!("{}-ca", self.base())
    }

    /// The volume logical backups are written to.
    pub fn backup_claim(&self) -> String {
        format!("{}-backup", self.base())
    }

    /// The backup Job of one version change attempt.
    pub fn backup_job(&self, from_image: &str, to_image: &str, attempt: i32) -> String {
        self.job("backup", from_image, to_image, attempt)
    }

    /// The `mariadb-upgrade` Job of one version change attempt.
    pub fn upgrade_job(&self, from_image: &str, to_image: &str, attempt: i32) -> String {
        self.job("upgrade", from_image, to_image, attempt)
    }

    /// `<base>-<kind>-<digest>`: images are too long and too rich in characters for a name, so
    /// a digest of the change and the attempt tells the Jobs apart.
    fn job(&self, kind: &str, from_image: &str, to_image: &str, attempt: i32) -> String {
        let digest = hex::encode(Sha256::digest(format!("{from_image}\0{to_image}\0{attempt}").as_bytes()));
        let suffix = format!("-{kind}-{}", &digest[..10]);
        let mut base = self.base();
        base.truncate(MAX_JOB_NAME.saturating_sub(suffix.len()));
        while base.ends_with(['-', '.']) {
            base.pop();
        }
        format!("{base}{suffix}")
    }

    /// The host Ironic and the Jobs connect to: the Service's fully qualified name.
    pub fn host(&self, namespace: &str, cluster_domain: &str) -> String {
        let domain = cluster_domain.trim_end_matches('.');
        if domain.is_empty() {
            format!("{}.{namespace}.svc", self.service())
        } else {
            format!("{}.{namespace}.svc.{domain}", self.service())
        }
    }

    /// The pod's selector labels.
    pub fn selector(&self) -> BTreeMap<String, String> {
        [(DATABASE_LABEL.to_string(), self.stateful_set())].into()
    }

    /// The Ironic the database belongs to, and its manager: on every object, the claims and
    /// Jobs included.
    pub fn owner_labels(&self) -> BTreeMap<String, String> {
        [(IRONIC_LABEL, self.ironic.as_str()), (MANAGED_BY_LABEL, MANAGED_BY)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Labels of every object but the Jobs and claims: the owner labels and the selector.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.owner_labels();
        labels.extend(self.selector());
        labels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_derive_from_the_ironic() {
        let n = Names::new("ironic");
        assert_eq!(n.stateful_set(), "ironic-mariadb");
        assert_eq!(n.service(), "ironic-mariadb");
        assert_eq!(n.pod(), "ironic-mariadb-0");
        assert_eq!(n.data_claim(), "data-ironic-mariadb-0");
        assert_eq!(n.credentials(), "ironic-mariadb-credentials");
        assert_eq!(n.admin(), "ironic-mariadb-admin");
        assert_eq!(n.maintenance(), "ironic-mariadb-maintenance");
        assert_eq!(n.init(), "ironic-mariadb-init");
        assert_eq!(n.client_ca(), "ironic-mariadb-ca");
        assert_eq!(n.backup_claim(), "ironic-mariadb-backup");
        assert_eq!(n.host("metal3", "cluster.local"), "ironic-mariadb.metal3.svc.cluster.local");
        assert_eq!(n.host("metal3", ""), "ironic-mariadb.metal3.svc");
    }

    #[test]
    fn long_names_stay_within_kubernetes_limits() {
        let n = Names::new("i".repeat(120));
        assert_eq!(n.stateful_set().len(), MAX_STATEFUL_SET_NAME);
        assert_eq!(n.stateful_set(), Names::new("i".repeat(120)).stateful_set());
        let job = n.upgrade_job("mariadb:10.11", "mariadb:11.4", 1);
        assert!(job.len() <= MAX_JOB_NAME, "{job}");
        assert!(job.contains("-upgrade-"));
    }

    #[test]
    fn job_names_differ_per_change_and_attempt_and_are_stable() {
        let n = Names::new("ironic");
        let first = n.upgrade_job("mariadb:10.11", "mariadb:11.4", 1);
        assert_eq!(first, n.upgrade_job("mariadb:10.11", "mariadb:11.4", 1));
        assert_ne!(first, n.upgrade_job("mariadb:10.11", "mariadb:11.4", 2));
        assert_ne!(first, n.upgrade_job("mariadb:11.4", "mariadb:11.8", 1));
        assert_ne!(first, n.backup_job("mariadb:10.11", "mariadb:11.4", 1));
        assert!(first.starts_with("ironic-mariadb-upgrade-"));
    }
}
