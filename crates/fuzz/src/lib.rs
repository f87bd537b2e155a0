//! A fuzzer for every request parser of `regent-http` (`regent_http::fuzz_targets`) that
//! runs on the stable toolchain: cargo-fuzz needs nightly, which the project's machines do
//! not have. Inputs are drawn with `arbitrary` from a seeded byte stream, as cargo-fuzz's
//! structured fuzzing draws them, but with no coverage feedback: the structure comes from
//! the targets' field names and the spec's example bodies instead.
//!
//! Each input runs under `catch_unwind`; a panic (a 5xx for client input panics in the
//! target) stops the run with the target, the input and how to replay it.

mod input;
mod json;
mod mutate;
mod rng;
mod route;
mod words;

use std::cell::{Cell, RefCell};
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;
use std::time::{Duration, Instant};

use arbitrary::Unstructured;
pub use regent_http::fuzz_targets::{targets, Input, Outcome, Target};

use rng::Rng;

/// What a target made of its inputs.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub inputs: u64,
    pub accepted: u64,
    pub refused: u64,
    pub not_a_request: u64,
    pub bytes: u64,
    pub elapsed: Duration,
}

impl Tally {
    pub fn per_second(&self) -> f64 {
        self.inputs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// The first input that panicked.
#[derive(Debug)]
pub struct Failure {
    pub target: String,
    pub seed: u64,
    /// Which input of the target's stream (0-based).
    pub index: u64,
    pub input: Vec<u8>,
    pub panic: String,
}

/// Shown escaped; long inputs are cut here (the caller can write `input` out whole).
const SHOWN: usize = 4096;

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = &self.input[..self.input.len().min(SHOWN)];
        writeln!(f, "PANIC in {} (input {})", self.target, self.index)?;
        writeln!(f, "{}", self.panic)?;
        write!(
            f,
            "input ({} bytes): {}",
            self.input.len(),
            shown.escape_ascii()
        )?;
        if self.input.len() > SHOWN {
            write!(f, "… ({} more bytes)", self.input.len() - SHOWN)?;
        }
        write!(
            f,
            "\nreplay: regent-fuzz --seed {} --target '{}' --inputs {}",
            self.seed,
            self.target,
            self.index + 1
        )
    }
}

/// The choices of one input come from this many bytes of the stream.
const CHOICE_BYTES: usize = 4096;

/// Runs `inputs` inputs of `target`'s stream for `seed`.
pub fn fuzz(target: &Target, seed: u64, inputs: u64) -> Result<Tally, Failure> {
    quiet_panics_in_targets();
    let mut rng = Rng::new(seed, &target.name);
    let mut choices = vec![0u8; CHOICE_BYTES];
    let mut tally = Tally::default();
    let start = Instant::now();
    for index in 0..inputs {
        rng.fill(&mut choices);
        let mut u = Unstructured::new(&choices);
        let input = input::next(&mut u, target).unwrap_or_default();
        tally.inputs += 1;
        tally.bytes += input.len() as u64;
        match run(target, &input) {
            Ok(Outcome::Accepted) => tally.accepted += 1,
            Ok(Outcome::Refused(_)) => tally.refused += 1,
            Ok(Outcome::NotARequest) => tally.not_a_request += 1,
            Err(panic) => {
                return Err(Failure {
                    target: target.name.clone(),
                    seed,
                    index,
                    input,
                    panic,
                })
            }
        }
    }
    tally.elapsed = start.elapsed();
    Ok(tally)
}

thread_local! {
    /// Set while a target runs: its panics are recorded here, not printed.
    static IN_TARGET: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn run(target: &Target, input: &[u8]) -> Result<Outcome, String> {
    IN_TARGET.set(true);
    let result = panic::catch_unwind(AssertUnwindSafe(|| target.run(input)));
    IN_TARGET.set(false);
    result.map_err(|_| {
        LAST_PANIC
            .take()
            .unwrap_or_else(|| "a panic with no message".into())
    })
}

/// A panic inside a target is reported once, with its input, instead of being printed by
/// the default hook; every other panic (a test's own assertion) still is.
fn quiet_panics_in_targets() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if IN_TARGET.get() {
                LAST_PANIC.set(Some(info.to_string()));
            } else {
                default(info);
            }
        }));
    });
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_draws_the_same_inputs() {
        let all = targets();
        let t = &all[0];
        let draw = |seed| {
            let mut rng = Rng::new(seed, &t.name);
            let mut choices = vec![0u8; CHOICE_BYTES];
            (0..50)
                .map(|_| {
                    rng.fill(&mut choices);
                    input::next(&mut Unstructured::new(&choices), t).unwrap_or_default()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
