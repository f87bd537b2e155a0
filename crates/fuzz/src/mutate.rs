//! Mutations of a valid input: byte flips, truncations, splices, repeated ranges, broken
//! tokens; and, for JSON bodies, edits of the parsed tree (a field's value replaced by one of
//! another kind, a key duplicated or dropped, an element repeated), which keep the body
//! well formed so the parser goes past its first check.

use arbitrary::{Result, Unstructured};

use crate::json::{Gen, J, MAX_BODY};

/// Tokens that break or bend JSON text and URIs.
const TOKENS: &[&[u8]] = &[
    b"\"", b"\\", b"{", b"}", b"[", b"]", b",", b":", b"null", b"-1", b"1e999", b"\\u0000",
    b"\\ud800", b"\x00", b"\xff", b"\xc3", b"%", b"%00", b"%FF", b"%2F", b"%25", b"/", b"?", b"&",
    b"=", b"+", b"#", b" ", b"..", b"\r\n",
];

/// A few byte-level edits of `data`; `splice` supplies text to insert (another seed, a
/// generated value).
pub fn bytes(u: &mut Unstructured, data: &mut Vec<u8>, splice: &[u8]) -> Result<()> {
    let rounds = u.int_in_range(1..=6)?;
    for _ in 0..rounds {
        let len = data.len();
        let at = if len == 0 {
            0
        } else {
            u.int_in_range(0..=len)?
        };
        match u.int_in_range(0..=8)? {
            0 if at < len => data[at] ^= 1 << u.int_in_range(0..=7)?,
            1 if at < len => data[at] = u.arbitrary()?,
            2 => {
                let token = u.choose(TOKENS)?;
                data.splice(at..at, token.iter().copied());
            }
            3 => {
                let end = u.int_in_range(at..=len)?;
                data.drain(at..end);
            }
            4 => data.truncate(at),
            5 => {
                let end = u.int_in_range(at..=len.min(at + 64))?;
                let copy = data[at..end].to_vec();
                let times = u.int_in_range(1..=16)?;
                for _ in 0..times {
                    data.splice(at..at, copy.iter().copied());
                }
            }
            6 if !splice.is_empty() => {
                let from = u.int_in_range(0..=splice.len() - 1)?;
                let to = u.int_in_range(from..=splice.len())?;
                data.splice(at..at, splice[from..to].iter().copied());
            }
            7 if at < len => {
                // A digit run made much longer: numbers past every limit.
                if data[at].is_ascii_digit() {
                    data.splice(at..at, std::iter::repeat_n(b'9', 25));
                }
            }
            _ => {
                let n = u.int_in_range(1..=8)?;
                let junk = u.bytes(n.min(u.len()))?.to_vec();
                data.splice(at..at, junk);
            }
        }
    }
    Ok(())
}

/// `seed` parsed, one node of its tree edited, written back; `None` if the seed is not JSON
/// (an empty body, say).
pub fn tree(u: &mut Unstructured, seed: &str, gen: &Gen) -> Result<Option<Vec<u8>>> {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(seed) else {
        return Ok(None);
    };
    let mut root = J::from_value(&value);
    let edits = u.int_in_range(1..=3)?;
    for _ in 0..edits {
        edit(u, &mut root, gen, 0)?;
    }
    let mut out = Vec::new();
    root.write(&mut out);
    Ok(Some(out))
}

/// Walks down to a random node (stopping at each level a third of the time) and edits it.
fn edit(u: &mut Unstructured, node: &mut J, gen: &Gen, depth: u32) -> Result<()> {
    let children = match node {
        J::Arr(items) => items.len(),
        J::Obj(entries) => entries.len(),
        _ => 0,
    };
    if children > 0 && !u.ratio(1, 3)? {
        let i = u.choose_index(children)?;
        let child = match node {
            J::Arr(items) => &mut items[i],
            J::Obj(entries) => &mut entries[i].1,
            _ => unreachable!("counted above"),
        };
        return edit(u, child, gen, depth + 1);
    }
    match (u.int_in_range(0..=4)?, node) {
        (0, J::Obj(entries)) if !entries.is_empty() => {
            let i = u.choose_index(entries.len())?;
            let (k, _) = &entries[i];
            let dup = (k.clone(), gen.value(u, depth + 1)?);
            let at = u.int_in_range(0..=entries.len())?;
            entries.insert(at, dup);
        }
        (1, J::Obj(entries)) if !entries.is_empty() => {
            let i = u.choose_index(entries.len())?;
            entries.remove(i);
        }
        (2, J::Obj(entries)) => {
            if let J::Obj(mut more) = gen.object(u, depth + 1)? {
                entries.append(&mut more);
            }
        }
        (2, J::Arr(items)) if !items.is_empty() => {
            let i = u.choose_index(items.len())?;
            let mut copy = Vec::new();
            items[i].write(&mut copy);
            let times = (*u.choose(&[1, 2, 100, 2_000])?).min(MAX_BODY / copy.len().max(1));
            for _ in 0..times {
                items.push(J::Raw(copy.clone()));
            }
        }
        (_, node) => *node = gen.value(u, depth + 1)?,
    }
    Ok(())
}
