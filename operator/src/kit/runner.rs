//! Running a controller: one kube-runtime `Controller` per watched scope, each reconcile in
//! its own tracing span, timed and counted, failures logged with their causes, counted by a
//! metric label per error variant, and retried with a per-object exponential backoff.

use super::backoff::Backoff;
use super::context::Scope;
use super::error::chain;
use crate::metrics::Metrics;
use futures::StreamExt;
use futures::future::{BoxFuture, FutureExt};
use kube::runtime::controller::{Action, Controller, Error as ControllerError};
use kube::runtime::reflector::{self, Store};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use std::error::Error as StdError;
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// An error with a short, stable label for the failure metric: one per variant.
pub(crate) trait MetricLabel {
    fn metric_label(&self) -> &'static str;
}

/// What the runner needs to instrument a controller's reconciles.
pub(crate) struct Runner {
    /// The controller's name: the metric label, the span's field, the log's.
    pub controller: &'static str,
    pub metrics: Arc<Metrics>,
    pub backoff: Backoff,
}

/// A controller's reconcile, as the runner calls it.
pub(crate) trait Reconcile: Send + Sync + Sized + 'static {
    type Object: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static;
    type Error: StdError + MetricLabel + Send + Sync + 'static;

    fn runner(&self) -> &Runner;

    /// Reconciles one object. Errors are worth retrying; what a user must fix is status.
    fn reconcile(self: Arc<Self>, object: Arc<Self::Object>) -> BoxFuture<'static, Result<Action, Self::Error>>;
}

fn key<K: Resource>(object: &K) -> String {
    format!("{}/{}", object.namespace().unwrap_or_default(), object.name_any())
}

async fn instrumented<R: Reconcile>(object: Arc<R::Object>, ctx: Arc<R>) -> Result<Action, R::Error> {
    let runner = ctx.runner();
    let (controller, metrics) = (runner.controller, runner.metrics.clone());
    let _timer = metrics.reconcile(controller);
    let key = key(object.as_ref());
    let span = tracing::info_span!(
        "reconcile",
        controller,
        namespace = %object.namespace().unwrap_or_default(),
        name = %object.name_any()
    );
    let result = ctx.clone().reconcile(object).instrument(span).await;
    if result.is_ok() {
        ctx.runner().backoff.succeeded(&key);
    }
    result
}

fn error_policy<R: Reconcile>(object: Arc<R::Object>, err: &R::Error, ctx: Arc<R>) -> Action {
    let runner = ctx.runner();
    let key = key(object.as_ref());
    let delay = runner.backoff.failed(&key);
    runner.metrics.reconcile_failed(runner.controller, err.metric_label());
    tracing::warn!(
        controller = runner.controller,
        object = %key,
        error = %chain(err),
        retry_in = ?delay,
        "reconcile failed; retrying"
    );
    Action::requeue(delay)
}

/// Runs `controller` with `ctx`'s reconcile until `shutdown`.
pub(crate) async fn drive<R: Reconcile>(controller: Controller<R::Object>, ctx: Arc<R>, shutdown: CancellationToken)
where
    R::Object: Resource<DynamicType = ()>,
    <R::Object as Resource>::DynamicType: Hash + Eq + Clone + Debug + Unpin,
{
    let name = ctx.runner().controller;
    let store = controller.store();
    let run = controller
        .graceful_shutdown_on(shutdown.clone().cancelled_owned())
        .run(instrumented::<R>, error_policy::<R>, ctx)
        .for_each(move |result| async move {
            match result {
                Ok(_) => {}
                // Logged and counted by the error policy.
                Err(ControllerError::ReconcilerFailed(..)) => {}
                Err(ControllerError::ObjectNotFound(object)) => {
                    tracing::debug!(controller = name, %object, "the object to reconcile is gone")
                }
                Err(other) => tracing::warn!(controller = name, error = %chain(&other), "controller"),
            }
        });
    tokio::select! {
        () = run => {}
        () = stopped_before_sync(store, shutdown) => {
            tracing::debug!(controller = name, "stopped before its cache synced; no reconcile had started")
        }
    }
}

/// Completes when `shutdown` comes before `store` is ready, and never otherwise.
///
/// kube-runtime holds every reconcile until the watched kind's store is ready, and its graceful
/// shutdown stops the watches at once; a shutdown before the first list completed would leave
/// the held runner waiting for a readiness that can no longer come, until the supervisor's grace
/// runs out and aborts the task. With no reconcile started there is nothing to wait for.
async fn stopped_before_sync<K>(store: Store<K>, shutdown: CancellationToken)
where
    K: reflector::Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    shutdown.cancelled().await;
    if store.wait_until_ready().now_or_never().is_none() {
        return;
    }
    std::future::pending().await
}

/// Why a controller stopped before it was asked to: the task of one of its scopes failed
/// (panicked). The one such error of every controller.
#[derive(Debug, thiserror::Error)]
#[error("a {controller} controller task failed")]
pub(crate) struct Stopped {
    pub controller: &'static str,
    #[source]
    pub source: tokio::task::JoinError,
}

/// Runs `run(scope)` for every scope of `controller` and waits for all of them; a task that
/// panicked is an error, so that the runtime stops the process instead of running half a
/// controller.
///
/// `run` is called for every scope before any of the futures it returns starts, so what it
/// sets up synchronously per scope (a cache registered with shared state) is complete by the
/// time the first reconcile of any scope runs.
pub(crate) async fn fan_out<F, Fut>(controller: &'static str, scopes: Vec<Scope>, run: F) -> Result<(), Stopped>
where
    F: Fn(Scope) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let futures: Vec<Fut> = scopes.into_iter().map(run).collect();
    let mut tasks = JoinSet::new();
    for future in futures {
        tasks.spawn(future);
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(|source| Stopped { controller, source })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::Context;
    use std::sync::Mutex;

    async fn context(namespaces: &[&str]) -> Context {
        // A client that is never called: only the scopes are used.
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("url"));
        Context {
            client: kube::Client::try_from(config).expect("client"),
            metrics: Arc::new(Metrics::new()),
            namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
            identity: "test".into(),
            features: Default::default(),
            ironic_namespaces: crds::ironic::IronicNamespaces::Any,
            host_pools: Default::default(),
            host_access: Default::default(),
            reserved_account: None,
        }
    }

    #[tokio::test]
    async fn every_scope_is_set_up_before_any_runs() {
        let ctx = context(&["a", "b", "c"]).await;
        let set_up = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        fan_out("test", ctx.scopes(), |scope| {
            set_up.lock().expect("lock").push(scope.to_string());
            let (set_up, seen) = (set_up.clone(), seen.clone());
            async move {
                let count = set_up.lock().expect("lock").len();
                seen.lock().expect("lock").push(count);
            }
        })
        .await
        .expect("no task panicked");
        assert_eq!(set_up.lock().expect("lock").len(), 3);
        assert_eq!(*seen.lock().expect("lock"), [3, 3, 3], "each scope ran only once all were set up");
    }

    /// A controller of ConfigMaps whose reconcile is never reached in these tests.
    struct Idle {
        runner: Runner,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("never")]
    struct Never;

    impl MetricLabel for Never {
        fn metric_label(&self) -> &'static str {
            "never"
        }
    }

    impl Reconcile for Idle {
        type Object = k8s_openapi::api::core::v1::ConfigMap;
        type Error = Never;

        fn runner(&self) -> &Runner {
            &self.runner
        }

        fn reconcile(self: Arc<Self>, _: Arc<Self::Object>) -> BoxFuture<'static, Result<Action, Never>> {
            async { Ok(Action::await_change()) }.boxed()
        }
    }

    // Paused time: a drive that never returns lets the clock run to the timeout at once, so
    // the test fails rather than hangs, and no wall-clock figure is asserted.
    #[tokio::test(start_paused = true)]
    async fn a_controller_asked_to_stop_before_its_first_list_completed_stops() {
        // The writer lives on and never sees a list: the store is never ready.
        let (store, _writer) = reflector::store();
        let controller = Controller::for_stream(futures::stream::pending(), store);
        let idle = Arc::new(Idle {
            runner: Runner {
                controller: "idle",
                metrics: Arc::new(Metrics::new()),
                backoff: Backoff::new(std::time::Duration::from_secs(1), std::time::Duration::from_secs(1)),
            },
        });
        let shutdown = CancellationToken::new();
        let driven = tokio::spawn(drive(controller, idle, shutdown.clone()));
        tokio::task::yield_now().await;
        shutdown.cancel();
        let stopped = tokio::time::timeout(std::time::Duration::from_secs(3600), driven).await;
        assert!(stopped.is_ok_and(|joined| joined.is_ok()), "drive waited for a first list that can no longer come");
    }

    #[tokio::test]
    async fn a_panicking_scope_is_an_error() {
        let ctx = context(&[]).await;
        let result = fan_out("test", ctx.scopes(), |scope| async move {
            assert!(scope.namespace().is_some(), "one scope for the whole cluster");
        })
        .await;
        assert!(result.is_err_and(|e| e.source.is_panic() && e.to_string() == "a test controller task failed"));
    }
}
