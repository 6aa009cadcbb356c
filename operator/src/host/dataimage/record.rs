//! The record in Ironic of what ferrometal put in a node's virtual CD, and the pure decision of
//! the host's data image step from it.
//!
//! Ironic's virtual media read (`GET …/vmedia`) tells whether the CD holds an image, never
//! which (the BMC has Ironic's copy under Ironic's own name). So the host controller writes in
//! the node's `extra.ferrometal_data_image`, **before** it asks Ironic to attach, the URL it
//! attaches, and removes it once it saw the CD empty. A crash at any point thus leaves a record
//! that the next step reads against what the CD holds: a record whose image is not in the CD is
//! dropped (the attach never reached Ironic, failed, or a detach or an undeploy ejected it), and
//! an image in the CD without a record is not ours and never ejected or replaced. The record
//! also keeps the last failure to attach or detach, with how many in a row, for the
//! `DataImage`'s status: Ironic's `last_error` is cleared by the next power change. Ironic ejects
//! the CD itself when it tears a deployment down: the host controller drops the record before
//! every undeploy it asks for, so a record never outlives the deployment it was made in.

use ironic_client::PatchOperation;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The key under the node's `extra`.
pub(crate) const RECORD: &str = "ferrometal_data_image";

/// How Ironic's conductor begins the `last_error` of a failed attach and of a failed detach.
const ATTACH_FAILED: &str = "Could not attach device";
const DETACH_FAILED: &str = "Could not detach device";

/// Why an attach recorded shows nothing in the CD when Ironic gave no reason.
const NOT_INSERTED: &str = "the attach did not complete: the host's virtual CD is empty (a request lost with a \
                            restart, or the BMC did not mount it)";

/// Why an image ejected is still in the CD when Ironic gave no reason.
const NOT_EJECTED: &str = "the eject did not complete: the host's virtual CD still holds the image (the BMC \
                           ignored it); tried again at the next power on";

/// The longest failure message kept: the record lives in Ironic's node.
const MAX_MESSAGE: usize = 1024;

/// What the node's record says.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Record {
    /// The URL of the image ferrometal attached (or asked Ironic to attach).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attached: Option<String>,
    /// The last attach or detach that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// An eject of it was asked for: still in the CD after, the eject failed (a BMC that
    /// ignored it), never asked for again within the same power on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ejecting: bool,
}

/// A failure to attach or detach.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Failure {
    /// The URL wanted when it failed.
    pub url: String,
    pub message: String,
    /// How many failed in a row for this URL.
    pub count: u32,
}

impl Record {
    /// The record in a node's `extra`; anything that does not read strictly as one (an
    /// administrator's edit) counts as none, so nothing is ever ejected on its word.
    pub(crate) fn of(extra: &Map<String, Value>) -> Self {
        let record: Option<Record> = extra.get(RECORD).and_then(|v| serde_json::from_value(v.clone()).ok());
        record.filter(Record::bounded).unwrap_or_default()
    }

    /// Nothing longer than what the host controller writes: the record is copied into status.
    fn bounded(&self) -> bool {
        let url = |u: &str| u.len() <= crds::dataimage::MAX_URL_LENGTH;
        self.attached.as_deref().is_none_or(url)
            && self.failure.as_ref().is_none_or(|f| url(&f.url) && f.message.chars().count() <= MAX_MESSAGE)
    }

    /// The patch that writes this record (or removes it when empty) in a node whose `extra`
    /// is `extra`.
    pub(crate) fn patch(&self, extra: &Map<String, Value>) -> Vec<PatchOperation> {
        let path = format!("/extra/{RECORD}");
        if *self == Record::default() {
            return if extra.contains_key(RECORD) { vec![PatchOperation::remove(path)] } else { Vec::new() };
        }
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        vec![PatchOperation::add(path, value)]
    }

    /// This record with a refusal of Ironic's (or an invalid URL) as the failure of `url`: what
    /// it says is attached stays (an attach that errored may still have happened: the next
    /// power on sees the CD).
    pub(crate) fn refused(&self, url: &str, message: &str) -> Record {
        Record { failure: Some(self.failed(url, message)), ..self.clone() }
    }

    fn failed(&self, url: &str, message: &str) -> Failure {
        // Bounded as the record is read back: an overlong URL (admitted without the webhook)
        // must not make the whole record unreadable.
        let url: String = url.chars().take(crds::dataimage::MAX_URL_LENGTH).collect();
        let count = match &self.failure {
            Some(f) if f.url == url => f.count.saturating_add(1),
            _ => 1,
        };
        let message: String = message.chars().take(MAX_MESSAGE).collect();
        Failure { url, message, count }
    }
}

/// What the node shows when the step runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shown<'a> {
    pub record: &'a Record,
    /// The virtual CD holds an image.
    pub inserted: bool,
    pub last_error: Option<&'a str>,
}

/// What the step does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Move {
    /// Write `record` (when it differs), then ask Ironic to attach `url`.
    Attach { record: Record, url: String },
    /// Write `record` (marked ejecting), then ask Ironic to eject the CD (the record is dropped
    /// once the CD is seen empty).
    Detach { record: Record },
    /// Write `record`, then look again.
    Again { record: Record },
    /// Nothing more this time: the host boots as it is (with `record` written).
    Settled { record: Record },
}

/// The step's move: `wanted` is the image the host's `DataImage` asks for (`None` once it is
/// being deleted).
pub(crate) fn decide(wanted: Option<&str>, shown: Shown<'_>) -> Move {
    let record = shown.record;
    let error = shown.last_error.unwrap_or_default();
    match (shown.inserted, record.attached.as_deref()) {
        // The wanted image is not in the CD after its attach: failed (Ironic says why, or the
        // BMC shows nothing), or never asked for (a crash between the record and the request).
        // Recorded either way, so that the host boots now and the next power on tries again:
        // never an attach after an attach within one power on.
        (false, Some(url)) if wanted == Some(url) => {
            let message = if error.starts_with(ATTACH_FAILED) { error } else { NOT_INSERTED };
            let failure = Some(record.failed(url, message));
            Move::Settled { record: Record { attached: None, failure, ejecting: false } }
        }
        // Ours, no longer wanted, is out of the CD (our eject): the record goes, then the wanted
        // image, if any, is attached.
        (false, Some(_)) => Move::Again { record: Record { attached: None, ejecting: false, ..record.clone() } },
        (false, None) => match wanted {
            Some(url) => {
                let next = Record { attached: Some(url.to_string()), ..record.clone() };
                Move::Attach { record: next, url: url.to_string() }
            }
            // Nothing wanted: a failure of an image no longer wanted means nothing.
            None => Move::Settled { record: Record::default() },
        },
        (true, Some(url)) if wanted == Some(url) => {
            let failure = record.failure.clone().filter(|f| f.url != url);
            Move::Settled { record: Record { attached: Some(url.to_string()), failure, ejecting: false } }
        }
        // Still in the CD after our eject: failed (Ironic says why, or the BMC ignored it).
        (true, Some(url)) if record.ejecting || error.starts_with(DETACH_FAILED) => {
            let message = if error.starts_with(DETACH_FAILED) { error } else { NOT_EJECTED };
            let failure = Some(record.failed(wanted.unwrap_or(url), message));
            Move::Settled { record: Record { failure, ejecting: false, ..record.clone() } }
        }
        (true, Some(_)) => Move::Detach { record: Record { ejecting: true, ..record.clone() } },
        (true, None) => match wanted {
            Some(url) => {
                let message = "the host's virtual CD holds an image ferrometal did not attach (a live ISO's, or \
                               one inserted by hand); it is neither ejected nor replaced";
                let failure = Some(record.failed(url, message));
                Move::Settled { record: Record { attached: None, failure, ejecting: false } }
            }
            None => Move::Settled { record: record.clone() },
        },
    }
}
