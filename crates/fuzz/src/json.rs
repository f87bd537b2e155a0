//! JSON built from a body's real field names, with the wrong types in the right places:
//! values of every kind under every key, duplicated keys, numbers past every limit, odd
//! Unicode and escapes (NULs, lone surrogates), very long strings, deep nesting. The tree
//! is written by hand, so it can hold what `serde_json::Value` cannot (a key twice, an
//! escape no string decodes to, a broken token).

use arbitrary::{Result, Unstructured};

use regent_http::fuzz_targets::NUMERIC_EXTREMES;

use crate::words;

pub enum J {
    Null,
    Bool(bool),
    /// The number's text, as sent: it may be past any type's range, or not a JSON number.
    Num(String),
    /// A string's content, already escaped.
    Str(String),
    Arr(Vec<J>),
    /// Keys escaped; a key may repeat.
    Obj(Vec<(String, J)>),
    /// Bytes written as they are: broken tokens, nesting past any limit.
    Raw(Vec<u8>),
}

impl J {
    pub fn from_value(v: &serde_json::Value) -> J {
        use serde_json::Value as V;
        match v {
            V::Null => J::Null,
            V::Bool(b) => J::Bool(*b),
            V::Number(n) => J::Num(n.to_string()),
            V::String(s) => J::Str(escape(s)),
            V::Array(a) => J::Arr(a.iter().map(J::from_value).collect()),
            V::Object(o) => J::Obj(
                o.iter()
                    .map(|(k, v)| (escape(k), J::from_value(v)))
                    .collect(),
            ),
        }
    }

    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            J::Null => out.extend_from_slice(b"null"),
            J::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            J::Num(n) => out.extend_from_slice(n.as_bytes()),
            J::Str(s) => quoted(s, out),
            J::Raw(r) => out.extend_from_slice(r),
            J::Arr(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write(out);
                }
                out.push(b']');
            }
            J::Obj(entries) => {
                out.push(b'{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    quoted(k, out);
                    out.push(b':');
                    v.write(out);
                }
                out.push(b'}');
            }
        }
    }
}

fn quoted(escaped: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    out.extend_from_slice(escaped.as_bytes());
    out.push(b'"');
}

/// The JSON escape of `s`, without the quotes.
pub fn escape(s: &str) -> String {
    let quoted = serde_json::to_string(s).expect("a string serialises");
    quoted[1..quoted.len() - 1].to_string()
}

/// Draws values whose object keys come from `keys`, the fields the parser reads.
pub struct Gen<'k> {
    pub keys: &'k [&'static str],
}

/// What one drawn body may grow to: around the broker's default body limit, so a run spends
/// its time on many inputs, not on a few huge ones.
pub const MAX_BODY: usize = 1 << 20;

/// Past this depth only scalars are drawn (deep nesting is drawn on purpose, as `Raw`).
const MAX_DEPTH: u32 = 4;

impl Gen<'_> {
    pub fn value(&self, u: &mut Unstructured, depth: u32) -> Result<J> {
        if depth < MAX_DEPTH && u.ratio(1, 150)? {
            return match u.ratio(1, 2)? {
                true => self.deep(u),
                false => self.wide(u),
            };
        }
        let top = if depth >= MAX_DEPTH { 3 } else { 10 };
        Ok(match u.int_in_range(0..=top)? {
            0 => J::Null,
            1 => J::Bool(u.arbitrary()?),
            2 => J::Num(number(u)?),
            3 => J::Str(string(u)?),
            4 | 5 => self.array(u, depth)?,
            _ => self.object(u, depth)?,
        })
    }

    pub fn object(&self, u: &mut Unstructured, depth: u32) -> Result<J> {
        let n = u.int_in_range(0..=7)?;
        let mut entries: Vec<(String, J)> = Vec::with_capacity(n);
        for _ in 0..n {
            if !entries.is_empty() && u.ratio(1, 12)? {
                // The same key again: which one wins is the parser's choice.
                let k = entries[u.choose_index(entries.len())?].0.clone();
                entries.push((k, self.value(u, depth + 1)?));
                continue;
            }
            let key = self.key(u)?;
            let value = self.value_for(u, &key, depth + 1)?;
            entries.push((key, value));
        }
        Ok(J::Obj(entries))
    }

    fn array(&self, u: &mut Unstructured, depth: u32) -> Result<J> {
        let n = u.int_in_range(0..=6)?;
        (0..n)
            .map(|_| self.value(u, depth + 1))
            .collect::<Result<_>>()
            .map(J::Arr)
    }

    fn key(&self, u: &mut Unstructured) -> Result<String> {
        if !self.keys.is_empty() && u.ratio(7, 8)? {
            return Ok(u.choose(self.keys)?.to_string());
        }
        Ok(match u.int_in_range(0..=2)? {
            0 => escape(&words::text(u)?),
            // A real key with a case or a character off: exact matching is the rule.
            1 if !self.keys.is_empty() => {
                let k = u.choose(self.keys)?;
                let mut k = k.to_uppercase();
                k.push(' ');
                k
            }
            _ => odd_string(u)?,
        })
    }

    /// Plural keys (`items`, `operations`, `ids`…) and `options` hold containers in the real
    /// bodies: give them one more often, so the parser gets past its first check.
    fn value_for(&self, u: &mut Unstructured, key: &str, depth: u32) -> Result<J> {
        let container = key.ends_with('s') || key == "options";
        if container && depth < MAX_DEPTH && u.ratio(3, 5)? {
            if key == "options" {
                return self.object(u, depth);
            }
            let n = u.int_in_range(0..=4)?;
            return (0..n)
                .map(|_| match u.ratio(3, 4)? {
                    true => self.object(u, depth + 1),
                    false => self.value(u, depth + 1),
                })
                .collect::<Result<_>>()
                .map(J::Arr);
        }
        self.value(u, depth)
    }

    /// Nesting past serde_json's limit of 128 (and sometimes unbalanced).
    fn deep(&self, u: &mut Unstructured) -> Result<J> {
        let n = *u.choose(&[127, 128, 129, 200, 5_000, 100_000])?;
        let (open, close): (&[u8], &[u8]) = match u.int_in_range(0..=2)? {
            0 => (b"[", b"]"),
            1 => (b"{\"items\":", b"}"),
            _ => (b"[{\"payload\":", b"}]"),
        };
        let mut raw = open.repeat(n);
        raw.extend_from_slice(b"1");
        let closed = if u.ratio(1, 8)? { n / 2 } else { n };
        raw.extend(close.repeat(closed));
        Ok(J::Raw(raw))
    }

    /// Many elements: the cost of a big body, not just its shape.
    fn wide(&self, u: &mut Unstructured) -> Result<J> {
        let n = *u.choose(&[1_000, 10_000])?;
        let element = self.value(u, MAX_DEPTH)?;
        let mut one = Vec::new();
        element.write(&mut one);
        if one.len() > MAX_BODY / n {
            one = b"{}".to_vec();
        }
        let mut raw = vec![b'['];
        for i in 0..n {
            if i > 0 {
                raw.push(b',');
            }
            raw.extend_from_slice(&one);
        }
        raw.push(b']');
        Ok(J::Raw(raw))
    }
}

/// A number's text: the edges in `words::NUMBERS`, the extremes every number field is sent
/// in the HTTP tests (`NUMERIC_EXTREMES`, `NaN` as a string), any i64 or finite f64, or a
/// run of digits too long for any type.
pub fn number(u: &mut Unstructured) -> Result<String> {
    Ok(match u.int_in_range(0..=5)? {
        0..=1 => u.choose(words::NUMBERS)?.to_string(),
        2 => match *u.choose(NUMERIC_EXTREMES)? {
            "NaN" => "\"NaN\"".to_string(),
            n => n.to_string(),
        },
        3 => u.arbitrary::<i64>()?.to_string(),
        4 => {
            let f: f64 = u.arbitrary()?;
            if f.is_finite() {
                format!("{f:e}")
            } else {
                "1e999".to_string()
            }
        }
        _ => {
            let n = *u.choose(&[20, 400, 5_000])?;
            let mut digits = "9".repeat(n);
            if u.ratio(1, 2)? {
                digits.insert(0, '-');
            }
            digits
        }
    })
}

/// A string's escaped content: the edge words and timestamps, or one of the escapes that
/// decode to something no name should hold.
pub fn string(u: &mut Unstructured) -> Result<String> {
    if u.ratio(1, 5)? {
        return odd_string(u);
    }
    Ok(escape(&words::text(u)?))
}

fn odd_string(u: &mut Unstructured) -> Result<String> {
    let escapes = [
        "\\u0000",
        "a\\u0000b",
        "\\ud800",
        "\\udc00",
        "\\ud83d\\ude00",
        "\\ud83d",
        "\\uFFFF",
        "\\u00e9",
        "\\/",
        "\\x41",
        "\\",
        "\\u12",
        "\u{1}",
        "\n",
        "\u{7f}",
    ];
    let n = u.int_in_range(1..=4)?;
    let mut s = String::new();
    for _ in 0..n {
        s.push_str(u.choose(&escapes)?);
        if u.ratio(1, 2)? {
            s.push_str(&escape(words::word(u)?));
        }
    }
    Ok(s)
}
