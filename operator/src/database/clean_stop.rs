//! The clean-stop check: before a new MariaDB series opens the data directory, an init
//! container of the new pod verifies, from InnoDB's own files, that the old server stopped
//! cleanly; otherwise it exits with [`EXIT_UNCLEAN`] and the new server never starts.
//!
//! Why: a slow shutdown that outlasts the grace period is killed, and a newer major version
//! must not be the one to replay the older one's redo log. What InnoDB leaves behind, measured
//! against real MariaDB 10.11 data directories (`tests/tests/database/clean_stop.rs`):
//! - a normal shutdown ends by writing a checkpoint at the end of the log, then removes the
//!   temporary tablespace `ibtmp1`. In the 10.8+ log format the newest of the two checkpoint
//!   blocks of `ib_logfile0` (0x1000, 0x2000) then has its checkpoint LSN equal to its end LSN,
//!   the mini-transaction at that LSN is the checkpoint's own `FILE_CHECKPOINT` record (16
//!   bytes: `0xfa`, page 0:0, the LSN, the end marker, a CRC), and the byte after it starts no record: where recovery finds the end of the log
//!   (`InnoDB: End of log at LSN=` that LSN + 16);
//! - a killed server leaves `ibtmp1` behind, and records after its newest checkpoint whenever
//!   anything was written since (the checkpoint block alone can look like a clean one).
//!
//! Either sign of a crash refuses. The log format of MariaDB before 10.8 is not read: for
//! those, `ibtmp1` alone decides.
//!
//! A restart on the same series (a node failure, an eviction that outlasted the grace period)
//! is InnoDB's own crash recovery and must go on: the check only applies when the series that
//! last opened the directory, which it records in [`SERIES_MARKER`], differs from its own.
//! Without the marker (a directory older than the check) the series that created the redo log
//! (its header's creator, `MariaDB 10.11.19`) stands in: versions only go forward, so a log
//! this series created was last opened by it; any other is checked.

use super::build::{DATA_DIR, Inputs, container_security, mount};
use super::names::DATA_VOLUME;
use super::sequence::describe;
use crds::ironic::status::DatabaseUpgradeStatus;
use k8s_openapi::api::core::v1::{Container, ContainerStateTerminated, Pod};

/// The init container's name.
pub const INIT_CONTAINER: &str = "check-clean-stop";
/// The file in the data directory naming the MariaDB series (`MAJOR.MINOR`) that last opened it.
pub const SERIES_MARKER: &str = ".ferrometal-series";
/// The check's exit code when the directory was not stopped cleanly.
pub const EXIT_UNCLEAN: i32 = 3;
/// Every message of a refused roll starts with this, so a halted sequence keeps its reason.
pub(crate) const REFUSED: &str = "the new version was not started: the old server did not stop cleanly";

/// The check, run by bash in the new image. `CHECK_DATA_DIR` and `CHECK_TERMINATION_LOG` are
/// for the tests, which run it against real data directories; the pod sets neither. What it
/// finds goes to the termination log, where the kubelet reports it in the pod's status.
pub const SCRIPT: &str = r#"set -u
export LC_ALL=C
dir="${CHECK_DATA_DIR:-/var/lib/mysql}"
report="${CHECK_TERMINATION_LOG:-/dev/termination-log}"
marker="$dir/.ferrometal-series"
stop() {
  printf '%s\n' "$1" > "$report" 2>/dev/null || true
  echo "check-clean-stop: $1" >&2
  exit "$2"
}
series=$(mariadbd --version 2>/dev/null | sed -n 's/.* Ver \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p')
[ -n "$series" ] || stop "could not read this image's MariaDB version (mariadbd --version)" 4
remember() {
  printf '%s\n' "$series" > "$marker.tmp" && mv -f "$marker.tmp" "$marker" || stop "cannot write $marker" 4
}
if [ ! -e "$dir/ibdata1" ] && [ ! -e "$dir/ib_logfile0" ]; then
  remember
  echo "check-clean-stop: no InnoDB data yet; MariaDB $series initialises it"
  exit 0
fi
last=$(cat "$marker" 2>/dev/null || true)
if [ -z "$last" ]; then
  # No record (a directory older than the check): the redo log names the version that created
  # it. Versions only go forward, so a log created by this series was last opened by it.
  last=$(head -c 48 "$dir/ib_logfile0" 2>/dev/null | tail -c 32 | tr -d '\000' \
    | sed -n 's/^MariaDB \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p')
fi
if [ "$last" = "$series" ]; then
  [ -e "$marker" ] || remember
  echo "check-clean-stop: last opened by MariaDB $series, this series: InnoDB recovers whatever is left"
  exit 0
fi
was="an earlier MariaDB (no record of its series)"
[ -n "$last" ] && was="MariaDB $last"
problems=""
if [ -e "$dir/ibtmp1" ]; then
  problems="the temporary tablespace ibtmp1 is still there (InnoDB removes it at the end of a clean shutdown)"
fi
log="$dir/ib_logfile0"
hex() { od -An -tx1 -j "$1" -N "$2" "$log" 2>/dev/null | tr -d ' \n'; }
case "$(hex 0 4)" in
  50687973|d0687973)
    # The newest checkpoint block: checkpoint LSN, then the end of the log when it was written.
    ckpt=$(hex 4096 8); end=$(hex 4104 8)
    if [[ "$(hex 8192 8)" > "$ckpt" ]]; then ckpt=$(hex 8192 8); end=$(hex 8200 8); fi
    size=$(stat -c %s "$log")
    first=$((16#$(hex 8 8)))
    at() { echo $((12288 + ($1 - first) % (size - 12288))); }
    redo="the redo log goes on past its newest checkpoint (checkpoint LSN $((16#$ckpt)), end LSN $((16#$end)))"
    if [ "$ckpt" != "$end" ]; then
      problems="${problems:+$problems; }$redo: it needs crash recovery"
    else
      # A clean stop's last mini-transaction is the checkpoint itself: FILE_CHECKPOINT (0xfa),
      # page 0:0, its LSN, the end marker and a CRC, 16 bytes. Recovery ends at the next byte
      # unless a record starts there (a mini-transaction never starts with 0 or 1).
      lsn=$((16#$ckpt))
      record=$(hex "$(at "$lsn")" 11)
      next=$(hex "$(at $((lsn + 16)))" 1)
      if [ "$record" != "fa0000$ckpt" ] || [[ "$next" > "01" ]]; then
        problems="${problems:+$problems; }$redo: records follow the checkpoint, it needs crash recovery"
      fi
    fi
    ;;
esac
if [ -n "$problems" ]; then
  stop "the data directory was last stopped by $was without a clean shutdown: $problems" 3
fi
remember
echo "check-clean-stop: stopped cleanly by $was; MariaDB $series may open it"
"#;

/// The init container: the new image, the data volume, the check.
pub(crate) fn init_container(inputs: &Inputs<'_>) -> Container {
    Container {
        name: INIT_CONTAINER.to_string(),
        image: Some(inputs.image.to_string()),
        command: Some(vec!["bash".to_string(), "-c".to_string(), SCRIPT.to_string()]),
        volume_mounts: Some(vec![mount(DATA_VOLUME, DATA_DIR, false)]),
        resources: inputs.managed.resources.clone(),
        security_context: Some(container_security()),
        // The script writes its finding there; its last lines if it died before.
        termination_message_policy: Some("FallbackToLogsOnError".to_string()),
        ..Default::default()
    }
}

/// What the pod's check said, when it did not let the server start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The directory was not stopped cleanly; the check's words.
    Unclean(String),
    /// The check itself failed (exit code, words): the kubelet retries it.
    CheckFailed(i32, String),
}

fn terminated(pod: &Pod) -> Option<&ContainerStateTerminated> {
    let status = pod.status.as_ref()?.init_container_statuses.as_ref()?.iter().find(|c| c.name == INIT_CONTAINER)?;
    let now = status.state.as_ref().and_then(|s| s.terminated.as_ref());
    // After a restart the failure is the last state, the current one waiting in back-off.
    now.or_else(|| status.last_state.as_ref()?.terminated.as_ref()).filter(|t| t.exit_code != 0)
}

/// The check's refusal, read from the pod's status.
pub(crate) fn refusal(pod: &Pod) -> Option<Refusal> {
    let exit = terminated(pod)?;
    let words = exit.message.as_deref().map(str::trim).filter(|m| !m.is_empty());
    let words = crate::kit::condition::bounded_message(words.unwrap_or("no message"));
    Some(if exit.exit_code == EXIT_UNCLEAN {
        Refusal::Unclean(words)
    } else {
        Refusal::CheckFailed(exit.exit_code, words)
    })
}

/// The message of a roll the check refused: what happened and what to do.
pub(crate) fn refused_message(upgrade: &DatabaseUpgradeStatus, pod: &str, finding: &str) -> String {
    let from = upgrade.from_image.as_deref().unwrap_or("the old image");
    format!(
        "{REFUSED} ({finding}). No data was touched: {} stopped before the new version opened the data \
         directory. What to do: set spec.database.managed back to the old version ({from}) and delete pod \
         {pod} (a StatefulSet does not replace a pod that never became ready); the old server starts, \
         recovers its data and runs normally. Raise spec.database.managed.\
         terminationGracePeriodSeconds if its slow shutdown was cut short, then ask for the new version again",
        describe(upgrade)
    )
}

/// Whether a failed step's message is a refused roll.
pub(crate) fn is_refusal(message: &str) -> bool {
    message.starts_with(REFUSED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ContainerState, ContainerStateWaiting, ContainerStatus, PodStatus};

    fn pod(state: ContainerState, last: Option<ContainerState>) -> Pod {
        Pod {
            status: Some(PodStatus {
                init_container_statuses: Some(vec![ContainerStatus {
                    name: INIT_CONTAINER.into(),
                    state: Some(state),
                    last_state: last,
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn exited(code: i32, message: &str) -> ContainerState {
        ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: code,
                message: Some(message.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn backing_off() -> ContainerState {
        ContainerState {
            waiting: Some(ContainerStateWaiting { reason: Some("CrashLoopBackOff".into()), message: None }),
            ..Default::default()
        }
    }

    #[test]
    fn an_unclean_directory_is_a_refusal_now_and_in_back_off() {
        let words = "the data directory was last stopped by MariaDB 10.11 without a clean shutdown: ibtmp1\n";
        let expected = Some(Refusal::Unclean(words.trim().to_string()));
        assert_eq!(refusal(&pod(exited(EXIT_UNCLEAN, words), None)), expected);
        assert_eq!(refusal(&pod(backing_off(), Some(exited(EXIT_UNCLEAN, words)))), expected);
    }

    #[test]
    fn a_passed_or_running_check_is_no_refusal_and_a_broken_one_is_told_apart() {
        assert_eq!(refusal(&pod(exited(0, "ok"), None)), None);
        assert_eq!(refusal(&pod(backing_off(), None)), None);
        assert_eq!(refusal(&Pod::default()), None);
        assert_eq!(refusal(&pod(exited(4, ""), None)), Some(Refusal::CheckFailed(4, "no message".into())));
    }

    #[test]
    fn the_refused_message_says_what_to_do_and_is_recognised() {
        let upgrade = DatabaseUpgradeStatus {
            from_image: Some("mariadb:10.11".into()),
            to_image: Some("mariadb:11.4".into()),
            ..Default::default()
        };
        let message = refused_message(&upgrade, "ironic-mariadb-0", "ibtmp1 is still there");
        assert!(is_refusal(&message), "{message}");
        for part in [
            "ibtmp1 is still there",
            "back to the old version (mariadb:10.11) and delete pod ironic-mariadb-0",
            "terminationGracePeriodSeconds",
        ] {
            assert!(message.contains(part), "{part} in {message}");
        }
        assert!(!is_refusal("mariadb-upgrade Job failed"));
    }

    #[test]
    fn the_script_checks_the_data_volume_and_knows_both_log_formats() {
        assert!(SCRIPT.contains("/var/lib/mysql") && DATA_DIR == "/var/lib/mysql");
        assert!(SCRIPT.contains(SERIES_MARKER));
        assert!(SCRIPT.contains(&format!("\" {EXIT_UNCLEAN}\n")));
        // "Phys", the 10.8+ redo log, plain and encrypted.
        assert!(SCRIPT.contains("50687973|d0687973"));
    }
}
