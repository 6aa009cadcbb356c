//! The BIOS settings each host is waiting for: what its `HostFirmwareSettings` wants and Ironic
//! last read otherwise, valid against the schema. The firmware controller sets it after each
//! read and wakes the host when it changes; the host controller applies it while the host is
//! prepared, and clears it once Ironic shows the host has it. Kept in memory only: after a
//! restart, the firmware controller's first reads fill it again within seconds.

use crate::host::wake::{HostKey, Wakeups};
use crds::firmware::HostFirmwareSettings;
use futures::Stream;
use kube::runtime::reflector::ObjectRef;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Setting name → wanted value, as text.
pub(crate) type Settings = BTreeMap<String, String>;

/// A settings controller's channel: its namespace (`None`: all), and where to send reads.
type ReadChannel = (Option<String>, mpsc::UnboundedSender<ObjectRef<HostFirmwareSettings>>);

/// The settings waiting, per host.
pub(crate) struct Wanted {
    /// Per host, what it waits for and the generation of the settings object it came from.
    hosts: Mutex<HashMap<HostKey, (Settings, Option<i64>)>>,
    /// Wakes hosts.
    wakeups: Arc<Wakeups>,
    /// Wakes the settings objects' reconciles, per watched namespace (`None`: all).
    reads: Mutex<Vec<ReadChannel>>,
}

impl Wanted {
    pub(crate) fn new(wakeups: Arc<Wakeups>) -> Self {
        Self { hosts: Mutex::new(HashMap::new()), wakeups, reads: Mutex::new(Vec::new()) }
    }

    fn hosts(&self) -> std::sync::MutexGuard<'_, HashMap<HostKey, (Settings, Option<i64>)>> {
        self.hosts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What `host` waits for (empty: nothing).
    pub(crate) fn of(&self, host: &HostKey) -> Settings {
        self.hosts().get(host).map(|(settings, _)| settings.clone()).unwrap_or_default()
    }

    /// Records what `host` waits for (empty: nothing), read for the settings object's
    /// `generation`; wakes the host when that changed.
    pub(crate) fn set(&self, host: &HostKey, settings: Settings, generation: Option<i64>) {
        let changed = {
            let mut hosts = self.hosts();
            let before = match settings.is_empty() {
                true => hosts.remove(host),
                false => hosts.insert(host.clone(), (settings.clone(), generation)),
            };
            before.map(|(settings, _)| settings).unwrap_or_default() != settings
        };
        if changed {
            self.wakeups.wake(host);
        }
    }

    /// Nothing could be read now: what `host` waited for stands while the settings object's
    /// spec is the one it came from (an outage of Ironic takes nothing away), and goes once the
    /// spec changed (what the host waits for is then unknown until the next read).
    pub(crate) fn unread(&self, host: &HostKey, generation: Option<i64>) {
        let stale = { self.hosts().get(host).is_some_and(|(_, read)| *read != generation) };
        if stale {
            self.set(host, Settings::new(), generation);
        }
    }

    /// Wakes `host`: its settings object was read anew.
    pub(crate) fn wake(&self, host: &HostKey) {
        self.wakeups.wake(host);
    }

    /// The host is gone.
    pub(crate) fn forget(&self, host: &HostKey) {
        self.hosts().remove(host);
    }

    /// Ironic shows the host has what it waited for: forgotten, and its settings object read
    /// again now, so that its status (which a host being prepared reads) says so at once.
    pub(crate) fn settled(&self, host: &HostKey) {
        self.forget(host);
        let object = ObjectRef::new(&host.name).within(&host.namespace);
        let reads = self.reads.lock().unwrap_or_else(|e| e.into_inner());
        for (namespace, tx) in reads.iter() {
            if namespace.as_deref().is_none_or(|ns| ns == host.namespace) {
                // A closed channel means that controller stopped; nothing to do.
                let _ = tx.send(object.clone());
            }
        }
    }

    /// The settings objects of `namespace` (all with `None`) to read again, for
    /// `Controller::reconcile_on`.
    pub(crate) fn reads(
        &self,
        namespace: Option<String>,
    ) -> impl Stream<Item = ObjectRef<HostFirmwareSettings>> + Send + 'static {
        let (tx, rx) = mpsc::unbounded_channel();
        self.reads.lock().unwrap_or_else(|e| e.into_inner()).push((namespace, tx));
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) })
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
        let wanted = Wanted::new(wakeups.clone());
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
    async fn a_new_spec_that_cannot_be_read_drops_what_the_old_one_wanted() {
        let wanted = Wanted::new(Arc::new(Wakeups::default()));
        let host = HostKey::new("metal3", "server-0");
        wanted.set(&host, Settings::from([("X".to_string(), "1".to_string())]), Some(1));
        wanted.unread(&host, Some(2));
        assert!(wanted.of(&host).is_empty());
    }

    #[tokio::test]
    async fn a_settled_host_has_its_settings_read_again_in_its_namespace_only() {
        let wanted = Wanted::new(Arc::new(Wakeups::default()));
        let mut a = Box::pin(wanted.reads(Some("a".into())));
        let mut all = Box::pin(wanted.reads(None));
        wanted.set(&HostKey::new("b", "h1"), Settings::from([("X".to_string(), "1".to_string())]), Some(1));
        wanted.settled(&HostKey::new("b", "h1"));
        wanted.settled(&HostKey::new("a", "h2"));
        assert!(wanted.of(&HostKey::new("b", "h1")).is_empty());
        assert_eq!(a.next().await.map(|r| r.name), Some("h2".to_string()));
        assert_eq!(all.next().await.map(|r| r.name), Some("h1".to_string()));
    }
}
