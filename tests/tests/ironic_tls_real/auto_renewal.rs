//! The Auto CA renewed while a client keeps calling the API: every call's handshake verifies
//! the certificate a pod serves at that moment against the bundle the client holds at that
//! moment.

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

/// How long a CA rotation may take: three rollouts of the one pod (each waits for the probes,
/// 30 to 60 s) and the settle times.
const ROTATION_TIMEOUT: Duration = Duration::from_secs(600);
/// The settle time of each step of the CA's renewal in these tests; the client re-reads the
/// bundle five times within it.
const SETTLE: Duration = Duration::from_secs(5);
/// How often the client calls the API.
const CALL_EVERY: Duration = Duration::from_millis(100);

/// The content hash of a Deployment's pod template, and whether its one pod runs it and is
/// available.
fn rollout(deployment: &Deployment) -> (String, bool) {
    let template =
        deployment.spec.as_ref().and_then(|s| s.template.metadata.as_ref()).and_then(|m| m.annotations.as_ref());
    let hash = template.and_then(|a| a.get("ironic.ferrometal.io/content-hash")).cloned().unwrap_or_default();
    let status = deployment.status.clone().unwrap_or_default();
    let current = status.observed_generation == deployment.metadata.generation;
    let one = |n: Option<i32>| n == Some(1);
    (hash, current && one(status.replicas) && one(status.updated_replicas) && one(status.available_replicas))
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
pub fn renewal() -> operator::ironic::tls::auto::Renewal {
    operator::ironic::tls::auto::Renewal { at: renewal_after(Duration::from_secs(150)), settle: SETTLE }
}

pub async fn the_auto_ca_is_renewed_while_a_client_keeps_calling_the_api_and_no_handshake_fails_on_the_certificate(
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

    // Until the bundle holds the new CA alone and the pod runs the template of that state:
    // one whose content hash was not seen while the renewal was under way.
    let deployments = env.api::<Deployment>();
    let deadline = Instant::now() + ROTATION_TIMEOUT;
    let mut during = HashSet::new();
    let new_ca = loop {
        anyhow::ensure!(Instant::now() < deadline, "the renewal did not finish: {}", env.pod_report().await);
        let ca = secrets.get(&format!("{NAME}-tls-ca")).await?.data.unwrap_or_default();
        let under_way = ["next-ca.crt", "retired-ca.crt"].iter().any(|k| ca.get(*k).is_some_and(|v| !v.0.is_empty()));
        let (template, rolled_out) = rollout(&deployments.get(&format!("{NAME}-service")).await?);
        let published = subjects(&env.published_ca(NAME).await?);
        if under_way {
            during.insert(template);
        } else if !during.is_empty() && !during.contains(&template) && rolled_out && published != old_ca {
            break published;
        }
        tokio::time::sleep(POLL).await;
    };
    // The last rollout's pod, called for a few seconds more.
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop.send_replace(true);
    let seen = client.await??;
    eprintln!("renewed {:?} after the start", started.elapsed());

    let untrusted: Vec<_> = seen.calls.iter().filter(|(_, c)| matches!(c, Call::Untrusted(_))).collect();
    assert!(untrusted.is_empty(), "handshakes failed on the certificate: {untrusted:?}");
    let refused: Vec<_> =
        seen.calls.iter().filter(|(_, c)| matches!(c, Call::Answered { status, .. } if *status != 200)).collect();
    assert!(refused.is_empty(), "calls answered with an error: {refused:?}");
    // Why calls found no pod, by the first words of the reason ("connect: Connection refused").
    let mut unreachable = std::collections::BTreeMap::<String, usize>::new();
    for (_, call) in &seen.calls {
        if let Call::Unreachable(why) = call {
            *unreachable.entry(why.split(" (").next().unwrap_or(why).to_string()).or_default() += 1;
        }
    }
    let issuers: Vec<&str> = seen
        .calls
        .iter()
        .filter_map(|(_, c)| match c {
            Call::Answered { issuer, .. } => Some(issuer.as_str()),
            _ => None,
        })
        .collect();
    eprintln!(
        "{} calls, {} answered, no pod: {unreachable:?}; bundles {:?}",
        seen.calls.len(),
        issuers.len(),
        seen.bundles
    );
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
