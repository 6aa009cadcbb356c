//! Following Ironic's `limit`/`marker` pagination.
//!
//! A page ends the collection when Ironic sends no `next` link. Counting
//! items against the limit would stop early on a server whose
//! `[api]max_limit` is below the limit asked for, since Ironic silently
//! clamps it.
//!
//! Following `next` trusts the server to end the collection, so the loop is
//! bounded: a marker seen before (a server, proxy or cache that answers the
//! same page again) or more than [`MAX_PAGES`] pages ends it with
//! [`Error::Paging`] instead of looping, and growing, forever.

use reqwest::Method;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use std::collections::HashSet;

use crate::client::IronicClient;
use crate::error::{Error, PagingFault, Result};
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
        params: Vec<(&'static str, String)>,
    ) -> Result<Vec<T>> {
        self.fetch_bounded(op, collection, params, MAX_PAGES).await
    }

    /// [`Self::fetch_all`], giving up after `max_pages` pages.
    async fn fetch_bounded<T: DeserializeOwned + Identified>(
        &self,
        op: Operation,
        collection: &str,
        mut params: Vec<(&'static str, String)>,
        max_pages: usize,
    ) -> Result<Vec<T>> {
        let mut all = Vec::new();
        let mut seen = HashSet::new();
        if let Some((_, start)) = params.iter().find(|(k, _)| *k == "marker") {
            seen.insert(start.clone());
        }
        for page in 1..=max_pages {
            let (items, next) = self.fetch_page::<T>(op, collection, params.clone()).await?;
            all.extend(items);
            let Some(marker) = next else {
                return Ok(all);
            };
            if !seen.insert(marker.clone()) {
                return Err(Error::Paging { operation: op, fault: PagingFault::RepeatedMarker { marker, page } });
            }
            params.retain(|(k, _)| *k != "marker");
            params.push(("marker", marker));
        }
        Err(Error::Paging { operation: op, fault: PagingFault::TooManyPages { limit: max_pages } })
    }
}

/// The most pages one listing follows: ten million nodes at Ironic's default
/// `[api]max_limit` of 1000, ten thousand on a server clamped to one per page.
/// No real collection comes near it; a server that never stops does.
pub(crate) const MAX_PAGES: usize = 10_000;

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;
    use crate::types::NodeListQuery;

    /// The recorded first page of a real Ironic 39: one node and a `next` link.
    const RECORDED_PAGE: &str = include_str!("../tests/fixtures/nodes_status_page_1.json");

    /// A fake Ironic: `GET /v1` answers with the version range, every other
    /// request with `page(n)` for the n-th listing request (from 0).
    async fn fake_ironic(page: impl Fn(usize) -> String + Send + Sync + 'static) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let pages = Arc::new(AtomicUsize::new(0));
        let (counter, page) = (pages.clone(), Arc::new(page));
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (counter, page) = (counter.clone(), page.clone());
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16384];
                    loop {
                        let mut read = 0;
                        while !buf[..read].windows(4).any(|w| w == b"\r\n\r\n") {
                            match socket.read(&mut buf[read..]).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => read += n,
                            }
                        }
                        let head = String::from_utf8_lossy(&buf[..read]).into_owned();
                        let body = if head.starts_with("GET /v1 ") {
                            r#"{"id": "v1", "version": {"id": "v1", "version": "1.115", "min_version": "1.1"}}"#
                                .to_string()
                        } else {
                            page(counter.fetch_add(1, Ordering::SeqCst))
                        };
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                             X-OpenStack-Ironic-API-Minimum-Version: 1.1\r\n\
                             X-OpenStack-Ironic-API-Maximum-Version: 1.115\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if socket.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (url, pages)
    }

    /// A page holding one node with this UUID, continued by a `next` link.
    fn page_of(uuid: String) -> String {
        format!(r#"{{"nodes": [{{"uuid": "{uuid}"}}], "next": "http://ironic/v1/nodes?marker={uuid}"}}"#)
    }

    #[tokio::test]
    async fn a_server_that_repeats_its_page_forever_ends_with_a_typed_error() {
        let (url, pages) = fake_ironic(|_| RECORDED_PAGE.to_string()).await;
        let client = IronicClient::builder(url).build().await.unwrap();
        let err = client.list_all_nodes(&NodeListQuery::new()).await.unwrap_err();
        match &err {
            Error::Paging { operation, fault: PagingFault::RepeatedMarker { marker, page } } => {
                assert_eq!(*operation, Operation::ListNodes);
                assert_eq!(marker, "c53cf92d-0705-44b8-a515-d9e7d4400f11");
                assert_eq!(*page, 2, "the second page repeated the first one's marker");
            }
            other => panic!("expected a repeated marker, got {other:?}"),
        }
        assert_eq!(pages.load(Ordering::SeqCst), 2, "no request after the repeat");
        assert!(!err.is_retryable(), "the same listing would loop again");
    }

    #[tokio::test]
    async fn a_marker_from_any_earlier_page_counts_as_a_repeat() {
        // a, b, a: not the previous page's marker, but a cycle all the same.
        let (url, _) = fake_ironic(|n| page_of(["a", "b"][n % 2].to_string())).await;
        let client = IronicClient::builder(url).build().await.unwrap();
        let err = client.node_statuses().await.unwrap_err();
        assert!(
            matches!(&err, Error::Paging { fault: PagingFault::RepeatedMarker { marker, page: 3 }, .. } if marker == "a"),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn a_server_that_never_stops_paging_ends_at_the_page_limit() {
        let (url, pages) = fake_ironic(|n| page_of(format!("node-{n}"))).await;
        let client = IronicClient::builder(url).build().await.unwrap();
        let params = NodeListQuery::new().params();
        let err = client.fetch_bounded::<Node>(Operation::ListNodes, "nodes", params, 25).await.unwrap_err();
        assert!(matches!(err, Error::Paging { fault: PagingFault::TooManyPages { limit: 25 }, .. }), "{err:?}");
        assert_eq!(pages.load(Ordering::SeqCst), 25);
    }

    #[tokio::test]
    async fn a_listing_that_ends_returns_every_page() {
        let (url, _) = fake_ironic(|n| match n {
            0..=2 => page_of(format!("node-{n}")),
            _ => r#"{"nodes": []}"#.to_string(),
        })
        .await;
        let client = IronicClient::builder(url).build().await.unwrap();
        let nodes = client.list_all_nodes(&NodeListQuery::new()).await.unwrap();
        let uuids: Vec<_> = nodes.iter().map(|n| n.uuid.as_str()).collect();
        assert_eq!(uuids, ["node-0", "node-1", "node-2"]);
    }
}
