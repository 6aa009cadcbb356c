//! Reading the operator process from outside: its Prometheus counters over HTTP, and its
//! memory and CPU from `/proc`, as a kubelet or node exporter would see them.

use anyhow::Context as _;
use std::collections::BTreeMap;
use std::time::Duration;

/// One scrape of `/metrics`: every sample by its full name with labels.
#[derive(Clone, Debug, Default)]
pub struct Scrape(BTreeMap<String, f64>);

impl Scrape {
    pub async fn fetch(url: &str) -> crate::Result<Self> {
        let text = reqwest::Client::new()
            .get(url)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .with_context(|| format!("scraping {url}"))?
            .text()
            .await?;
        Ok(Self::parse(&text))
    }

    /// Parses the text exposition (comments skipped, timestamps ignored).
    pub fn parse(text: &str) -> Self {
        let samples = text
            .lines()
            .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
            .filter_map(|line| {
                // Label values may hold spaces: the value follows the closing brace.
                let split = line.rfind('}').map(|i| i + 1).or_else(|| line.find(' '))?;
                let (name, rest) = line.split_at(split);
                let value = rest.split_whitespace().next()?.parse().ok()?;
                Some((name.trim().to_string(), value))
            })
            .collect();
        Self(samples)
    }

    /// The sample `name{labels}` (labels as exported, e.g. `controller="host"`), 0 when absent.
    pub fn get(&self, name: &str, labels: &str) -> u64 {
        let key = if labels.is_empty() { name.to_string() } else { format!("{name}{{{labels}}}") };
        self.0.get(&key).copied().unwrap_or(0.0) as u64
    }

    /// Every sample of `name` by its labels.
    pub fn family(&self, name: &str) -> BTreeMap<String, u64> {
        let prefix = format!("{name}{{");
        self.0
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(&prefix)?.trim_end_matches('}').to_string(), *v as u64)))
            .collect()
    }

    /// Ironic requests by operation.
    pub fn ironic(&self) -> BTreeMap<String, u64> {
        self.family("ferrometal_ironic_requests_total")
            .into_iter()
            .filter_map(|(labels, n)| Some((label_value(&labels)?.to_string(), n)))
            .collect()
    }

    /// Every request the operator sent the apiserver, by verb (`get`, `watch`, `create`,
    /// `update`, `patch`, `delete`) and resource: keys such as `patch baremetalhosts/status`.
    pub fn apiserver(&self) -> BTreeMap<String, u64> {
        self.family("ferrometal_apiserver_requests_total")
            .into_iter()
            .filter_map(|(labels, n)| {
                let values: Vec<&str> = labels.split('"').skip(1).step_by(2).collect();
                Some((values.join(" "), n)).filter(|_| values.len() == 2)
            })
            .collect()
    }

    /// Host wake-ups by cause (the poll, a freed slot, a firmware read).
    pub fn host_wakes(&self) -> BTreeMap<String, u64> {
        self.family("ferrometal_host_wakes_total")
            .into_iter()
            .filter_map(|(labels, n)| Some((label_value(&labels)?.to_string(), n)))
            .collect()
    }

    /// Failed reconciles of `controller`, whatever the error.
    pub fn reconcile_failures(&self, controller: &str) -> u64 {
        let prefix = format!("controller=\"{controller}\"");
        self.family("ferrometal_reconcile_failures_total")
            .into_iter()
            .filter(|(labels, _)| labels.starts_with(&prefix))
            .map(|(_, n)| n)
            .sum()
    }

    pub fn ironic_total(&self) -> u64 {
        self.ironic().values().sum()
    }

    pub fn status_writes(&self, controller: &str) -> u64 {
        self.get("ferrometal_status_writes_total", &format!("controller=\"{controller}\""))
    }

    pub fn reconciles(&self, controller: &str) -> u64 {
        self.get("ferrometal_reconciles_total", &format!("controller=\"{controller}\""))
    }

    pub fn bulk_polls(&self) -> u64 {
        self.get("ferrometal_host_bulk_polls_total", "")
    }
}

fn label_value(labels: &str) -> Option<&str> {
    labels.split_once('"')?.1.split('"').next()
}

/// Ironic requests by operation, summed over several processes' scrapes.
pub fn ironic_summed(scrapes: &[Scrape]) -> BTreeMap<String, u64> {
    let mut total = BTreeMap::new();
    for scrape in scrapes {
        for (op, n) in scrape.ironic() {
            *total.entry(op).or_insert(0) += n;
        }
    }
    total
}

/// Per-operation differences `after - before`, without zeroes.
pub fn difference(after: &BTreeMap<String, u64>, before: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(op, n)| (op.clone(), n.saturating_sub(before.get(op).copied().unwrap_or(0))))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// Whether a key of [`Scrape::apiserver`] is a write.
pub fn is_write(key: &str) -> bool {
    ["create ", "update ", "patch ", "delete "].iter().any(|verb| key.starts_with(verb))
}

/// The writes among requests to the apiserver by verb and resource.
pub fn apiserver_writes(requests: &BTreeMap<String, u64>) -> u64 {
    requests.iter().filter(|(key, _)| is_write(key)).map(|(_, n)| n).sum()
}

/// Memory and CPU of a process from `/proc/<pid>`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcSample {
    /// Resident now, bytes.
    pub rss: u64,
    /// The most ever resident (`VmHWM`), bytes.
    pub peak_rss: u64,
    /// Of `rss`, the process's own memory (`RssAnon`: heap, stacks) and pages of files mapped
    /// in (`RssFile`: the binary's and its shared libraries' code and data), bytes.
    pub anon_rss: u64,
    pub file_rss: u64,
    /// CPU time used so far (user + system).
    pub cpu: Duration,
}

impl ProcSample {
    pub fn read(pid: u32) -> crate::Result<Self> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).context("reading /proc/<pid>/status")?;
        let kib = |key: &str| -> u64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        let stat = super::cpu::read_stat(pid).context("reading /proc/<pid>/stat")?;
        Ok(Self {
            rss: kib("VmRSS:") * 1024,
            peak_rss: kib("VmHWM:") * 1024,
            anon_rss: kib("RssAnon:") * 1024,
            file_rss: kib("RssFile:") * 1024,
            cpu: super::cpu::from_ticks(stat.own),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_reads_counters_by_name_and_label() {
        let text = "# HELP x\nferrometal_ironic_requests_total{operation=\"node_status\"} 12\n\
                    ferrometal_ironic_requests_total{operation=\"get_node\"} 3\n\
                    ferrometal_status_writes_total{controller=\"host\"} 7\n\
                    ferrometal_apiserver_requests_total{verb=\"patch\",resource=\"baremetalhosts/status\"} 5\n\
                    ferrometal_apiserver_requests_total{verb=\"create\",resource=\"events\"} 1\n\
                    ferrometal_apiserver_requests_total{verb=\"get\",resource=\"secrets\"} 3\nferrometal_host_bulk_polls_total 4\n# EOF\n";
        let scrape = Scrape::parse(text);
        assert_eq!(scrape.ironic_total(), 15);
        assert_eq!(scrape.ironic().get("get_node"), Some(&3));
        assert_eq!(scrape.status_writes("host"), 7);
        assert_eq!(scrape.status_writes("nodeset"), 0);
        let requests = scrape.apiserver();
        assert_eq!(requests.get("patch baremetalhosts/status"), Some(&5));
        assert_eq!(apiserver_writes(&requests), 6, "{requests:?}");
        assert_eq!(scrape.bulk_polls(), 4);
    }

    #[test]
    fn this_process_can_be_read_from_proc() {
        let sample = ProcSample::read(std::process::id()).expect("own /proc");
        assert!(sample.rss > 0 && sample.peak_rss >= sample.rss, "{sample:?}");
    }
}
