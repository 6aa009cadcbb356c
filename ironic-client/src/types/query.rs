//! Node list queries and pages.

use super::{Node, ProvisionState};

/// The page size asked for when none is given: Ironic's default
/// `[api]max_limit`. A server configured lower clamps it, which paging
/// handles by following Ironic's `next` link rather than counting items.
pub const DEFAULT_PAGE_SIZE: u32 = 1000;

/// Sort direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortDir {
    /// Ascending.
    Asc,
    /// Descending.
    Desc,
}

/// Filters, field selection and paging for `GET /v1/nodes`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeListQuery {
    /// Only nodes in this provision state.
    pub provision_state: Option<ProvisionState>,
    /// Only nodes in (or out of) maintenance.
    pub maintenance: Option<bool>,
    /// Only nodes with (or without) an instance.
    pub associated: Option<bool>,
    /// Only nodes of this hardware type.
    pub driver: Option<String>,
    /// Only nodes of this resource class.
    pub resource_class: Option<String>,
    /// Only nodes of this conductor group.
    pub conductor_group: Option<String>,
    /// Only nodes with this fault.
    pub fault: Option<String>,
    /// Only nodes of this owner.
    pub owner: Option<String>,
    /// Only nodes whose description contains this.
    pub description_contains: Option<String>,
    /// Only nodes of these shards (API 1.82); empty means any shard or none.
    pub shards: Vec<String>,
    /// The fields to return (`uuid` is always added); empty means every field.
    pub fields: Vec<String>,
    /// Page size; [`DEFAULT_PAGE_SIZE`] when `None`.
    pub limit: Option<u32>,
    /// Start after the node with this UUID.
    pub marker: Option<String>,
    /// Field to sort by.
    pub sort_key: Option<String>,
    /// Sort direction.
    pub sort_dir: Option<SortDir>,
}

impl NodeListQuery {
    /// Every node, every field.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only nodes in `state`.
    #[must_use]
    pub fn provision_state(mut self, state: ProvisionState) -> Self {
        self.provision_state = Some(state);
        self
    }

    /// Only nodes in (or out of) maintenance.
    #[must_use]
    pub fn maintenance(mut self, maintenance: bool) -> Self {
        self.maintenance = Some(maintenance);
        self
    }

    /// Only these fields.
    #[must_use]
    pub fn fields<S: AsRef<str>>(mut self, fields: &[S]) -> Self {
        self.fields = fields.iter().map(|f| f.as_ref().to_owned()).collect();
        self
    }

    /// The page size.
    #[must_use]
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Start after `marker`.
    #[must_use]
    pub fn marker(mut self, marker: impl Into<String>) -> Self {
        self.marker = Some(marker.into());
        self
    }

    /// The query string pairs.
    pub(crate) fn params(&self) -> Vec<(&'static str, String)> {
        let mut p = Vec::new();
        let mut push = |key, value: Option<String>| {
            if let Some(v) = value {
                p.push((key, v));
            }
        };
        push("provision_state", self.provision_state.as_ref().map(|s| s.to_string()));
        push("maintenance", self.maintenance.map(|b| b.to_string()));
        push("associated", self.associated.map(|b| b.to_string()));
        push("driver", self.driver.clone());
        push("resource_class", self.resource_class.clone());
        push("conductor_group", self.conductor_group.clone());
        push("fault", self.fault.clone());
        push("owner", self.owner.clone());
        push("description_contains", self.description_contains.clone());
        push("shard", (!self.shards.is_empty()).then(|| self.shards.join(",")));
        push("sort_key", self.sort_key.clone());
        push(
            "sort_dir",
            self.sort_dir.map(|d| match d {
                SortDir::Asc => "asc".to_owned(),
                SortDir::Desc => "desc".to_owned(),
            }),
        );
        push("marker", self.marker.clone());
        push("limit", Some(self.limit.unwrap_or(DEFAULT_PAGE_SIZE).to_string()));
        // `fields` and `detail` are mutually exclusive in Ironic; without
        // either it returns only six summary fields.
        if self.fields.is_empty() {
            push("detail", Some("True".to_owned()));
        } else {
            push("fields", Some(fields_with_uuid(&self.fields)));
        }
        p
    }
}

/// `fields` as Ironic's comma-separated list, with `uuid` first: the client
/// needs it as the paging marker and to identify every node it returns.
pub(crate) fn fields_with_uuid<S: AsRef<str>>(fields: &[S]) -> String {
    std::iter::once("uuid")
        .chain(fields.iter().map(AsRef::as_ref).filter(|f| *f != "uuid"))
        .collect::<Vec<_>>()
        .join(",")
}

/// One page of nodes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodePage {
    /// The nodes of this page.
    pub nodes: Vec<Node>,
    /// The marker of the next page; `None` on the last page.
    pub next_marker: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_pick_detail_or_fields() {
        let full = NodeListQuery::new().provision_state(ProvisionState::Available).params();
        assert!(full.contains(&("provision_state", "available".into())));
        assert!(full.contains(&("detail", "True".into())));
        assert!(full.contains(&("limit", "1000".into())));
        let some = NodeListQuery::new().fields(&["name", "uuid", "power_state"]).limit(5).marker("m").params();
        assert!(some.contains(&("fields", "uuid,name,power_state".into())));
        assert!(some.contains(&("limit", "5".into())));
        assert!(some.contains(&("marker", "m".into())));
        assert!(!some.iter().any(|(k, _)| *k == "detail"));
    }
}
