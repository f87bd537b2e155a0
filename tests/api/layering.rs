//! The layering, enforced: each crate of the workspace may depend only on the crates beneath
//! it, and the layers that must do no I/O (or no SQL, or no HTTP) do not name the crates that
//! would let them. Rust only lets a crate use what its manifest declares, so checking the
//! manifests checks every import. ARCHITECTURE.md draws the same graph.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// Each crate's direct dependencies (normal and build, not dev), by crate name.
fn dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .map(|d| d["name"].as_str().expect("name").to_string())
                .collect();
            (p["name"].as_str().expect("name").to_string(), deps)
        })
        .collect()
}

#[test]
fn every_crate_depends_only_on_the_layers_beneath_it() {
    let deps = dependencies();
    // Which of the workspace's own crates each may use.
    let allowed: &[(&str, &[&str])] = &[
        ("regent-broker", &[]),
        ("regent-tls", &[]),
        ("regent-cluster", &[]),
        ("regent-bench", &[]),
        ("regent-config", &["regent-broker"]),
        ("regent-store", &["regent-tls"]),
        ("regent-runtime", &["regent-broker"]),
        (
            "regent-service",
            &[
                "regent-broker",
                "regent-store",
                "regent-runtime",
                "regent-config",
            ],
        ),
        (
            "regent-http",
            &["regent-broker", "regent-config", "regent-service"],
        ),
        // The fuzzer calls the parsers, which only regent-http holds.
        ("regent-fuzz", &["regent-http"]),
    ];
    let ours: BTreeSet<&str> = deps.keys().map(String::as_str).collect();
    for (krate, may) in allowed {
        let uses: BTreeSet<&str> = deps[*krate]
            .iter()
            .map(String::as_str)
            .filter(|d| ours.contains(d))
            .collect();
        let may: BTreeSet<&str> = may.iter().copied().collect();
        assert!(
            uses.is_subset(&may),
            "{krate} uses {uses:?}; it may use only {may:?}"
        );
    }
    assert_eq!(
        ours.len(),
        allowed.len() + 1,
        "a new crate needs its place in this table (and in ARCHITECTURE.md): {ours:?}"
    );
}

#[test]
fn each_layer_names_none_of_the_crates_it_must_not_use() {
    let deps = dependencies();
    let forbidden: &[(&str, &[&str], &str)] = &[
        (
            "regent-broker",
            &[
                "tokio",
                "tokio-postgres",
                "deadpool-postgres",
                "axum",
                "reqwest",
                "hyper",
            ],
            "the rules do no I/O",
        ),
        (
            "regent-runtime",
            &[
                "tokio-postgres",
                "deadpool-postgres",
                "axum",
                "reqwest",
                "hyper",
            ],
            "the runtime state does no I/O",
        ),
        (
            "regent-store",
            &["axum", "hyper", "reqwest", "regent-broker"],
            "the store knows SQL, not HTTP, and applies no rule",
        ),
        (
            "regent-service",
            &["axum", "hyper", "tower-http", "reqwest"],
            "the use cases know no HTTP",
        ),
        (
            "regent-http",
            &[
                "tokio-postgres",
                "deadpool-postgres",
                "refinery",
                "regent-store",
                "regent-runtime",
            ],
            "HTTP reaches the database only through a use case",
        ),
        (
            "regent-bench",
            &[
                "regent-service",
                "regent-store",
                "regent-http",
                "regent-runtime",
            ],
            "the load generator talks to a broker over HTTP only",
        ),
    ];
    for (krate, never, why) in forbidden {
        for dep in *never {
            assert!(
                !deps[*krate].contains(*dep),
                "{krate} depends on {dep}: {why}"
            );
        }
    }
}
