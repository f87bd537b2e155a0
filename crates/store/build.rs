//! Turns the named statements of `sql/*.sql` into Rust constants, River's `dbsqlc` way: each
//! file is a family (`claim.sql` becomes `sql::claim`), each `-- name: claim_and_read` line
//! starts a statement (`sql::claim::CLAIM_AND_READ`) that runs to the next one. The constant
//! is the section's text exactly, less its trailing blank lines and `;`: what PostgreSQL
//! receives is what the file shows, comments included. `sql::ALL` lists every statement, for
//! the store-level tests that prepare each against a real database.
//!
//! A file without a `-- name:` line (`functions.sql`) is a script, included whole elsewhere.

use std::fmt::Write as _;
use std::path::Path;
use std::{env, fs};

const MARK: &str = "-- name: ";

fn main() {
    println!("cargo::rerun-if-changed=sql");
    let mut files: Vec<_> = fs::read_dir("sql")
        .expect("crates/store/sql")
        .map(|e| e.expect("sql entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    let mut out = String::new();
    let mut all = String::new();
    for path in files {
        let text = fs::read_to_string(&path).expect("readable .sql file");
        let sections = sections(&path, &text);
        if sections.is_empty() {
            continue;
        }
        let family = path.file_stem().unwrap().to_str().unwrap();
        writeln!(out, "pub mod {family} {{").unwrap();
        for (name, body) in sections {
            let konst = name.to_uppercase();
            writeln!(out, "    pub const {konst}: &str = {body:?};").unwrap();
            writeln!(all, "    (\"{family}\", \"{name}\", {family}::{konst}),").unwrap();
        }
        writeln!(out, "}}").unwrap();
    }
    writeln!(
        out,
        "/// Every named statement: (family, name, text).\npub const ALL: &[(&str, &str, &str)] = &[\n{all}];"
    )
    .unwrap();
    let dest = Path::new(&env::var("OUT_DIR").unwrap()).join("sql.rs");
    fs::write(dest, out).expect("write sql.rs");
}

/// The file's statements, in order: (name, text). Panics (failing the build) on a name that
/// is not a Rust identifier, a name used twice, or an empty statement.
fn sections(path: &Path, text: &str) -> Vec<(String, String)> {
    let mut sections: Vec<(String, Vec<&str>)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix(MARK) {
            let name = name.trim().to_string();
            let ok = name.starts_with(|c: char| c.is_ascii_lowercase())
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            assert!(ok, "{}: `{name}` is not a snake_case name", path.display());
            assert!(
                sections.iter().all(|(n, _)| *n != name),
                "{}: `{name}` is named twice",
                path.display()
            );
            sections.push((name, Vec::new()));
        } else if let Some((_, lines)) = sections.last_mut() {
            lines.push(line);
        }
    }
    sections
        .into_iter()
        .map(|(name, lines)| {
            let body = lines.join("\n");
            let body = body.trim_end().trim_end_matches(';').trim_end().to_string();
            assert!(
                body.lines()
                    .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with("--")),
                "{}: `{name}` has no statement",
                path.display()
            );
            (name, body)
        })
        .collect()
}
