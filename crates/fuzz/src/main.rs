//! `regent-fuzz`: every request parser, N inputs each; stops at the first panic (or 5xx).
//! `scripts/fuzz` builds it in release mode and runs it.

use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;

use regent_fuzz::{fuzz, targets, thousands, Tally};

/// Fuzzes regent-http's request parsers: bodies, path segments, query strings.
#[derive(Parser)]
#[command(name = "regent-fuzz")]
struct Args {
    /// Inputs per target (default: enough for 1,000,000 in all, at least 20,000 each).
    #[arg(long)]
    inputs: Option<u64>,
    /// The seed of every target's input stream (default: the clock; printed either way).
    #[arg(long)]
    seed: Option<u64>,
    /// Only the targets whose name contains this.
    #[arg(long)]
    target: Option<String>,
    /// List the targets and exit.
    #[arg(long)]
    list: bool,
}

const TOTAL: u64 = 1_000_000;
const AT_LEAST: u64 = 20_000;

fn main() -> ExitCode {
    let args = Args::parse();
    let all: Vec<_> = targets()
        .into_iter()
        .filter(|t| {
            args.target
                .as_ref()
                .is_none_or(|f| t.name.contains(f.as_str()))
        })
        .collect();
    if args.list || all.is_empty() {
        for t in &all {
            println!("{}", t.name);
        }
        return if all.is_empty() {
            eprintln!("no target matches");
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    let seed = args.seed.unwrap_or_else(clock_seed);
    let inputs = args
        .inputs
        .unwrap_or_else(|| TOTAL.div_ceil(all.len() as u64).max(AT_LEAST));
    println!(
        "regent-fuzz: {} targets, {} inputs each, seed {seed}",
        all.len(),
        thousands(inputs)
    );
    let start = Instant::now();
    let mut sum = Tally::default();
    for t in &all {
        match fuzz(t, seed, inputs) {
            Ok(tally) => {
                println!("{}", line(&t.name, &tally));
                sum.inputs += tally.inputs;
                sum.accepted += tally.accepted;
                sum.refused += tally.refused;
                sum.not_a_request += tally.not_a_request;
                sum.bytes += tally.bytes;
            }
            Err(failure) => {
                let path = std::env::temp_dir().join(format!("regent-fuzz-{seed}.input"));
                let saved = std::fs::write(&path, &failure.input).is_ok();
                eprintln!("{failure}");
                if saved {
                    eprintln!("input written to {}", path.display());
                }
                return ExitCode::FAILURE;
            }
        }
    }
    sum.elapsed = start.elapsed();
    println!(
        "total: {} inputs over {} targets in {:.1} s ({}/s, {} MB): {} accepted, {} refused (4xx), {} not a request; 0 panics, 0 5xx",
        thousands(sum.inputs),
        all.len(),
        sum.elapsed.as_secs_f64(),
        thousands(sum.per_second() as u64),
        thousands(sum.bytes / 1_000_000),
        thousands(sum.accepted),
        thousands(sum.refused),
        thousands(sum.not_a_request),
    );
    ExitCode::SUCCESS
}

fn line(name: &str, t: &Tally) -> String {
    format!(
        "{name}: {} inputs in {:.1} s ({}/s): {} accepted, {} refused, {} not a request; 0 panics",
        thousands(t.inputs),
        t.elapsed.as_secs_f64(),
        thousands(t.per_second() as u64),
        thousands(t.accepted),
        thousands(t.refused),
        thousands(t.not_a_request),
    )
}

fn clock_seed() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}
