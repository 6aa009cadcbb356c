//! The `ferrometal` binary: `ferrometal run` runs the controllers and
//! webhooks; `ferrometal crds` prints the CustomResourceDefinitions; `ferrometal manifests`
//! and `ferrometal bundle` write the install manifests and the OLM bundle.

// The product is safe Rust; only the test harness calls libc.
#![forbid(unsafe_code)]

use clap::Parser;
use operator::cli::{Cli, Command};
use std::process::ExitCode;

/// jemalloc, not glibc's malloc: glibc keeps the pages of what a process freed, and a replica
/// frees caches whenever its shards change. With glibc one of two replicas serving as many
/// hosts held 78 MiB at 10,000 hosts, its peer 59; with jemalloc 55 and 54
/// (design/performance.md, "Figures of 2026-12-06 (evening)").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    // One rustls crypto provider for the whole process, before anything can
    // build a TLS configuration (kube, reqwest, sqlx and the webhook server).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    match cli.command {
        Command::Crds => match crds::render_yaml() {
            Ok(yaml) => {
                print!("{yaml}");
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("error: {err}");
                ExitCode::FAILURE
            }
        },
        Command::Manifests(args) => written(args.run()),
        Command::Bundle(args) => written(args.run()),
        Command::Run(args) => {
            operator::telemetry::init(args.log_format);
            // Flags first: a mistake in them is reported before anything connects anywhere.
            let config = match operator::OperatorConfig::try_from(*args) {
                Ok(config) => config,
                Err(err) => {
                    tracing::error!(error = %operator::error_chain(&err), "invalid flags");
                    return ExitCode::FAILURE;
                }
            };
            // Reconcile futures nest deeply (an Ironic's pipeline around its database's
            // version change); 8 MiB worker stacks leave a wide margin over tokio's 2 MiB.
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_stack_size(8 * 1024 * 1024)
                .build()
            {
                Ok(runtime) => runtime,
                Err(err) => {
                    eprintln!("error: cannot start the async runtime: {err}");
                    return ExitCode::FAILURE;
                }
            };
            match runtime.block_on(operator::run_until_signal(config)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => {
                    tracing::error!(error = %operator::error_chain(&err), "ferrometal stopped");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn written(result: Result<(), operator::InstallError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", operator::error_chain(&err));
            ExitCode::FAILURE
        }
    }
}
