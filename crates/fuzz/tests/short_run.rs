//! The fuzzer's short run in CI: every target, a couple of thousand inputs each, a fixed
//! seed (a failure here replays with `scripts/fuzz` and the seed below). The full run is
//! `scripts/fuzz` (BENCHMARKS.md, "Fuzzing the request parsers").

use regent_fuzz::{fuzz, targets, Input, Outcome, Target};
use regent_http::error::ApiError;
use regent_http::fuzz_targets::outcome;

const SEED: u64 = 15;
const INPUTS: u64 = 2_500;

#[test]
fn every_parser_survives_a_short_run() {
    for t in targets() {
        let tally = fuzz(&t, SEED, INPUTS).unwrap_or_else(|f| panic!("{f}"));
        // A generator that never gets past the parser's first check tests nothing.
        assert!(tally.accepted > 0, "{}: no input was accepted", t.name);
        assert!(
            tally.refused + tally.not_a_request > 0 || t.name.contains("(path, query)"),
            "{}: no input was refused",
            t.name
        );
    }
}

fn failing(name: &str, run: impl Fn(&[u8]) -> Outcome + Send + Sync + 'static) -> Target {
    Target::custom(name, Input::Body, &["{\"queue\": \"q\"}"], run)
}

#[test]
fn a_panic_stops_the_run_with_its_input() {
    let t = failing("panics on a brace", |b| {
        assert!(!b.contains(&b'}'), "a closing brace");
        Outcome::Accepted
    });
    let f = fuzz(&t, SEED, 1_000).expect_err("some input holds a brace");
    assert!(f.input.contains(&b'}'));
    assert!(f.panic.contains("a closing brace"), "{}", f.panic);
    let shown = f.to_string();
    assert!(
        shown.contains("panics on a brace") && shown.contains("--seed 15"),
        "{shown}"
    );
    // The same seed finds the same input first.
    let again = fuzz(&t, SEED, 1_000).expect_err("again");
    assert_eq!((again.index, again.input), (f.index, f.input));
}

#[test]
fn a_5xx_for_client_input_stops_the_run() {
    let t = failing("answers 500", |_| {
        outcome::<()>(Err(ApiError::Internal("oops".into())))
    });
    let f = fuzz(&t, SEED, 10).expect_err("the first input fails");
    assert_eq!(f.index, 0);
    assert!(f.panic.contains("500"), "{}", f.panic);
}
