//! Route inputs: path segments and a query string, as a client puts them on the wire,
//! percent-encoded or not, with the route's own query parameters most of the time.

use arbitrary::{Result, Unstructured};

use crate::words;

/// Segments that path matching and percent-decoding must survive.
const SEGMENTS: &[&str] = &[
    "",
    ".",
    "..",
    "%2F",
    "a%2Fb",
    "%00",
    "a%00b",
    "%FF",
    "%FE%FF",
    "%",
    "%G0",
    "%2",
    "%E2%82",
    "%C0%AF",
    "%ED%A0%80",
    "%F4%90%80%80",
    "%25",
    "%2525",
    "+",
    "%20",
    "%3F",
    "%23",
    "lagging",
    "Default",
    "__QUEUE_MODE__",
    "by-name",
    "queues",
    "%F0%9F%98%80",
    "%C3%A9",
];

/// Raw query strings with no pairs in them to speak of.
const QUERIES: &[&str] = &[
    "", "&", "&&", "=", "==", "=&=", "%", "%%", "a=%", "a=%G", "&a", "a&",
];

/// `params` segments joined by `/`, then (mostly) `?` and a query string.
pub fn generate(u: &mut Unstructured, params: usize, keys: &[&str]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..params {
        if i > 0 {
            out.push(b'/');
        }
        out.extend(segment(u)?);
    }
    if params > 0 && u.ratio(1, 20)? {
        out.push(b'/');
        out.extend(segment(u)?);
    }
    if u.ratio(9, 10)? {
        out.push(b'?');
        out.extend(query(u, keys)?);
    }
    Ok(out)
}

fn segment(u: &mut Unstructured) -> Result<Vec<u8>> {
    Ok(match u.int_in_range(0..=4)? {
        0 | 1 => u.choose(SEGMENTS)?.as_bytes().to_vec(),
        2 => {
            let text = words::text(u)?;
            encode(u, text.as_bytes())?
        }
        3 => {
            let n = u.int_in_range(0..=16)?;
            let bytes = u.bytes(n.min(u.len()))?;
            encode(u, bytes)?
        }
        _ => {
            let unit = *u.choose(&["a", "%FF", "%C3%A9", "%00"])?;
            let n = *u.choose(&[512, 513, 4096, 20_000])?;
            unit.repeat(n).into_bytes()
        }
    })
}

fn query(u: &mut Unstructured, keys: &[&str]) -> Result<Vec<u8>> {
    if u.ratio(1, 20)? {
        return Ok(u.choose(QUERIES)?.as_bytes().to_vec());
    }
    let pairs = u.int_in_range(0..=8)?;
    let mut out = Vec::new();
    for i in 0..pairs {
        if i > 0 {
            out.extend_from_slice(if u.ratio(1, 20)? { b"&&" } else { b"&" });
        }
        let key = if !keys.is_empty() && u.ratio(7, 8)? {
            u.choose(keys)?.as_bytes().to_vec()
        } else {
            let text = words::text(u)?;
            encode(u, text.as_bytes())?
        };
        out.extend(key);
        match u.int_in_range(0..=11)? {
            0 => {}
            1 => out.push(b'='),
            2 => {
                out.extend_from_slice(b"==");
                out.extend(value(u)?);
            }
            _ => {
                out.push(b'=');
                out.extend(value(u)?);
            }
        }
    }
    Ok(out)
}

fn value(u: &mut Unstructured) -> Result<Vec<u8>> {
    let text = match u.int_in_range(0..=3)? {
        0 => u.choose(words::NUMBERS)?.to_string(),
        1 => words::timestamp(u)?,
        _ => words::text(u)?,
    };
    encode(u, text.as_bytes())
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";
const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";

/// Percent-encodes `bytes` as a client might: unreserved bytes mostly as they are, the rest
/// as `%XX` in either case, and now and then a reserved byte left raw (`+` is a space in a
/// query string, `&` and `=` split it).
pub fn encode(u: &mut Unstructured, bytes: &[u8]) -> Result<Vec<u8>> {
    let raw_reserved = u.ratio(1, 6)?;
    let lower = u.ratio(1, 4)?;
    let mut out = Vec::with_capacity(bytes.len() * 3);
    for &b in bytes {
        let unreserved = b.is_ascii_alphanumeric() || b"-._~".contains(&b);
        let reserved = b"!$&'()*+,;=:@/?".contains(&b);
        if unreserved || (reserved && raw_reserved) {
            out.push(b);
        } else {
            let digits = if lower { HEX_LOWER } else { HEX_UPPER };
            out.extend([
                b'%',
                digits[usize::from(b >> 4)],
                digits[usize::from(b & 15)],
            ]);
        }
    }
    Ok(out)
}

/// `bytes` with every byte no URI may hold percent-encoded: a mutated route input reaches
/// the router instead of stopping at hyper (which refuses such a request line itself).
pub fn escape_invalid(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=%".contains(&b) {
            out.push(b);
        } else {
            out.extend([
                b'%',
                HEX_UPPER[usize::from(b >> 4)],
                HEX_UPPER[usize::from(b & 15)],
            ]);
        }
    }
    out
}
