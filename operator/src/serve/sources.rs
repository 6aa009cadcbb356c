//! Connections counted by the address they come from.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// How many connections each address holds, up to a cap.
#[derive(Clone)]
pub(super) struct Sources {
    cap: usize,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One admitted connection's place in its address's count, given back when dropped.
pub(super) struct Source {
    ip: IpAddr,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl Sources {
    pub(super) fn new(cap: usize) -> Self {
        Self { cap, open: Arc::default() }
    }

    /// A place for one more connection from `ip`, or `None` when it holds `cap` already.
    pub(super) fn admit(&self, ip: IpAddr) -> Option<Source> {
        // A poisoned lock only means a panic elsewhere while counting: the map is still whole.
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = open.entry(ip).or_insert(0);
        if *count >= self.cap {
            return None;
        }
        *count += 1;
        Some(Source { ip, open: self.open.clone() })
    }

    #[cfg(test)]
    fn held(&self, ip: IpAddr) -> usize {
        self.open.lock().map(|o| o.get(&ip).copied().unwrap_or(0)).unwrap_or(0)
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.ip) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                // Addresses come and go (pods): keep only those holding connections.
                open.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn an_address_at_its_cap_is_refused_while_others_are_admitted() {
        let sources = Sources::new(2);
        let held = [sources.admit(A), sources.admit(A)];
        assert!(held.iter().all(Option::is_some));
        assert!(sources.admit(A).is_none());
        assert!(sources.admit(B).is_some());
    }

    #[test]
    fn a_closed_connection_gives_its_place_back_and_idle_addresses_are_forgotten() {
        let sources = Sources::new(1);
        let first = sources.admit(A);
        assert!(sources.admit(A).is_none());
        drop(first);
        assert_eq!(sources.held(A), 0);
        assert!(sources.open.lock().map(|o| o.is_empty()).unwrap_or(false));
        assert!(sources.admit(A).is_some());
    }
}
