//! Which namespaces' BareMetalHosts a NodeSet may claim: its own, and host pools an operator
//! admin opened to it.
//!
//! A NodeSet claims, provisions and writes first-boot references in `bmhNamespace`. Were that
//! any namespace, a tenant who may create NodeSets in `team-a` could claim `team-b`'s free
//! machines and have `team-b`'s Secrets written into config drives it controls. So a NodeSet
//! acts in its own namespace only, unless the operator's admin (not the tenant, not the pool's
//! users) lists the pair in `--nodeset-host-pools` (`team-a=pool,team-b=pool`). The webhook and
//! the controller apply the same list.

use crate::FieldError;
use crate::validation::is_dns1123_label;
use std::collections::BTreeSet;
use std::str::FromStr;

/// The admin's list of `(NodeSet namespace, BareMetalHost namespace)` pairs allowed besides a
/// NodeSet's own namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostPools {
    pairs: BTreeSet<(String, String)>,
}

impl HostPools {
    /// True when a NodeSet in `nodeset_namespace` may claim BareMetalHosts of `bmh_namespace`.
    pub fn allows(&self, nodeset_namespace: &str, bmh_namespace: &str) -> bool {
        nodeset_namespace == bmh_namespace
            || self.pairs.contains(&(nodeset_namespace.to_string(), bmh_namespace.to_string()))
    }

    /// The refusal of `bmh_namespace` for a NodeSet of `nodeset_namespace`, `None` when allowed.
    pub fn check(&self, nodeset_namespace: &str, bmh_namespace: &str) -> Option<FieldError> {
        (!self.allows(nodeset_namespace, bmh_namespace)).then(|| {
            FieldError::new(
                "spec.baremetalSetTemplate.bmhNamespace",
                format!(
                    "a NodeSet in {nodeset_namespace} may claim BareMetalHosts of its own namespace only; \
                     {bmh_namespace} is not a host pool opened to {nodeset_namespace} (an operator admin opens one \
                     with --nodeset-host-pools {nodeset_namespace}={bmh_namespace})"
                ),
            )
        })
    }
}

impl FromStr for HostPools {
    type Err = String;

    /// `tenant=pool` pairs separated by commas; empty for none.
    fn from_str(text: &str) -> Result<Self, String> {
        let mut pairs = BTreeSet::new();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (tenant, pool) = item
                .split_once('=')
                .map(|(t, p)| (t.trim(), p.trim()))
                .filter(|(t, p)| is_dns1123_label(t) && is_dns1123_label(p))
                .ok_or_else(|| format!("{item:?}: a host pool is NODESET_NAMESPACE=BMH_NAMESPACE"))?;
            pairs.insert((tenant.to_string(), pool.to_string()));
        }
        Ok(Self { pairs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nodeset_may_always_claim_in_its_own_namespace_and_nowhere_else_by_default() {
        let none = HostPools::default();
        assert!(none.allows("team-a", "team-a"));
        assert!(!none.allows("team-a", "team-b"));
        let refusal = none.check("team-a", "team-b").expect("refused");
        assert_eq!(refusal.path, "spec.baremetalSetTemplate.bmhNamespace");
        assert!(refusal.message.contains("--nodeset-host-pools team-a=team-b"), "{}", refusal.message);
    }

    #[test]
    fn an_opened_pool_admits_exactly_the_listed_tenant() {
        let pools: HostPools = " team-a=pool , team-c=pool".parse().expect("pools");
        assert!(pools.allows("team-a", "pool"));
        assert!(pools.allows("team-c", "pool"));
        assert!(!pools.allows("team-b", "pool"), "another tenant");
        assert!(!pools.allows("pool", "team-a"), "the pair is one way");
    }

    #[test]
    fn malformed_pools_are_refused_with_the_form_expected() {
        for bad in ["team-a", "team-a=", "=pool", "Team-A=pool", "a=b=c", "a=-b"] {
            let err = bad.parse::<HostPools>().expect_err(bad);
            assert!(err.contains("NODESET_NAMESPACE=BMH_NAMESPACE"), "{bad}: {err}");
        }
        assert_eq!("".parse::<HostPools>(), Ok(HostPools::default()));
    }
}
