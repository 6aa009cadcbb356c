//! `spec.database`: the two forms, immutability, and the managed MariaDB settings.

use crate::ironic::database::{DATABASE_FORMS_MESSAGE, Database, DatabaseStorage, MANAGED_TLS_CONFLICT_MESSAGE};
use crate::ironic::{DATABASE_IMMUTABLE_MESSAGE, IronicSpec};
use crate::validation::{Errors, is_set, parse_quantity_bytes};

pub(super) fn validate_database(errors: &mut Errors, spec: &IronicSpec, old: Option<&IronicSpec>) {
    let path = "spec.database";
    if let Some(old_db) = old.and_then(|o| o.database.as_ref()) {
        match &spec.database {
            Some(db) if same_database(db, old_db) => {
                if let (Some(new), Some(prev)) = (&db.managed, &old_db.managed) {
                    validate_managed_update(errors, new, prev);
                }
            }
            _ => errors.push(path, DATABASE_IMMUTABLE_MESSAGE),
        }
    }
    let Some(db) = &spec.database else {
        return;
    };
    let external_fields = [("credentialsName", &db.credentials_name), ("host", &db.host), ("name", &db.name)];
    match &db.managed {
        Some(managed) => {
            if external_fields.iter().any(|(_, v)| v.is_some()) || db.tls_certificate_name.is_some() {
                errors.push(format!("{path}.managed"), DATABASE_FORMS_MESSAGE);
            }
            let mpath = format!("{path}.managed");
            if let Some(version) = managed.version.as_deref()
                && parse_mariadb_version(version).is_none()
            {
                errors.push(
                    format!("{mpath}.version"),
                    format!("{version:?} must be a MariaDB version such as \"11.4\""),
                );
            }
            if let Some(storage) = &managed.storage {
                validate_storage(errors, &format!("{mpath}.storage"), storage);
            }
            if let Some(backup) = &managed.backup {
                if let Some(keep) = backup.keep
                    && keep < 1
                {
                    errors.push(format!("{mpath}.backup.keep"), "must be at least 1");
                }
                if let Some(storage) = &backup.storage {
                    validate_storage(errors, &format!("{mpath}.backup.storage"), storage);
                }
            }
            if let Some(grace) = managed.termination_grace_period_seconds
                && grace < 30
            {
                errors.push(
                    format!("{mpath}.terminationGracePeriodSeconds"),
                    "must be at least 30 seconds so MariaDB can shut down cleanly",
                );
            }
            if let Some(tls) = &managed.tls
                && is_set(&tls.certificate_name)
                && tls.enabled == Some(false)
            {
                errors.push(format!("{mpath}.tls.certificateName"), MANAGED_TLS_CONFLICT_MESSAGE);
            }
        }
        None => {
            for (field, value) in external_fields {
                if !is_set(value) {
                    errors.push(format!("{path}.{field}"), "is required for an external database");
                }
            }
        }
    }
}

/// Same database: same form, same host and same database name. Credentials and the CA may
/// change (rotation); pointing Ironic at another database may not, as it would lose every node.
fn same_database(new: &Database, old: &Database) -> bool {
    new.is_managed() == old.is_managed() && new.host == old.host && new.name == old.name
}

fn validate_storage(errors: &mut Errors, path: &str, storage: &DatabaseStorage) {
    if let Some(size) = &storage.size {
        match parse_quantity_bytes(&size.0) {
            Ok(0) => errors.push(format!("{path}.size"), "must be greater than zero"),
            Ok(_) => {}
            Err(e) => errors.push(format!("{path}.size"), e.to_string()),
        }
    }
}

fn validate_managed_update(
    errors: &mut Errors,
    new: &crate::ironic::ManagedDatabase,
    old: &crate::ironic::ManagedDatabase,
) {
    let mpath = "spec.database.managed";
    if let (Some(to), Some(from)) = (parse_mariadb_version(new.version()), parse_mariadb_version(old.version()))
        && to < from
    {
        errors.push(
            format!("{mpath}.version"),
            format!("cannot downgrade MariaDB from {} to {}", old.version(), new.version()),
        );
    }
    let pairs = [
        ("storage", new.storage.as_ref(), old.storage.as_ref()),
        (
            "backup.storage",
            new.backup.as_ref().and_then(|b| b.storage.as_ref()),
            old.backup.as_ref().and_then(|b| b.storage.as_ref()),
        ),
    ];
    for (field, new_storage, old_storage) in pairs {
        let (Some(new_storage), Some(old_storage)) = (new_storage, old_storage) else {
            continue;
        };
        let path = format!("{mpath}.{field}");
        if new_storage.storage_class_name != old_storage.storage_class_name {
            errors.push(format!("{path}.storageClassName"), "storageClassName is immutable");
        }
        let new_size = parse_quantity_bytes(&new_storage.size().0);
        let old_size = parse_quantity_bytes(&old_storage.size().0);
        if let (Ok(new_size), Ok(old_size)) = (new_size, old_size)
            && new_size < old_size
        {
            errors.push(format!("{path}.size"), "cannot shrink a volume");
        }
    }
}

/// `MAJOR.MINOR` or `MAJOR.MINOR.PATCH` as numbers, for ordering.
fn parse_mariadb_version(v: &str) -> Option<Vec<u32>> {
    let parts: Option<Vec<u32>> = v.split('.').map(|p| p.parse().ok()).collect();
    parts.filter(|p| (2..=3).contains(&p.len()))
}
