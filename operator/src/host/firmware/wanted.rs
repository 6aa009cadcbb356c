//! What each host is waiting for from its firmware objects: the BIOS settings its
//! `HostFirmwareSettings` wants and Ironic last read otherwise, valid against the schema; the
//! firmware updates its `HostFirmwareComponents` wants and were not handed to Ironic yet. The
//! object's controller sets it after each read and wakes the host when it changes; the host
//! controller applies it, and clears it once Ironic shows the host has it. Kept in memory
//! only: after a restart, the controllers' first reads fill it again within seconds.

use crate::host::wake::{Cause, HostKey, Wakeups};
use crate::kit::fresh::Recent;
use crds::firmware::{FirmwareUpdate, HostFirmwareComponents, HostFirmwareSettings};
use futures::Stream;
use kube::runtime::reflector::ObjectRef;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Setting name → wanted value, as text.
pub(crate) type Settings = BTreeMap<String, String>;

/// The BIOS settings hosts wait for.
pub(crate) type Wanted = Waiting<HostFirmwareSettings, Settings>;

/// The firmware updates hosts wait for: the spec's whole list, as it is handed to Ironic.
pub(crate) type WantedUpdates = Waiting<HostFirmwareComponents, Vec<FirmwareUpdate>>;

/// A controller's channel: its namespace (`None`: all), and where to send reads.
type ReadChannel<K> = (Option<String>, mpsc::UnboundedSender<ObjectRef<K>>);

/// Wakes the reconciles of the objects of kind `K` named for a host, per watched namespace.
pub(crate) struct ReadAgain<K: kube::Resource>(Mutex<Vec<ReadChannel<K>>>);

impl<K: kube::Resource> Default for ReadAgain<K> {
    fn default() -> Self {
        Self(Mutex::new(Vec::new()))
    }
}

impl<K> ReadAgain<K>
where
    K: kube::Resource<DynamicType = ()> + 'static,
{
    /// Reads the object named for `host` again now.
    pub(crate) fn read(&self, host: &HostKey) {
        let object = ObjectRef::<K>::new(&host.name).within(&host.namespace);
        let reads = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for (namespace, tx) in reads.iter() {
            if namespace.as_deref().is_none_or(|ns| ns == host.namespace) {
                // A closed channel means that controller stopped; nothing to do.
                let _ = tx.send(object.clone());
            }
        }
    }

    /// The objects of `namespace` (all with `None`) to read again, for
    /// `Controller::reconcile_on`.
    pub(crate) fn stream(&self, namespace: Option<String>) -> impl Stream<Item = ObjectRef<K>> + Send + 'static {
        let (tx, rx) = mpsc::unbounded_channel();
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push((namespace, tx));
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) })
    }
}

/// What a read of a host's object was made from. Ironic refreshes what it holds of a node's
/// firmware only in some provision-state transitions (verifying, cleaning, servicing, an
/// inspection's end: `host::refresh`), so while the mark stands a new read would show the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReadMark {
    /// The node's UUID, as the poller saw it.
    pub(crate) node: String,
    /// When its provision state last changed in a transition that may have refreshed its
    /// firmware, as the poller saw it.
    pub(crate) moved: Option<String>,
    /// The object's UID (a re-created object is read anew) and generation.
    pub(crate) object: (String, Option<i64>),
    /// The object's status (its [`status_digest`]): recorded as the read wrote it, so that a
    /// status changed since (a reconcile that could not read, or a hand) is read again.
    pub(crate) status: u64,
}

/// Whether to read a firmware object's host now.
pub(crate) enum Look {
    /// The last read was made from the same: Ironic holds what the status shows.
    Unchanged,
    /// Read, from this mark when the read may be skipped later while it stands.
    Read(Option<ReadMark>),
}

/// A digest of a status as the apiserver keeps it: its JSON, whose times are to the second,
/// so that the status the operator wrote and the same status read back digest alike.
pub(crate) fn status_digest<S: serde::Serialize>(status: Option<&S>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    // A status that cannot be written as JSON digests as nothing: never what a read wrote.
    serde_json::to_vec(&status).unwrap_or_default().hash(&mut hasher);
    hasher.finish()
}

/// What waits, per host, from objects of kind `K`; `V::default()` is nothing.
pub(crate) struct Waiting<K: kube::Resource, V> {
    /// Per host, what it waits for and the generation of the object it came from.
    hosts: Mutex<HashMap<HostKey, (V, Option<i64>)>>,
    /// Per host, what its object's last read was made from.
    marks: Mutex<HashMap<HostKey, ReadMark>>,
    /// Hosts that may be held until their object is read: woken when it is, the others not
    /// (a write of the object's status wakes no host that does not wait for it).
    held: Mutex<HashSet<HostKey>>,
    /// Wakes hosts.
    wakeups: Arc<Wakeups>,
    /// What the wake-ups are counted as.
    cause: Cause,
    /// Wakes the objects' reconciles.
    reads: ReadAgain<K>,
    /// The objects as their reconciles' status writes returned them, until the watch shows
    /// those writes: a reconcile woken in between (a read asked for just after the object was
    /// made) would otherwise see the status before the write, take it for a change since the
    /// read, and read Ironic again.
    written: Recent<K>,
}

impl<K, V> Waiting<K, V>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
    V: Clone + Default + PartialEq,
{
    pub(crate) fn new(wakeups: Arc<Wakeups>, cause: Cause) -> Self {
        Self {
            hosts: Mutex::new(HashMap::new()),
            marks: Mutex::new(HashMap::new()),
            held: Mutex::new(HashSet::new()),
            wakeups,
            cause,
            reads: ReadAgain::default(),
            written: Recent::default(),
        }
    }

    /// The newer of the cached object and the one its last status write returned.
    pub(crate) fn freshest(&self, cached: Arc<K>) -> Arc<K> {
        self.written.freshest(cached)
    }

    /// Keeps `object`, as a status write returned it, until the watch shows it.
    pub(crate) fn wrote(&self, object: K) {
        self.written.remember(object);
    }

    fn hosts(&self) -> std::sync::MutexGuard<'_, HashMap<HostKey, (V, Option<i64>)>> {
        self.hosts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What `host` waits for (`V::default()`: nothing).
    pub(crate) fn of(&self, host: &HostKey) -> V {
        self.hosts().get(host).map(|(value, _)| value.clone()).unwrap_or_default()
    }

    /// Records what `host` waits for, read for the object's `generation`; wakes the host when
    /// that changed.
    pub(crate) fn set(&self, host: &HostKey, value: V, generation: Option<i64>) {
        let before = match value == V::default() {
            true => self.hosts().remove(host),
            false => self.hosts().insert(host.clone(), (value.clone(), generation)),
        };
        if before.map(|(value, _)| value).unwrap_or_default() != value {
            self.wakeups.wake(host, self.cause);
        }
    }

    /// Nothing could be read now: what `host` waited for stands while the object's spec is the
    /// one it came from (an outage of Ironic takes nothing away), and goes once the spec
    /// changed (what the host waits for is then unknown until the next read).
    pub(crate) fn unread(&self, host: &HostKey, generation: Option<i64>) {
        let stale = { self.hosts().get(host).is_some_and(|(_, read)| *read != generation) };
        if stale {
            self.set(host, V::default(), generation);
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashSet<HostKey>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `host` may wait until its object is read: marked before the host reads the object, so
    /// that a read finished after the host's look wakes it.
    pub(crate) fn hold(&self, host: &HostKey) {
        self.held().insert(host.clone());
    }

    /// `host` does not wait for its object's read.
    pub(crate) fn unhold(&self, host: &HostKey) {
        self.held().remove(host);
    }

    /// Its object was read anew: wakes `host` if it may be waiting for that.
    pub(crate) fn wake(&self, host: &HostKey) {
        if self.held().remove(host) {
            self.wakeups.wake(host, self.cause);
        }
    }

    /// The host is gone, or its object.
    pub(crate) fn forget(&self, host: &HostKey) {
        self.hosts().remove(host);
        self.marks.lock().unwrap_or_else(|e| e.into_inner()).remove(host);
        self.held().remove(host);
        self.written.forget(&host.namespace, &host.name);
    }

    /// Whether the last read of `host`'s object was made from `mark`.
    pub(crate) fn unchanged(&self, host: &HostKey, mark: &ReadMark) -> bool {
        self.marks.lock().unwrap_or_else(|e| e.into_inner()).get(host) == Some(mark)
    }

    /// Whether `host`'s object is to be read now, made from `mark` (see `target::read_mark`).
    pub(crate) fn look(&self, host: &HostKey, mark: Option<ReadMark>) -> Look {
        match mark {
            Some(mark) if self.unchanged(host, &mark) => Look::Unchanged,
            mark => Look::Read(mark),
        }
    }

    /// Records what a read of `host`'s object was made from.
    pub(crate) fn marked(&self, host: &HostKey, mark: ReadMark) {
        self.marks.lock().unwrap_or_else(|e| e.into_inner()).insert(host.clone(), mark);
    }

    /// Reads `host`'s object now: Ironic has just read the node's firmware.
    pub(crate) fn read_now(&self, host: &HostKey) {
        self.reads.read(host);
    }

    /// Ironic shows the host has what it waited for: nothing waits any more, and its object is
    /// read again now, so that its status (which a host reads at some moments) says so at once.
    pub(crate) fn settled(&self, host: &HostKey) {
        self.forget(host);
        self.reads.read(host);
    }

    /// The objects of `namespace` (all with `None`) to read again, for
    /// `Controller::reconcile_on`.
    pub(crate) fn reads(&self, namespace: Option<String>) -> impl Stream<Item = ObjectRef<K>> + Send + 'static {
        self.reads.stream(namespace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[tokio::test]
    async fn a_host_is_woken_when_what_it_waits_for_changes_and_only_then() {
        let wakeups = Arc::new(Wakeups::default());
        let mut woken = Box::pin(wakeups.subscribe(None));
        let wanted = Wanted::new(wakeups.clone(), Cause::Settings);
        let host = HostKey::new("metal3", "server-0");
        let turbo = Settings::from([("ProcTurboMode".to_string(), "Disabled".to_string())]);
        wanted.set(&host, turbo.clone(), Some(1));
        wanted.set(&host, turbo.clone(), Some(1));
        assert_eq!(wanted.of(&host), turbo);
        wanted.unread(&host, Some(1));
        assert_eq!(wanted.of(&host), turbo, "an unread object of the same spec takes nothing away");
        wanted.forget(&host);
        assert!(wanted.of(&host).is_empty());
        wanted.set(&host, Settings::new(), Some(1));
        assert_eq!(woken.next().await.map(|r| r.name), Some("server-0".to_string()));
        let next = tokio::time::timeout(std::time::Duration::from_millis(50), woken.next()).await;
        assert!(next.is_err(), "woken once: the same settings again, and clearing what was forgotten, are no news");
    }

    #[tokio::test]
    async fn a_read_wakes_only_a_host_held_for_it_and_only_once() {
        let wakeups = Arc::new(Wakeups::default());
        let mut woken = Box::pin(wakeups.subscribe(None));
        let wanted = Wanted::new(wakeups.clone(), Cause::Settings);
        let (held, free, gone) = (HostKey::new("ns", "held"), HostKey::new("ns", "free"), HostKey::new("ns", "gone"));
        wanted.hold(&held);
        wanted.hold(&free);
        wanted.unhold(&free);
        wanted.hold(&gone);
        wanted.forget(&gone);
        for host in [&free, &gone, &held, &held] {
            wanted.wake(host);
        }
        assert_eq!(woken.next().await.map(|r| r.name), Some("held".to_string()));
        let next = tokio::time::timeout(std::time::Duration::from_millis(50), woken.next()).await;
        assert!(next.is_err(), "no other wake: a host not held, one forgotten, and a second read");
    }

    #[tokio::test]
    async fn a_new_spec_that_cannot_be_read_drops_what_the_old_one_wanted() {
        let wanted = Wanted::new(Arc::new(Wakeups::default()), Cause::Settings);
        let host = HostKey::new("metal3", "server-0");
        wanted.set(&host, Settings::from([("X".to_string(), "1".to_string())]), Some(1));
        wanted.unread(&host, Some(2));
        assert!(wanted.of(&host).is_empty());
    }

    #[tokio::test]
    async fn a_settled_host_has_its_settings_read_again_in_its_namespace_only() {
        let wanted = Wanted::new(Arc::new(Wakeups::default()), Cause::Settings);
        let mut a = Box::pin(wanted.reads(Some("a".into())));
        let mut all = Box::pin(wanted.reads(None));
        wanted.set(&HostKey::new("b", "h1"), Settings::from([("X".to_string(), "1".to_string())]), Some(1));
        wanted.settled(&HostKey::new("b", "h1"));
        wanted.settled(&HostKey::new("a", "h2"));
        assert!(wanted.of(&HostKey::new("b", "h1")).is_empty());
        assert_eq!(a.next().await.map(|r| r.name), Some("h2".to_string()));
        assert_eq!(all.next().await.map(|r| r.name), Some("h1".to_string()));
    }

    #[test]
    fn a_read_is_skipped_only_while_its_node_and_object_stand_still() {
        let wanted = Wanted::new(Arc::new(Wakeups::default()), Cause::Settings);
        let host = HostKey::new("ns", "h");
        let mark = |at: &str, generation| ReadMark {
            node: "uuid".to_string(),
            moved: Some(at.to_string()),
            object: ("uid".to_string(), Some(generation)),
            status: 7,
        };
        assert!(!wanted.unchanged(&host, &mark("t1", 1)), "never read");
        wanted.marked(&host, mark("t1", 1));
        assert!(wanted.unchanged(&host, &mark("t1", 1)));
        assert!(!wanted.unchanged(&host, &mark("t2", 1)), "the node's provision state moved");
        assert!(!wanted.unchanged(&host, &mark("t1", 2)), "the object's spec changed");
        let recreated = ReadMark { object: ("another uid".to_string(), Some(1)), ..mark("t1", 1) };
        assert!(!wanted.unchanged(&host, &recreated), "a re-created object is read anew");
        let rewritten = ReadMark { status: 8, ..mark("t1", 1) };
        assert!(!wanted.unchanged(&host, &rewritten), "a status changed since the read is read anew");
        wanted.settled(&host);
        assert!(!wanted.unchanged(&host, &mark("t1", 1)), "settled: read again");
    }

    #[test]
    fn a_reconcile_woken_before_the_watch_shows_a_status_write_sees_that_write_until_its_host_is_gone() {
        let wanted = Wanted::new(Arc::new(Wakeups::default()), Cause::Settings);
        let host = HostKey::new("ns", "h");
        let versioned = |rv: &str, reason: &str| {
            let mut settings = HostFirmwareSettings::new("h", Default::default());
            settings.metadata.namespace = Some("ns".into());
            settings.metadata.resource_version = Some(rv.into());
            settings.metadata.annotations = Some([("reason".to_string(), reason.to_string())].into());
            settings
        };
        let reason = |s: &HostFirmwareSettings| s.metadata.annotations.as_ref().and_then(|a| a.get("reason")).cloned();
        wanted.wrote(versioned("7", "written"));
        let stale = Arc::new(versioned("5", "made"));
        assert_eq!(reason(&wanted.freshest(stale.clone())).as_deref(), Some("written"));
        let caught_up = Arc::new(versioned("8", "cached"));
        assert_eq!(reason(&wanted.freshest(caught_up)).as_deref(), Some("cached"), "the watch's newer copy wins");
        wanted.wrote(versioned("9", "written again"));
        wanted.forget(&host);
        assert_eq!(reason(&wanted.freshest(stale)).as_deref(), Some("made"), "nothing kept of a host gone");
    }

    #[test]
    fn a_status_digests_alike_as_written_and_as_read_back_and_differs_once_changed() {
        use crds::firmware::HostFirmwareComponentsStatus;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let now = k8s_openapi::jiff::Timestamp::now();
        let written = HostFirmwareComponentsStatus { last_updated: Some(Time(now)), ..Default::default() };
        let json = serde_json::to_string(&written).unwrap_or_default();
        let read_back: HostFirmwareComponentsStatus = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(status_digest(Some(&written)), status_digest(Some(&read_back)), "times kept to the second");
        let changed = HostFirmwareComponentsStatus { observed_generation: Some(2), ..read_back };
        assert_ne!(status_digest(Some(&written)), status_digest(Some(&changed)));
        assert_ne!(status_digest(Some(&written)), status_digest::<HostFirmwareComponentsStatus>(None));
    }
}
