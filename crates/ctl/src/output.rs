//! `-o table|json|ndjson|yaml`: a table on a terminal, JSON in a pipe.

use std::io::{IsTerminal, Write};

use clap::ValueEnum;
use comfy_table::{presets::NOTHING, Table};
use serde_json::Value;

use crate::exit::{Exit, Failure};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Ndjson,
    Yaml,
}

impl Format {
    /// The format asked for, else a table on a terminal and JSON in a pipe.
    pub fn resolve(asked: Option<Format>) -> Format {
        asked.unwrap_or(if std::io::stdout().is_terminal() {
            Format::Table
        } else {
            Format::Json
        })
    }
}

/// A listing: its rows (JSON objects) and, for the table, the columns to show, each a
/// heading and the path of its value in a row (`messages.pending`).
pub struct Listing<'a> {
    pub rows: Vec<Value>,
    pub columns: &'a [(&'a str, &'a str)],
}

/// Prints a listing: JSON prints the rows as one array, NDJSON one row per line, YAML a
/// sequence, a table the columns.
pub fn listing(format: Format, l: &Listing<'_>) -> Result<(), Failure> {
    match format {
        Format::Table => {
            let mut t = Table::new();
            t.load_preset(NOTHING);
            t.set_header(l.columns.iter().map(|(h, _)| h.to_uppercase()));
            for row in &l.rows {
                t.add_row(l.columns.iter().map(|(_, path)| cell(at(row, path))));
            }
            line(&t.to_string())
        }
        Format::Ndjson => {
            for row in &l.rows {
                line(&row.to_string())?;
            }
            Ok(())
        }
        _ => document(format, &Value::Array(l.rows.clone())),
    }
}

/// Prints a listing, and says whether it was empty: an empty listing is a successful no-op
/// (exit code 4).
pub fn listed(format: Format, l: &Listing<'_>) -> Result<Exit, Failure> {
    listing(format, l)?;
    Ok(if l.rows.is_empty() {
        Exit::NoOp
    } else {
        Exit::Ok
    })
}

/// Prints one document (an answer as the broker gave it); a table shows it as field/value.
pub fn document(format: Format, v: &Value) -> Result<(), Failure> {
    match format {
        Format::Json => line(&serde_json::to_string_pretty(v).unwrap_or_default()),
        Format::Ndjson => line(&v.to_string()),
        Format::Yaml => {
            let text = yaml_serde::to_string(v).map_err(|e| Failure::user(e.to_string()))?;
            write(text.as_bytes())
        }
        Format::Table => {
            let mut t = Table::new();
            t.load_preset(NOTHING);
            for (k, val) in flatten(v) {
                t.add_row([k, cell(Some(&val))]);
            }
            line(&t.to_string())
        }
    }
}

/// A value in a table cell: strings bare, nothing as `-`.
fn cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "-".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// The value at a dotted path.
pub fn at<'v>(row: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(row, |v, key| v.get(key))
}

/// An object's leaves as (dotted path, value), for a field/value table.
fn flatten(v: &Value) -> Vec<(String, Value)> {
    fn walk(prefix: &str, v: &Value, out: &mut Vec<(String, Value)>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, val) in m {
                    let path = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&path, val, out);
                }
            }
            other => out.push((prefix.to_string(), other.clone())),
        }
    }
    let mut out = Vec::new();
    walk("", v, &mut out);
    out
}

/// One line on stdout.
pub fn line(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.write_all(b"\n")?;
    Ok(out.flush()?)
}

/// Text on stdout as it is; a closed pipe ends it quietly (`Failure`'s `From<io::Error>`).
pub fn print(text: &str) -> Result<(), Failure> {
    write(text.as_bytes())
}

fn write(bytes: &[u8]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    Ok(out.flush()?)
}

/// A progress line on a terminal (stderr), nothing in a pipe.
pub struct Progress {
    on: bool,
}

impl Progress {
    pub fn new() -> Progress {
        Progress {
            on: std::io::stderr().is_terminal(),
        }
    }

    pub fn show(&self, text: &str) {
        if self.on {
            eprint!("\r\x1b[2K{text}");
        }
    }

    pub fn done(&self) {
        if self.on {
            eprint!("\r\x1b[2K");
        }
    }
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}
