//! Values that sit on the parsers' edges: the words they compare against, numbers at the
//! limits of each integer and float type, timestamps valid and not, names at the length
//! limits, and text no database or parser expects.

use arbitrary::{Result, Unstructured};

/// Words the parsers compare against, and their near misses.
pub const WORDS: &[&str] = &[
    "",
    " ",
    "true",
    "false",
    "TRUE",
    "1",
    "0",
    "-1",
    "null",
    "now",
    "new",
    "new-only",
    "all",
    "from_beginning",
    "completed",
    "success",
    "failed",
    "retry",
    "dlq",
    "Completed",
    "ack",
    "push",
    "kv",
    "Default",
    "__QUEUE_MODE__",
    "minute",
    "hour",
    "day",
    "pending",
    "processing",
    "dead_letter",
    "deadLetter",
    "lagging",
    "info",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "1e309",
    "-0",
    "0x10",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "4294967296",
    "1.5",
    " 42 ",
    "+7",
    "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d",
    "5f0c2a9e-1b7d-4c3e-9a21-6d4b8e0f1a23",
    "00000000-0000-0000-0000-000000000000",
    "0190a6c45b6e7a8b9c0d1e2f3a4b5c6d",
    "{0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d}",
    "urn:uuid:0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6d",
    "0190a6c4-5b6e-7a8b-9c0d-1e2f3a4b5c6",
    "\u{0}",
    "a\u{0}b",
    "\u{feff}",
    "\u{202e}",
    "\u{fffd}",
    "\u{10ffff}",
    "😀",
    "é",
    "e\u{301}",
    "ﬁ",
    "\\",
    "\"",
    "/",
    "../..",
    "%",
    "%00",
    "\r\n",
    "\t",
    "'; DROP TABLE queues; --",
    "$1",
    "::text",
];

/// Numbers as JSON text: every edge a cast or a clamp might trip on, and some the JSON
/// grammar refuses.
pub const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "2",
    "60",
    "300",
    "3600",
    "1000",
    "1001",
    "10000",
    "10001",
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967295",
    "9007199254740993",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    "0.0",
    "0.5",
    "-0.5",
    "1.0",
    "3.0e2",
    "1e3",
    "1E-7",
    "1e308",
    "1.7976931348623157e308",
    "1e309",
    "-1e309",
    "1e-400",
    "4.9e-324",
    "2.5e-324",
    "123456789012345678901234567890e-20",
    "01",
    "1.",
    ".5",
    "+1",
    "-",
    "1e",
    "NaN",
    "Infinity",
    "-Infinity",
    "0x1F",
];

pub fn word<'a>(u: &mut Unstructured<'a>) -> Result<&'static str> {
    u.choose(WORDS).copied()
}

/// An RFC 3339-looking timestamp: usually well formed, with every field at or past its
/// edge (years 0000 and 9999, month 13, second 60, offsets of a day, long fractions).
pub fn timestamp(u: &mut Unstructured) -> Result<String> {
    let year = *u.choose(&[0, 1, 1969, 1970, 2000, 2026, 2038, 9999, 10000, 99999])?;
    let month = *u.choose(&[0, 1, 2, 12, 13])?;
    let day = *u.choose(&[0, 1, 28, 29, 30, 31, 32])?;
    let hour = *u.choose(&[0, 12, 23, 24])?;
    let minute = *u.choose(&[0, 59, 60])?;
    let second = *u.choose(&[0, 59, 60, 61])?;
    let sep = *u.choose(&["T", "t", " ", "_"])?;
    let mut t = format!("{year:04}-{month:02}-{day:02}{sep}{hour:02}:{minute:02}:{second:02}");
    if u.ratio(1, 3)? {
        let digits = u.int_in_range(0..=30)?;
        t.push('.');
        t.extend(std::iter::repeat_n('9', digits));
    }
    let offset = match u.int_in_range(0..=5)? {
        0 | 1 => "Z".to_string(),
        2 => "z".to_string(),
        3 => String::new(),
        _ => {
            let sign = *u.choose(&["+", "-"])?;
            let h = *u.choose(&[0, 1, 14, 23, 24, 99])?;
            let m = *u.choose(&[0, 30, 59, 60])?;
            format!("{sign}{h:02}:{m:02}")
        }
    };
    t.push_str(&offset);
    Ok(t)
}

/// A string at a limit: around the 512-byte name limit, or long enough to cost something.
pub fn long(u: &mut Unstructured) -> Result<String> {
    let len = *u.choose(&[511, 512, 513, 1024, 4096, 65_536, 200_000])?;
    let unit = *u.choose(&["a", "é", "😀", "\u{0}", "%", "\\"])?;
    let mut s = unit.repeat(len / unit.len());
    if u.ratio(1, 4)? {
        s.push('\u{0}');
    }
    Ok(s)
}

/// Any of the above, or arbitrary Unicode.
pub fn text(u: &mut Unstructured) -> Result<String> {
    Ok(match u.int_in_range(0..=9)? {
        0..=3 => word(u)?.to_string(),
        4 | 5 => timestamp(u)?,
        6 => u.choose(NUMBERS)?.to_string(),
        7 => {
            if u.ratio(1, 16)? {
                long(u)?
            } else {
                word(u)?.repeat(u.int_in_range(2..=5)?)
            }
        }
        _ => u.arbitrary::<String>()?,
    })
}
