//! Following Ironic's `limit`/`marker` pagination.
//!
//! A page ends the collection when Ironic sends no `next` link. Counting
//! items against the limit would stop early on a server whose
//! `[api]max_limit` is below the limit asked for, since Ironic silently
//! clamps it.

use reqwest::Method;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::client::IronicClient;
use crate::error::Result;
use crate::metrics::Operation;
use crate::transport::Request;
use crate::types::{Node, NodeStatusSummary, Port};

/// Something a page can continue after.
pub(crate) trait Identified {
    fn uuid(&self) -> &str;
}

macro_rules! identified {
    ($($t:ty),*) => {$(
        impl Identified for $t {
            fn uuid(&self) -> &str {
                &self.uuid
            }
        }
    )*};
}
identified!(Node, NodeStatusSummary, Port);

#[derive(Deserialize)]
#[serde(bound = "T: DeserializeOwned")]
struct Collection<T> {
    #[serde(alias = "nodes", alias = "ports")]
    items: Vec<T>,
    #[serde(default)]
    next: Option<String>,
}

impl IronicClient {
    /// One page; the marker of the next one, if there is one.
    pub(crate) async fn fetch_page<T: DeserializeOwned + Identified>(
        &self,
        op: Operation,
        collection: &str,
        params: Vec<(&'static str, String)>,
    ) -> Result<(Vec<T>, Option<String>)> {
        let request = Request::new(op, Method::GET, &[collection]).query(params);
        let page: Collection<T> = self.send_json(request).await?;
        let next = match (&page.next, page.items.last()) {
            (Some(_), Some(last)) => Some(last.uuid().to_owned()),
            _ => None,
        };
        Ok((page.items, next))
    }

    /// Every page, starting after `marker` (if any) in `params`.
    pub(crate) async fn fetch_all<T: DeserializeOwned + Identified>(
        &self,
        op: Operation,
        collection: &str,
        mut params: Vec<(&'static str, String)>,
    ) -> Result<Vec<T>> {
        let mut all = Vec::new();
        loop {
            let (items, next) = self.fetch_page::<T>(op, collection, params.clone()).await?;
            all.extend(items);
            let Some(marker) = next else {
                return Ok(all);
            };
            params.retain(|(k, _)| *k != "marker");
            params.push(("marker", marker));
        }
    }
}
