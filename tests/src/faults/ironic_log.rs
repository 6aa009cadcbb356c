//! Ironic's own log as a record of what happened at Ironic: every provision-state change its
//! conductor made (also those between two of the recorder's listings) and every API request
//! it answered. Positions are byte offsets, so a test marks a moment with [`IronicLog::mark`]
//! and reads only what came after it.

use super::record::Transition;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One API request, as `ironic.api` logs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub status: u16,
}

/// Ironic's log file (kept across restarts: it is appended to).
#[derive(Clone, Debug)]
pub struct IronicLog {
    path: PathBuf,
}

impl IronicLog {
    pub fn new(path: &Path) -> Self {
        Self { path: path.to_path_buf() }
    }

    /// The current end of the log.
    pub fn mark(&self) -> u64 {
        std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0)
    }

    fn text_since(&self, mark: u64) -> String {
        let bytes = std::fs::read(&self.path).unwrap_or_default();
        let start = usize::try_from(mark).unwrap_or(usize::MAX).min(bytes.len());
        String::from_utf8_lossy(&bytes[start..]).into_owned()
    }

    /// Every provision-state change logged after `mark`, by node UUID, in order.
    pub fn transitions_since(&self, mark: u64) -> BTreeMap<String, Vec<Transition>> {
        let mut by_node: BTreeMap<String, Vec<Transition>> = BTreeMap::new();
        for (uuid, transition) in self.text_since(mark).lines().filter_map(parse_transition) {
            by_node.entry(uuid).or_default().push(transition);
        }
        by_node
    }

    /// Every API request logged after `mark`, in order.
    pub fn requests_since(&self, mark: u64) -> Vec<Request> {
        self.text_since(mark).lines().filter_map(parse_request).collect()
    }
}

/// `Node <uuid> moved to provision state "<to>" from state "<from>"; target ...`
pub fn parse_transition(line: &str) -> Option<(String, Transition)> {
    let rest = &line[line.find("] Node ")? + "] Node ".len()..];
    let (uuid, rest) = rest.split_once(" moved to provision state \"")?;
    let (to, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(" from state \"")?;
    let (from, _) = rest.split_once('"')?;
    Some((uuid.to_string(), Transition { from: from.to_string(), to: to.to_string() }))
}

/// `... INFO ironic.api [...] 127.0.0.1 - PUT /v1/nodes/x/states/provision - 202 (75.89ms)`
pub fn parse_request(line: &str) -> Option<Request> {
    if !line.contains(" ironic.api ") {
        return None;
    }
    let rest = &line[line.find("] ")? + 2..];
    let mut words = rest.split(' ');
    let (_client, dash, method, path, dash2, status) =
        (words.next()?, words.next()?, words.next()?, words.next()?, words.next()?, words.next()?);
    if dash != "-" || dash2 != "-" {
        return None;
    }
    Some(Request { method: method.to_string(), path: path.to_string(), status: status.parse().ok()? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions_and_requests_are_read_from_ironic_log_lines() {
        let transition = r#"2026-12-01 20:46:58.837 4031 INFO ironic.conductor.task_manager [None req-32f6 - - - - - -] Node d3b4-45 moved to provision state "verifying" from state "enroll"; target provision state is "manageable""#;
        assert_eq!(
            parse_transition(transition),
            Some(("d3b4-45".to_string(), Transition { from: "enroll".into(), to: "verifying".into() }))
        );
        let request = "2026-12-01 20:46:58.839 4031 INFO ironic.api [None req-32f6 - - - - - -] 127.0.0.1 - PUT /v1/nodes/rf-1/states/provision - 202 (75.89ms)";
        assert_eq!(
            parse_request(request),
            Some(Request { method: "PUT".into(), path: "/v1/nodes/rf-1/states/provision".into(), status: 202 })
        );
        assert_eq!(parse_request(transition), None);
        assert_eq!(parse_transition(request), None);
    }

    #[test]
    fn a_mark_reads_only_what_was_logged_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ironic.log");
        let line = |n: u32| format!("t 1 INFO ironic.api [r] 127.0.0.1 - GET /v1/nodes/{n} - 200 (1ms)\n");
        std::fs::write(&path, line(1)).unwrap();
        let log = IronicLog::new(&path);
        let mark = log.mark();
        std::fs::write(&path, line(1) + &line(2)).unwrap();
        let paths: Vec<String> = log.requests_since(mark).into_iter().map(|r| r.path).collect();
        assert_eq!(paths, vec!["/v1/nodes/2"]);
        assert_eq!(log.requests_since(0).len(), 2);
    }
}
