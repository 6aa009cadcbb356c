//! What can be tested of the operator image without a container engine: the release script
//! builds a binary that starts and prints its version, and the Containerfile builds with that
//! script and ships only the binary, as a numeric non-root user.

use ferrometal_tests::operator_process::{build, repo_root};
use std::process::Command;

#[test]
fn the_release_script_builds_a_binary_that_starts_and_prints_its_version() {
    ferrometal_tests::init();
    let out = tempfile::tempdir_in(std::env::temp_dir()).expect("out dir");
    let binary = build(out.path()).expect("scripts/build-release.sh builds the binary");
    let version = Command::new(&binary).arg("--version").output().expect("the binary starts");
    assert!(version.status.success());
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), format!("ferrometal {}", env!("CARGO_PKG_VERSION")));
    // The image's command: `run` parses its flags and explains them.
    let help = Command::new(&binary).args(["run", "--help"]).output().expect("the binary starts");
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--leader-elect"));
}

#[test]
fn the_containerfile_builds_with_the_release_script_and_ships_only_the_binary_as_a_numeric_user() {
    let text = std::fs::read_to_string(repo_root().join("images/operator/Containerfile")).expect("Containerfile");
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let froms: Vec<&&str> = lines.iter().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms.len(), 2, "a build stage and a runtime stage: {froms:?}");
    assert!(froms[0].ends_with(" AS build"));
    let runtime = lines.iter().position(|l| l == froms[1]).expect("runtime stage");
    let (build_stage, runtime_stage) = lines.split_at(runtime);
    assert!(build_stage.iter().any(|l| l.starts_with("RUN scripts/build-release.sh")), "the build runs the script");
    let copies: Vec<&&str> = runtime_stage.iter().filter(|l| l.starts_with("COPY")).collect();
    assert_eq!(copies, [&"COPY --from=build /out/ferrometal /usr/local/bin/ferrometal"], "only the binary");
    assert!(!runtime_stage.iter().any(|l| l.starts_with("RUN")), "nothing else is installed");
    let user = runtime_stage.iter().find_map(|l| l.strip_prefix("USER ")).expect("a USER");
    let (uid, gid) = user.split_once(':').expect("uid:gid");
    let (uid, gid): (u32, u32) = (uid.parse().expect("numeric uid"), gid.parse().expect("numeric gid"));
    assert!(uid != 0 && gid != 0, "not root");
    assert_eq!(i64::from(uid), operator::testing::install::manifests::workload::RUN_AS, "the Deployment's runAsUser");
}
