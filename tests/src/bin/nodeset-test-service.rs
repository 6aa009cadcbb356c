//! `nodeset-test-service`: a NodeSetService that really runs, for the end-to-end test of the
//! inventory contract and the lab's services (its image: `scripts/node/service-image.sh`). It
//! reads the inventory at `$FERROMETAL_INVENTORY` and, for each host, reports what it would
//! configure on that host: as `<service>-<host>.json` in `$FERROMETAL_RESULTS` when that is
//! set (the test), otherwise as one JSON line per host on its standard output (the pod's log in
//! the lab). It fails (exit 1) when the inventory breaks the contract of `design/nodeset.md`.

use serde_json::{Value, json};
use std::process::ExitCode;

fn main() -> ExitCode {
    // The image build checks that the binary loads in the image by running this.
    if std::env::args().nth(1).as_deref() == Some("--version") {
        println!("nodeset-test-service {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    match run() {
        Ok(count) => {
            println!("configured {count} hosts");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("nodeset-test-service: {message}");
            ExitCode::FAILURE
        }
    }
}

fn var(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set"))
}

fn run() -> Result<usize, String> {
    let path = var("FERROMETAL_INVENTORY")?;
    let results = std::env::var("FERROMETAL_RESULTS").ok();
    let (nodeset, service) = (var("FERROMETAL_NODESET")?, var("FERROMETAL_SERVICE")?);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read the inventory {path}: {e}"))?;
    let inventory: Value = serde_json::from_str(&text).map_err(|e| format!("the inventory is not JSON: {e}"))?;
    if inventory["nodeSet"] != nodeset.as_str() || inventory["service"] != service.as_str() {
        return Err(format!(
            "the inventory is for {} / {}, not {nodeset} / {service}",
            inventory["nodeSet"], inventory["service"]
        ));
    }
    let hosts = inventory["hosts"].as_object().ok_or("the inventory has no hosts")?;
    for (host, entry) in hosts {
        let address = entry["managementAddress"].as_str().ok_or(format!("{host} has no managementAddress"))?;
        let config_hash = entry["configHash"].as_str().ok_or(format!("{host} has no configHash"))?;
        let networks: Vec<Value> = entry["networks"]
            .as_array()
            .ok_or(format!("{host} has no networks"))?
            .iter()
            .map(|n| json!({"name": n["name"], "interface": n["interface"], "mtu": n["mtu"], "addresses": n["addresses"]}))
            .collect();
        let result = json!({
            "host": host,
            "nodeSet": nodeset,
            "service": service,
            "namespace": inventory["namespace"],
            "nodeSetConfigHash": inventory["configHash"],
            "configHash": config_hash,
            "managementAddress": address,
            "bmh": entry["bmh"],
            "networks": networks,
            "dns": entry["dns"],
            "variables": entry["variables"],
        });
        match &results {
            Some(results) => {
                let file = std::path::Path::new(results).join(format!("{service}-{host}.json"));
                let body = serde_json::to_vec_pretty(&result).map_err(|e| e.to_string())?;
                std::fs::write(&file, body).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
            }
            None => println!("{result}"),
        }
    }
    Ok(hosts.len())
}
