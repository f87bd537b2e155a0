//! The key/value rules (`POST /api/v1/kv`, spec §18.1): what one write does to the row it
//! names. The row is read under its lock first, so the decision here sees the value every
//! other writer of the key committed before it; a row past its expiry is treated as absent
//! (never returned, never counted as existing), even before retention prunes it.

/// A number as JSON writes it: an integer when it is one, else a float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    /// JSON text as a number, when it is one.
    pub fn parse(json: &str) -> Option<Num> {
        let n: serde_json::Number = serde_json::from_str(json).ok()?;
        n.as_i64()
            .map(Num::Int)
            .or_else(|| n.as_f64().map(Num::Float))
    }

    fn f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    /// The number as JSON text; `None` for a float JSON cannot write (infinite).
    pub fn json(self) -> Option<String> {
        match self {
            Num::Int(i) => Some(i.to_string()),
            Num::Float(f) => serde_json::Number::from_f64(f).map(|n| n.to_string()),
        }
    }
}

/// A namespace, in bytes.
pub const MAX_NS_BYTES: usize = 256;
/// A key, in bytes: well under PostgreSQL's limit for a B-tree entry.
pub const MAX_KEY_BYTES: usize = 1024;
/// A value, as JSON text, in bytes.
pub const MAX_VALUE_BYTES: usize = 1 << 20;
/// Operations in one request (or one transaction's `kv` rider).
pub const MAX_OPS: usize = 1000;
/// Keys in one `getMany`.
pub const MAX_MANY_KEYS: usize = 1000;
/// Rows one `getPrefix` answers when it names no `limit`, and at most.
pub const PREFIX_DEFAULT_LIMIT: i64 = 100;
pub const PREFIX_MAX_LIMIT: i64 = 1000;
/// Value bytes one read answers at most; rows past it are left out and `truncated` says so.
pub const READ_BUDGET_BYTES: usize = 4 << 20;

/// How long a written row lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// Until `now() + seconds`, on the database's clock.
    Seconds(i64),
    Forever,
}

/// A write, as the client sent it.
#[derive(Clone, Debug, PartialEq)]
pub enum Write<V> {
    /// `put`; `expect: Some(0)` means "must not exist", `Some(n)` "must be at version n".
    Put {
        value: V,
        expiry: Expiry,
        expect: Option<i64>,
    },
    /// `putIfAbsent`: a put expecting 0, under the name of the intent.
    PutIfAbsent {
        value: V,
        expiry: Expiry,
    },
    Delete {
        expect: Option<i64>,
    },
    /// `incr`: add `delta`; refused, not saturated, when the result leaves `[min, max]`. The
    /// expiry only applies to a row this creates: a live row keeps its own, or a fixed-window
    /// limiter would never close its window under load.
    Incr {
        delta: Num,
        min: Option<Num>,
        max: Option<Num>,
        expiry: Expiry,
    },
}

/// The row a write found, under its lock.
#[derive(Clone, Debug, PartialEq)]
pub struct Current<V> {
    pub value: V,
    pub version: i64,
    /// Past its expiry: as good as absent.
    pub expired: bool,
}

/// Why a write did not apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// `expect` named another version (or 0, and the key exists).
    Version,
    /// The key does not exist (a delete, or a put expecting a version).
    Absent,
    /// `incr` would go past `max`.
    Max,
    /// `incr` would go below `min`.
    Min,
    /// `incr` on a value that is not a number.
    NotNum,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Version => "version",
            Reason::Absent => "absent",
            Reason::Max => "max",
            Reason::Min => "min",
            Reason::NotNum => "not_a_number",
        }
    }
}

/// What a write does to its row.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision<V> {
    /// Write `value` at `version`; the expiry is set anew, or kept (`None`).
    Store {
        value: V,
        version: i64,
        expiry: Option<Expiry>,
    },
    /// Delete the row (at `version`).
    Remove {
        version: i64,
    },
    Refuse(Reason),
}

/// What `write` does to the row `found` (absent: `None`); values are JSON text.
pub fn decide(write: &Write<String>, found: Option<&Current<String>>) -> Decision<String> {
    let live = found.filter(|c| !c.expired);
    let next = live.map_or(1, |c| c.version + 1);
    match write {
        Write::Put {
            value,
            expiry,
            expect,
        } => match fence(*expect, live) {
            Some(why) => Decision::Refuse(why),
            None => Decision::Store {
                value: value.clone(),
                version: next,
                expiry: Some(*expiry),
            },
        },
        Write::PutIfAbsent { value, expiry } => decide(
            &Write::Put {
                value: value.clone(),
                expiry: *expiry,
                expect: Some(0),
            },
            found,
        ),
        Write::Delete { expect } => match (live, fence(*expect, live)) {
            (None, _) => Decision::Refuse(Reason::Absent),
            (_, Some(why)) => Decision::Refuse(why),
            (Some(c), None) => Decision::Remove { version: c.version },
        },
        Write::Incr {
            delta,
            min,
            max,
            expiry,
        } => {
            let current = match live {
                None => Num::Int(0),
                Some(c) => match Num::parse(&c.value) {
                    Some(n) => n,
                    None => return Decision::Refuse(Reason::NotNum),
                },
            };
            let Some(sum) = add(current, *delta).and_then(Num::json) else {
                return Decision::Refuse(Reason::Max);
            };
            let sum_n = Num::parse(&sum).unwrap_or(Num::Int(0));
            if max.is_some_and(|m| above(sum_n, m)) {
                return Decision::Refuse(Reason::Max);
            }
            if min.is_some_and(|m| above(m, sum_n)) {
                return Decision::Refuse(Reason::Min);
            }
            Decision::Store {
                value: sum,
                version: next,
                expiry: if live.is_some() { None } else { Some(*expiry) },
            }
        }
    }
}

/// Whether `expect` holds against the live row: 0 means it must not exist, `n` that it is
/// at version `n`.
fn fence<V>(expect: Option<i64>, live: Option<&Current<V>>) -> Option<Reason> {
    match (expect, live) {
        (None, _) | (Some(0), None) => None,
        (Some(_), None) => Some(Reason::Absent),
        (Some(n), Some(c)) if c.version == n => None,
        (Some(_), Some(_)) => Some(Reason::Version),
    }
}

/// `a + b`: exact in integers, else in floats; `None` when integers overflow (refused as past
/// `max`, the only bound an overflow can cross meaningfully).
fn add(a: Num, b: Num) -> Option<Num> {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x.checked_add(y).map(Num::Int),
        _ => Some(Num::Float(a.f64() + b.f64())),
    }
}

/// `a > b`, exact when both are integers.
fn above(a: Num, b: Num) -> bool {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x > y,
        _ => a.f64() > b.f64(),
    }
}

/// A `getPrefix` page size: the client's `limit` clamped, never refused.
pub fn prefix_limit(limit: Option<i64>) -> i64 {
    limit
        .unwrap_or(PREFIX_DEFAULT_LIMIT)
        .clamp(1, PREFIX_MAX_LIMIT)
}

/// The least string greater than every string that starts with `prefix`, in bytewise (code
/// point) order: the prefix with its last character incremented, dropping trailing
/// `U+10FFFF`s first. `None` when there is no such string (the prefix is all `U+10FFFF`).
pub fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (last as u32 + 1..=char::MAX as u32).find_map(char::from_u32);
        if let Some(c) = next {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    type V = String;

    fn row(value: &str, version: i64, expired: bool) -> Current<V> {
        Current {
            value: value.into(),
            version,
            expired,
        }
    }

    fn run(w: &Write<V>, found: Option<&Current<V>>) -> Decision<V> {
        decide(w, found)
    }

    fn put(expect: Option<i64>) -> Write<V> {
        Write::Put {
            value: "1".into(),
            expiry: Expiry::Forever,
            expect,
        }
    }

    fn incr(delta: i64, min: Option<i64>, max: Option<i64>) -> Write<V> {
        Write::Incr {
            delta: Num::Int(delta),
            min: min.map(Num::Int),
            max: max.map(Num::Int),
            expiry: Expiry::Seconds(60),
        }
    }

    fn stored(value: &str, version: i64, expiry: Option<Expiry>) -> Decision<V> {
        Decision::Store {
            value: value.into(),
            version,
            expiry,
        }
    }

    #[test]
    fn a_plain_put_upserts_and_bumps_the_version() {
        assert_eq!(run(&put(None), None), stored("1", 1, Some(Expiry::Forever)));
        let r = row("7", 4, false);
        assert_eq!(
            run(&put(None), Some(&r)),
            stored("1", 5, Some(Expiry::Forever))
        );
    }

    #[test]
    fn an_expired_row_is_absent_for_every_write() {
        let dead = row("7", 4, true);
        assert_eq!(
            run(&put(Some(0)), Some(&dead)),
            stored("1", 1, Some(Expiry::Forever))
        );
        assert_eq!(
            run(&put(Some(4)), Some(&dead)),
            Decision::Refuse(Reason::Absent)
        );
        assert_eq!(
            run(&Write::Delete { expect: None }, Some(&dead)),
            Decision::Refuse(Reason::Absent)
        );
        // incr counts an expired row as zero and starts a new window.
        assert_eq!(
            run(&incr(1, None, None), Some(&dead)),
            stored("1", 1, Some(Expiry::Seconds(60)))
        );
    }

    #[test]
    fn expect_fences_the_write() {
        let r = row("7", 4, false);
        assert_eq!(
            run(&put(Some(3)), Some(&r)),
            Decision::Refuse(Reason::Version)
        );
        assert_eq!(
            run(&put(Some(0)), Some(&r)),
            Decision::Refuse(Reason::Version)
        );
        assert_eq!(
            run(&put(Some(4)), Some(&r)),
            stored("1", 5, Some(Expiry::Forever))
        );
        // A pure update creates nothing.
        assert_eq!(run(&put(Some(4)), None), Decision::Refuse(Reason::Absent));
        let pia = Write::PutIfAbsent {
            value: "1".into(),
            expiry: Expiry::Seconds(5),
        };
        assert_eq!(run(&pia, Some(&r)), Decision::Refuse(Reason::Version));
        assert_eq!(run(&pia, None), stored("1", 1, Some(Expiry::Seconds(5))));
    }

    #[test]
    fn delete_needs_a_live_row_and_a_matching_version() {
        let r = row("7", 4, false);
        let del = |expect| Write::Delete { expect };
        assert_eq!(run(&del(None), None), Decision::Refuse(Reason::Absent));
        assert_eq!(run(&del(None), Some(&r)), Decision::Remove { version: 4 });
        assert_eq!(
            run(&del(Some(4)), Some(&r)),
            Decision::Remove { version: 4 }
        );
        assert_eq!(
            run(&del(Some(2)), Some(&r)),
            Decision::Refuse(Reason::Version)
        );
    }

    #[test]
    fn incr_admits_or_refuses_and_never_saturates() {
        let r = row("9", 2, false);
        // A live row keeps its expiry.
        assert_eq!(
            run(&incr(1, None, Some(10)), Some(&r)),
            stored("10", 3, None)
        );
        assert_eq!(
            run(&incr(2, None, Some(10)), Some(&r)),
            Decision::Refuse(Reason::Max)
        );
        assert_eq!(
            run(&incr(-10, Some(0), None), Some(&r)),
            Decision::Refuse(Reason::Min)
        );
        assert_eq!(
            run(&incr(1, None, None), Some(&row("\"x\"", 1, false))),
            Decision::Refuse(Reason::NotNum)
        );
        assert_eq!(
            run(
                &incr(1, None, None),
                Some(&row(&i64::MAX.to_string(), 1, false))
            ),
            Decision::Refuse(Reason::Max)
        );
        let half = Write::Incr {
            delta: Num::Float(0.5),
            min: None,
            max: None,
            expiry: Expiry::Forever,
        };
        assert_eq!(run(&half, Some(&r)), stored("9.5", 3, None));
    }

    #[test]
    fn a_prefix_ends_where_its_last_character_is_passed() {
        assert_eq!(prefix_end("user:").as_deref(), Some("user;"));
        assert_eq!(prefix_end("a\u{10FFFF}").as_deref(), Some("b"));
        // Surrogates are no characters: the next one after U+D7FF is U+E000.
        assert_eq!(prefix_end("\u{D7FF}").as_deref(), Some("\u{E000}"));
        assert_eq!(prefix_end("\u{10FFFF}"), None);
        for key in ["user:", "user:a", "user:\u{10FFFF}\u{10FFFF}"] {
            assert!(key < prefix_end("user:").unwrap().as_str());
        }
        assert!("user;" >= prefix_end("user:").unwrap().as_str());
    }

    #[test]
    fn a_prefix_limit_is_clamped() {
        assert_eq!(prefix_limit(None), PREFIX_DEFAULT_LIMIT);
        assert_eq!(prefix_limit(Some(0)), 1);
        assert_eq!(prefix_limit(Some(1_000_000)), PREFIX_MAX_LIMIT);
    }
}
