use super::record::{Failure, Move, RECORD, Record, Shown, decide};
use serde_json::json;

const URL: &str = "http://images.example/data.iso";
const OTHER: &str = "http://images.example/other.iso";

fn ours(url: &str) -> Record {
    Record { attached: Some(url.into()), ..Record::default() }
}

fn shown<'a>(record: &'a Record, inserted: bool, last_error: Option<&'a str>) -> Shown<'a> {
    Shown { record, inserted, last_error }
}

#[test]
fn an_empty_cd_gets_the_wanted_image_recorded_before_it_is_attached() {
    let moved = decide(Some(URL), shown(&Record::default(), false, None));
    assert_eq!(moved, Move::Attach { record: ours(URL), url: URL.into() });
}

#[test]
fn the_wanted_image_in_the_cd_is_settled_and_a_failure_of_it_forgotten() {
    let failed = Record { failure: Some(Failure { url: URL.into(), message: "x".into(), count: 2 }), ..ours(URL) };
    assert_eq!(decide(Some(URL), shown(&failed, true, None)), Move::Settled { record: ours(URL) });
}

#[test]
fn a_failed_attach_is_recorded_counted_and_the_host_boots_without_it() {
    let error = Some("Could not attach device cdrom to node n: 404");
    let Move::Settled { record } = decide(Some(URL), shown(&ours(URL), false, error)) else { panic!("settled") };
    assert_eq!(record.attached, None);
    assert_eq!(record.failure.as_ref().map(|f| f.count), Some(1));
    // The next reboot tries again, and a second failure counts two.
    let Move::Attach { record: retried, .. } = decide(Some(URL), shown(&record, false, None)) else { panic!() };
    let Move::Settled { record } = decide(Some(URL), shown(&retried, false, error)) else { panic!() };
    assert_eq!(record.failure.map(|f| f.count), Some(2));
}

#[test]
fn a_wanted_image_missing_from_the_cd_after_its_attach_is_a_failure_never_a_second_attach() {
    // A crash between the record and the attach request, or a BMC that did not mount it.
    let Move::Settled { record } = decide(Some(URL), shown(&ours(URL), false, Some("an older power error"))) else {
        panic!("settled: the host boots")
    };
    assert_eq!(record.attached, None);
    assert!(record.failure.is_some_and(|f| f.message.contains("did not complete")));
}

#[test]
fn our_image_out_of_the_cd_and_no_longer_wanted_is_forgotten_then_the_wanted_one_attached() {
    assert_eq!(decide(None, shown(&ours(URL), false, None)), Move::Again { record: Record::default() });
    assert_eq!(decide(Some(OTHER), shown(&ours(URL), false, None)), Move::Again { record: Record::default() });
    assert_eq!(
        decide(Some(OTHER), shown(&Record::default(), false, None)),
        Move::Attach { record: ours(OTHER), url: OTHER.into() }
    );
}

#[test]
fn our_image_no_longer_wanted_is_ejected_once_and_a_failed_eject_recorded() {
    let ejecting = Record { ejecting: true, ..ours(URL) };
    assert_eq!(decide(Some(OTHER), shown(&ours(URL), true, None)), Move::Detach { record: ejecting.clone() });
    assert_eq!(decide(None, shown(&ours(URL), true, None)), Move::Detach { record: ejecting.clone() });
    // Still in the CD after the eject, without a word from Ironic (a BMC that ignored it): a
    // failure, and the host boots; never a second eject at the same power on.
    let Move::Settled { record } = decide(None, shown(&ejecting, true, None)) else { panic!("settled") };
    assert!(!record.ejecting && record.attached.as_deref() == Some(URL));
    assert!(record.failure.is_some_and(|f| f.message.contains("eject did not complete")));
    let error = Some("Could not detach device(s) cdrom from node n: boom");
    let Move::Settled { record } = decide(None, shown(&ours(URL), true, error)) else { panic!("settled") };
    assert_eq!(record.attached.as_deref(), Some(URL), "still attached");
    assert!(record.failure.is_some());
}

#[test]
fn an_image_ferrometal_did_not_attach_is_never_ejected_or_replaced() {
    let Move::Settled { record } = decide(Some(URL), shown(&Record::default(), true, None)) else { panic!() };
    assert_eq!(record.attached, None);
    assert!(record.failure.is_some_and(|f| f.message.contains("did not attach")));
    assert_eq!(decide(None, shown(&Record::default(), true, None)), Move::Settled { record: Record::default() });
}

#[test]
fn nothing_wanted_and_nothing_in_the_cd_settles_with_no_record() {
    let failed =
        Record { failure: Some(Failure { url: URL.into(), message: "x".into(), count: 1 }), ..Record::default() };
    assert_eq!(decide(None, shown(&failed, false, None)), Move::Settled { record: Record::default() });
}

#[test]
fn only_a_strict_record_counts_and_an_empty_one_is_removed() {
    let extra = |v| json!({ RECORD: v }).as_object().cloned().unwrap_or_default();
    assert_eq!(Record::of(&extra(json!({"attached": URL}))), ours(URL));
    let long = format!("http://h/{}", "a".repeat(crds::dataimage::MAX_URL_LENGTH));
    for bad in [json!("x"), json!({"attached": 1}), json!({"attached": URL, "by": "admin"}), json!({"attached": long})]
    {
        assert_eq!(Record::of(&extra(bad.clone())), Record::default(), "{bad}");
    }
    assert_eq!(Record::default().patch(&extra(json!({}))).len(), 1, "removed");
    assert!(Record::default().patch(&serde_json::Map::new()).is_empty(), "nothing to remove");
    assert_eq!(ours(URL).patch(&serde_json::Map::new()).len(), 1);
}

#[test]
fn a_hostile_failure_count_saturates() {
    let failed =
        Record { failure: Some(Failure { url: URL.into(), message: String::new(), count: u32::MAX }), ..ours(URL) };
    let Move::Settled { record } = decide(Some(URL), shown(&failed, false, Some("Could not attach device cdrom")))
    else {
        panic!()
    };
    assert_eq!(record.failure.map(|f| f.count), Some(u32::MAX));
}

#[test]
fn an_overlong_url_is_recorded_bounded_and_the_record_stays_readable() {
    let long = format!("http://h/{}", "a".repeat(3 * crds::dataimage::MAX_URL_LENGTH));
    let record = ours(URL).refused(&long, "invalid");
    assert_eq!(record.attached.as_deref(), Some(URL), "what is attached stays");
    let extra = serde_json::json!({ RECORD: record }).as_object().cloned().unwrap_or_default();
    assert_eq!(Record::of(&extra), record, "read back whole");
}
