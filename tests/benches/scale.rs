//! `make bench`: the operator against the floor at N = 100, 300, 1000 hosts, one table
//! (`ferrometal_tests::bench` says what is measured and how; `design/performance.md` records
//! the figures). Prints figures; asserts nothing about timings.
//!
//!     cargo bench -p ferrometal-tests --bench scale
//!     FERROMETAL_BENCH_HOSTS=100,300 cargo bench -p ferrometal-tests --bench scale

fn main() -> anyhow::Result<()> {
    // The short form runs in `make test` as the `bench` test.
    if !ferrometal_tests::bench::started_by_cargo_bench("scale") {
        return Ok(());
    }
    let options = ferrometal_tests::bench::Options::full();
    eprintln!("[bench] host counts {:?}, {} NodeSets, limits {:?}", options.hosts, options.nodesets, options.limits);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let mut reports = Vec::new();
    for index in 0..options.hosts.len() {
        reports.push(runtime.block_on(ferrometal_tests::bench::run_one(&options, index))?);
        // The larger counts take long: what is measured so far is kept if a later one fails.
        if index + 1 < options.hosts.len() {
            eprint!("{}", ferrometal_tests::bench::render(&reports));
        }
    }
    print!("{}", ferrometal_tests::bench::render(&reports));
    Ok(())
}
