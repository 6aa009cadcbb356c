//! The Auto CA renewed while a client keeps calling the API: every call's handshake verifies
//! the certificate the pod serves at that moment against the bundle the client holds at that
//! moment. The one pod reloads each certificate in place: it is never replaced nor restarted,
//! so every call is answered.

use super::{Call, NAME, assert_credentials, call, ironic, issuer, served, subjects};
use crate::real_ironic::{POLL, RealIronic};
use anyhow::Context;
use crds::ironic::Ironic;
use ferrometal_tests::wait;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How long a CA rotation may take: the settle times, the kubelet's refresh of the mounted
/// Secret (a minute or so) and the operator's next look at what the API presents (its progress
/// interval, 30 s).
const ROTATION_TIMEOUT: Duration = Duration::from_secs(600);
/// The settle time of each step of the CA's renewal in these tests; the client re-reads the
/// bundle five times within it.
const SETTLE: Duration = Duration::from_secs(5);
/// How often the client calls the API.
const CALL_EVERY: Duration = Duration::from_millis(100);

/// The content hash of a Deployment's pod template.
fn template_hash(deployment: &Deployment) -> String {
    let template =
        deployment.spec.as_ref().and_then(|s| s.template.metadata.as_ref()).and_then(|m| m.annotations.as_ref());
    template.and_then(|a| a.get("ironic.ferrometal.io/content-hash")).cloned().unwrap_or_default()
}

/// What the client saw through the rotation.
#[derive(Debug, Default)]
struct Seen {
    calls: Vec<(Instant, Call)>,
    /// Each bundle the ConfigMap held, in order, as its CAs' subjects.
    bundles: Vec<Vec<String>>,
}

/// Calls `/v1` every [`CALL_EVERY`] until `stop`, re-reading the published bundle every
/// second, and every tenth call `/v1/nodes` with the credentials.
async fn keep_calling(
    config_maps: Api<ConfigMap>,
    address: SocketAddr,
    host: String,
    credentials: (String, String),
    stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<Seen> {
    let mut seen = Seen::default();
    let (mut bundle, mut read) = (String::new(), Instant::now() - Duration::from_secs(2));
    let mut calls = 0u64;
    while !*stop.borrow() {
        if read.elapsed() >= Duration::from_secs(1) {
            let map = config_maps.get_opt(&format!("{NAME}-ca-bundle")).await?;
            bundle = map.and_then(|m| m.data?.get("ca.crt").cloned()).unwrap_or_default();
            read = Instant::now();
            let cas = subjects(&bundle);
            if !cas.is_empty() && seen.bundles.last() != Some(&cas) {
                seen.bundles.push(cas);
            }
        }
        if bundle.is_empty() {
            // Nothing published yet: a client has nothing to trust.
            tokio::time::sleep(CALL_EVERY).await;
            continue;
        }
        calls += 1;
        let (path, auth) = match calls % 10 {
            0 => ("/v1/nodes", Some((credentials.0.as_str(), credentials.1.as_str()))),
            _ => ("/v1", None),
        };
        seen.calls.push((Instant::now(), call(address, &host, &bundle, path, auth).await));
        tokio::time::sleep(CALL_EVERY).await;
    }
    Ok(seen)
}

/// The renewal point that makes a CA of one day (five minutes of it backdated) get its
/// successor `after` its making.
fn renewal_after(after: Duration) -> f64 {
    let backdate = 300.0;
    (backdate + after.as_secs_f64()) / (86_400.0 + backdate)
}

/// The operator's Auto CA renewal for these tests: the first CA lives a day and is renewed two
/// and a half minutes after its making, time for the pod to become Ready and the client to call
/// it first (were it later, the pod of the first step would still serve the first CA's
/// certificate); each step settles for [`SETTLE`].
pub fn renewal() -> operator::testing::ironic::tls::auto::Renewal {
    operator::testing::ironic::tls::auto::Renewal { at: renewal_after(Duration::from_secs(150)), settle: SETTLE }
}

pub async fn the_auto_ca_is_renewed_while_a_client_keeps_calling_the_api_and_the_one_pod_answers_every_call(
    env: RealIronic,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let auto = json!({"auto": {"caValidityDays": 1, "certificateValidityDays": 1}});
    let created = Instant::now();
    env.api::<Ironic>().create(&PostParams::default(), &serde_json::from_value(ironic(&env.ns, auto))?).await?;

    // The first CA, as the operator stored it; then its successor's lifetime goes back to ten
    // years, so that it is not due again within the test.
    let secrets = env.api::<Secret>();
    let first = wait::until("the first CA", Duration::from_secs(60), POLL, || {
        let secrets = secrets.clone();
        async move { secrets.get_opt(&format!("{NAME}-tls-ca")).await.ok().flatten()?.data?.get("ca.crt").cloned() }
    })
    .await?;
    let old_ca = subjects(&String::from_utf8(first.0)?);
    let patch = json!({"spec": {"tls": {"auto": {"caValidityDays": 3650}}}});
    env.api::<Ironic>().patch(NAME, &PatchParams::default(), &Patch::Merge(&patch)).await?;

    // The client, from before the pod is Ready until the renewal is over.
    let host = format!("{NAME}.{}.svc", env.ns);
    let address =
        wait::until("the Service", Duration::from_secs(60), POLL, || async { env.service_address(NAME).await.ok() })
            .await?;
    let credentials =
        wait::until("the credentials", Duration::from_secs(60), POLL, || async { env.credentials(NAME).await.ok() })
            .await?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let client = tokio::spawn(keep_calling(env.api(), address, host.clone(), credentials, stopped));
    env.until_ready(NAME).await?;
    eprintln!("Ironic Ready {:?} after its creation, {:?} after the start", created.elapsed(), started.elapsed());
    let pods = env.incarnations().await?;
    let deployments = env.api::<Deployment>();
    let workload = format!("{NAME}-service");
    let template = template_hash(&deployments.get(&workload).await?);

    // Until the renewal is over: the bundle holds the new CA alone and the pod serves its
    // certificate. The pod's template never changes on the way: nothing rolls it.
    let deadline = Instant::now() + ROTATION_TIMEOUT;
    let mut templates = HashSet::from([template.clone()]);
    let new_ca = loop {
        anyhow::ensure!(Instant::now() < deadline, "the renewal did not finish: {}", env.pod_report().await);
        let ca = secrets.get(&format!("{NAME}-tls-ca")).await?.data.unwrap_or_default();
        let under_way = ["next-ca.crt", "retired-ca.crt"].iter().any(|k| ca.get(*k).is_some_and(|v| !v.0.is_empty()));
        templates.insert(template_hash(&deployments.get(&workload).await?));
        let bundle = env.published_ca(NAME).await?;
        let published = subjects(&bundle);
        let serves_new = served(address, &host, &bundle).await.is_ok_and(|der| published.contains(&issuer(&der)));
        if !under_way && published.len() == 1 && published != old_ca && serves_new {
            break published;
        }
        tokio::time::sleep(POLL).await;
    };
    // The pod called for a few seconds more.
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop.send_replace(true);
    let seen = client.await??;
    eprintln!("renewed {:?} after the start", started.elapsed());
    assert_eq!(templates, HashSet::from([template]), "the pod template never changed");
    assert_eq!(env.incarnations().await?, pods, "the one pod served throughout: never replaced, never restarted");

    let untrusted: Vec<_> = seen.calls.iter().filter(|(_, c)| matches!(c, Call::Untrusted(_))).collect();
    assert!(untrusted.is_empty(), "handshakes failed on the certificate: {untrusted:?}");
    let refused: Vec<_> =
        seen.calls.iter().filter(|(_, c)| matches!(c, Call::Answered { status, .. } if *status != 200)).collect();
    assert!(refused.is_empty(), "calls answered with an error: {refused:?}");
    // From the first answer on (before it, the pod was starting): every call answered.
    let first = seen.calls.iter().position(|(_, c)| matches!(c, Call::Answered { .. })).context("an answer")?;
    let unanswered: Vec<_> = seen.calls[first..].iter().filter(|(_, c)| matches!(c, Call::Unreachable(_))).collect();
    assert!(unanswered.is_empty(), "calls found no pod or were cut: {unanswered:?}");
    let issuers: Vec<&str> = seen
        .calls
        .iter()
        .filter_map(|(_, c)| match c {
            Call::Answered { issuer, .. } => Some(issuer.as_str()),
            _ => None,
        })
        .collect();
    eprintln!("{} calls, {} answered; bundles {:?}", seen.calls.len(), issuers.len(), seen.bundles);
    // The client held the old CA alone, then the old and the new together, then the new alone.
    let expected = vec![old_ca.clone(), [old_ca.clone(), new_ca.clone()].concat(), new_ca.clone()];
    assert_eq!(seen.bundles, expected, "the bundles published, in order");
    // Pods served the old CA's certificate, then the new one's, and nothing else.
    assert_eq!(issuers.first().copied(), Some(old_ca[0].as_str()), "answered before the renewal");
    assert_eq!(issuers.last().copied(), Some(new_ca[0].as_str()), "answered after it, from the new CA");
    let switched = issuers.iter().position(|i| *i == new_ca[0]).context("the new CA served")?;
    assert!(issuers[switched..].iter().all(|i| *i == new_ca[0]), "the old CA's certificate came back");

    let bundle = env.published_ca(NAME).await?;
    assert_eq!(issuer(&served(address, &host, &bundle).await?), new_ca[0], "the pod serves from the new CA");
    assert_credentials(&env, address, &host, &bundle).await?;
    let ca = secrets.get(&format!("{NAME}-tls-ca")).await?.data.unwrap_or_default();
    let empty = |key: &str| ca.get(key).is_none_or(|v| v.0.is_empty());
    assert!(empty("next-ca.crt") && empty("retired-ca.crt"), "the renewal is over");
    eprintln!("done {:?} after the start", started.elapsed());
    Ok(())
}
