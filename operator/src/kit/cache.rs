//! The watch caches: what they keep of an object, and the one way a controller builds one.
//!
//! A cache keeps every object of its kind for the life of the process, so what it keeps is
//! what the operator's memory grows with. `metadata.managedFields` is dropped: every write is
//! a patch built from the controller's own values (never a PUT of a cached object, which would
//! need it), and it is the largest part of a BareMetalHost's metadata, deserialized into a
//! tree of JSON values for each field any manager owns. One reader needs a part of it: the
//! NodeSet controller learns from its own apply entry which firmware settings it handed over,
//! to take back those it no longer wants; its caches of firmware objects keep that entry's
//! `spec` and nothing else ([`reflected_with_owners`], [`own_applies`]). Kept whole, the
//! `HostFirmwareSettings`' managed fields (the status writes' entries above all, one field per
//! BIOS setting) held 9.6 MiB of the operator's 48.9 MiB of heap at the peak of 1000 hosts
//! provisioning (design/performance.md).

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, runtime::controller::Controller};
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// Objects per page of a watch's list. A page is held whole while it is parsed: kube-runtime's
/// default of 500 objects of up to 1 MiB each (a Secret, a ConfigMap) is half a gigabyte, more
/// than the operator's pod may use; 100 small ones is a few megabytes, and a list of thousands
/// of BareMetalHosts costs a few more requests only when it is relisted.
pub(crate) const PAGE_SIZE: u32 = 100;

/// The watcher configuration every cluster-wide (or namespace-wide) watch starts from.
pub(crate) fn paged() -> watcher::Config {
    watcher::Config::default().page_size(PAGE_SIZE)
}

/// Drops what no controller reads from an object before it enters a cache. `None`, not an
/// empty list: an empty list in a write would clear the field's owners on the server.
pub(crate) fn lean<K: Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
}

/// Keeps of an object's managed fields only what the operator's own apply of its spec owns:
/// the entries of [`crate::FIELD_MANAGER`]'s `Apply` on the main resource, each with its
/// `f:spec` alone. `None` when there is none, as [`lean`] leaves it.
pub(crate) fn own_applies<K: Resource>(object: &mut K) {
    let entries = object.meta_mut().managed_fields.take().unwrap_or_default();
    let kept: Vec<ManagedFieldsEntry> = entries.into_iter().filter(is_own_apply).map(spec_only).collect();
    object.meta_mut().managed_fields = (!kept.is_empty()).then_some(kept);
}

/// An entry of the operator's server-side apply of the object itself (not of a subresource).
pub(crate) fn is_own_apply(entry: &ManagedFieldsEntry) -> bool {
    entry.manager.as_deref() == Some(crate::FIELD_MANAGER)
        && entry.operation.as_deref() == Some("Apply")
        && entry.subresource.as_deref().is_none_or(str::is_empty)
}

fn spec_only(mut entry: ManagedFieldsEntry) -> ManagedFieldsEntry {
    entry.fields_v1 = entry.fields_v1.and_then(|mut fields| {
        let spec = fields.0.as_object_mut()?.remove("f:spec")?;
        Some(FieldsV1(serde_json::json!({ "f:spec": spec })))
    });
    entry
}

/// A controller of `K` whose cache keeps lean objects; otherwise as `Controller::new`.
pub(crate) fn controller<K>(api: Api<K>, config: watcher::Config) -> Controller<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    observed_controller(api, config, |_| true, |_| {}, |_| false)
}

/// [`controller`] of the objects `served` accepts (the others are never cached), with every
/// watch event shown to `observe` as the cache takes it, before the reconciles it triggers: for
/// an index kept beside the cache. A live change that `own` says the controller's own write
/// made triggers nothing: the reconcile that wrote it already went on from what the write
/// returned.
pub(crate) fn observed_controller<K>(
    api: Api<K>,
    config: watcher::Config,
    served: impl Fn(&K) -> bool + Send + 'static,
    observe: impl Fn(&watcher::Event<K>) + Send + 'static,
    own: impl Fn(&K) -> bool + Send + 'static,
) -> Controller<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store();
    let trigger = watcher(api, config)
        .filter_map(move |event| std::future::ready(within(event, &served)))
        .modify(lean::<K>)
        .reflect(writer)
        .inspect(move |event| {
            if let Ok(event) = event {
                observe(event);
            }
        })
        .filter_map(move |event| std::future::ready(trigger(event, &own)));
    Controller::for_stream(trigger, store)
}

/// A watch event as seen by a replica that serves only the objects `served` accepts: one it
/// does not serve is never listed into the cache, and a change that takes one out of its
/// service (a field `served` reads) is its deletion from the cache.
pub(crate) fn within<K>(
    event: Result<watcher::Event<K>, watcher::Error>,
    served: &impl Fn(&K) -> bool,
) -> Option<Result<watcher::Event<K>, watcher::Error>> {
    match event {
        Ok(watcher::Event::InitApply(object)) if !served(&object) => None,
        Ok(watcher::Event::Apply(object)) if !served(&object) => Some(Ok(watcher::Event::Delete(object))),
        other => Some(other),
    }
}

/// The object a watch event asks to reconcile, as `applied_objects` gives it, except a live
/// change the controller's own write made. A relist (`InitApply`) always triggers: it may stand
/// for several changes, others' among them, of which only the last is shown.
fn trigger<K>(
    event: Result<watcher::Event<K>, watcher::Error>,
    own: &impl Fn(&K) -> bool,
) -> Option<Result<K, watcher::Error>> {
    match event {
        Ok(watcher::Event::Apply(object)) if own(&object) => None,
        Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => Some(Ok(object)),
        Ok(watcher::Event::Delete(_) | watcher::Event::Init | watcher::Event::InitDone) => None,
        Err(err) => Some(Err(err)),
    }
}

/// A cache of `K` beside a controller, and the stream of its changes (to wake owners by).
pub(crate) fn reflected<K>(
    api: Api<K>,
    config: watcher::Config,
) -> (Store<K>, impl futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    reflect(api, config, lean::<K>)
}

/// [`reflected`], keeping of the objects' managed fields what the operator's own apply of their
/// spec owns ([`own_applies`]): which of its fields the operator applied is read from it.
pub(crate) fn reflected_with_owners<K>(
    api: Api<K>,
    config: watcher::Config,
) -> (Store<K>, impl futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    reflect(api, config, own_applies::<K>)
}

fn reflect<K>(
    api: Api<K>,
    config: watcher::Config,
    keep: fn(&mut K),
) -> (Store<K>, impl futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store();
    let stream = watcher(api, config).default_backoff().modify(keep).reflect(writer).touched_objects();
    (store, stream)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::baremetalhost::BareMetalHost;

    #[test]
    fn a_cached_object_keeps_everything_but_its_managed_fields_and_never_writes_an_empty_list() {
        let mut host = BareMetalHost::new("server-0", Default::default());
        host.metadata.managed_fields =
            Some(vec![ManagedFieldsEntry { manager: Some("kubectl".into()), ..Default::default() }]);
        host.metadata.annotations = Some([("a".to_string(), "b".to_string())].into());
        let before = host.clone();
        lean(&mut host);
        assert_eq!(host.metadata.managed_fields, None);
        let json = serde_json::to_value(&host).expect("json");
        assert!(json["metadata"].get("managedFields").is_none(), "absent, not []: {json}");
        host.metadata.managed_fields = before.metadata.managed_fields.clone();
        assert_eq!(host, before, "nothing else changed");
    }

    #[test]
    fn a_cache_of_owners_keeps_only_the_spec_of_the_operators_own_apply() {
        let entry = |manager: &str, operation: &str, subresource: Option<&str>| ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            subresource: subresource.map(Into::into),
            fields_v1: Some(FieldsV1(serde_json::json!({
                "f:metadata": {"f:labels": {}}, "f:spec": {"f:settings": {"f:A": {}}}, "f:status": {"f:settings": {}}
            }))),
            ..Default::default()
        };
        let mut settings = BareMetalHost::new("server-0", Default::default());
        settings.metadata.managed_fields = Some(vec![
            entry(crate::FIELD_MANAGER, "Apply", None),
            entry(crate::FIELD_MANAGER, "Apply", Some("status")),
            entry(crate::FIELD_MANAGER, "Update", None),
            entry("kubectl", "Apply", None),
        ]);
        own_applies(&mut settings);
        let kept = settings.metadata.managed_fields.expect("the own apply entry");
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].subresource, None);
        assert_eq!(kept[0].fields_v1, Some(FieldsV1(serde_json::json!({"f:spec": {"f:settings": {"f:A": {}}}}))));

        let mut theirs = BareMetalHost::new("server-1", Default::default());
        theirs.metadata.managed_fields = Some(vec![entry("kubectl", "Apply", None)]);
        own_applies(&mut theirs);
        assert_eq!(theirs.metadata.managed_fields, None, "none left is absent, not []");
    }

    #[test]
    fn an_object_not_served_is_never_cached_and_one_leaving_service_is_deleted() {
        let host = |name: &str| {
            let mut h = BareMetalHost::new(name, Default::default());
            h.metadata.namespace = Some("ns".into());
            h
        };
        let served = |h: &BareMetalHost| h.metadata.name.as_deref() == Some("ours");
        let kind = |e: Option<Result<watcher::Event<BareMetalHost>, watcher::Error>>| match e {
            Some(Ok(watcher::Event::InitApply(_))) => "init-apply",
            Some(Ok(watcher::Event::Apply(_))) => "apply",
            Some(Ok(watcher::Event::Delete(_))) => "delete",
            Some(_) => "other",
            None => "dropped",
        };
        assert_eq!(kind(within(Ok(watcher::Event::InitApply(host("theirs"))), &served)), "dropped");
        assert_eq!(kind(within(Ok(watcher::Event::InitApply(host("ours"))), &served)), "init-apply");
        assert_eq!(kind(within(Ok(watcher::Event::Apply(host("theirs"))), &served)), "delete");
        assert_eq!(kind(within(Ok(watcher::Event::Apply(host("ours"))), &served)), "apply");
        assert_eq!(kind(within(Ok(watcher::Event::Delete(host("theirs"))), &served)), "delete");
    }

    #[test]
    fn only_a_live_change_of_our_own_making_triggers_nothing() {
        let host = |rv: &str| {
            let mut host = BareMetalHost::new("server-0", Default::default());
            host.metadata.resource_version = Some(rv.into());
            host
        };
        let ours = |h: &BareMetalHost| h.metadata.resource_version.as_deref() == Some("2");
        let rv = |t: Option<Result<BareMetalHost, watcher::Error>>| t.and_then(|t| t.ok()?.metadata.resource_version);
        assert_eq!(rv(trigger(Ok(watcher::Event::Apply(host("2"))), &ours)), None);
        assert_eq!(rv(trigger(Ok(watcher::Event::Apply(host("3"))), &ours)), Some("3".into()), "someone else's");
        assert_eq!(rv(trigger(Ok(watcher::Event::InitApply(host("2"))), &ours)), Some("2".into()), "a relist");
        assert!(trigger(Ok(watcher::Event::Delete(host("4"))), &ours).is_none());
        assert!(trigger(Ok(watcher::Event::<BareMetalHost>::InitDone), &ours).is_none());
    }
}
