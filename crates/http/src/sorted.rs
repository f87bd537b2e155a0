//! JSON text with every object's keys sorted, as Queen writes its answers (its objects are
//! ordered maps). Done on the text serde wrote, not through `serde_json::Value`: a `Value`
//! holds a number as a double, and a client's payload may hold one no double holds (`1e400`,
//! a 400-digit integer), which `Value` cannot represent at all. Here every scalar is copied
//! as written, so a payload's numbers go out as the client sent them.
//!
//! Keys sort by their unescaped bytes, as `Value`'s maps do; a key given twice keeps its last
//! value, as `Value` does.

/// `json` (valid JSON, as serde_json writes it or a `RawValue` holds it) with its objects'
/// keys sorted at every depth and no whitespace between tokens.
pub fn sort_keys(json: &[u8]) -> Vec<u8> {
    let mut r = Reader { b: json, i: 0 };
    let node = r.value();
    let mut out = Vec::with_capacity(json.len());
    node.write(&mut out);
    out
}

/// One JSON value, its scalars still the text they were written as.
enum Node<'a> {
    Scalar(&'a [u8]),
    Array(Vec<Node<'a>>),
    /// (the key as sorted, the key's literal with its quotes, the value)
    Object(Vec<(String, &'a [u8], Node<'a>)>),
}

impl Node<'_> {
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Node::Scalar(text) => out.extend_from_slice(text),
            Node::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write(out);
                }
                out.push(b']');
            }
            Node::Object(fields) => {
                out.push(b'{');
                for (i, (_, key, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(key);
                    out.push(b':');
                    value.write(out);
                }
                out.push(b'}');
            }
        }
    }
}

/// A reader of text already known to be valid JSON: it finds token bounds, it checks nothing.
struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    fn skip_space(&mut self) {
        while self.b.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    /// The next byte after whitespace, consumed.
    fn next(&mut self) -> u8 {
        self.skip_space();
        let c = self.b[self.i];
        self.i += 1;
        c
    }

    fn value(&mut self) -> Node<'a> {
        self.skip_space();
        match self.b[self.i] {
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.skip_space();
                if self.b[self.i] == b']' {
                    self.i += 1;
                    return Node::Array(items);
                }
                loop {
                    items.push(self.value());
                    if self.next() == b']' {
                        return Node::Array(items);
                    }
                }
            }
            b'{' => {
                self.i += 1;
                let mut fields: Vec<(String, &'a [u8], Node<'a>)> = Vec::new();
                self.skip_space();
                if self.b[self.i] == b'}' {
                    self.i += 1;
                    return Node::Object(fields);
                }
                loop {
                    self.skip_space();
                    let literal = self.string();
                    self.next(); // the colon
                    let value = self.value();
                    fields.push((unescaped(literal), literal, value));
                    if self.next() == b'}' {
                        break;
                    }
                }
                // Stable, so of a key given twice the last stays last; keep only that one.
                fields.sort_by(|a, b| a.0.cmp(&b.0));
                let mut kept: Vec<(String, &'a [u8], Node<'a>)> = Vec::with_capacity(fields.len());
                for field in fields {
                    match kept.last_mut() {
                        Some(last) if last.0 == field.0 => *last = field,
                        _ => kept.push(field),
                    }
                }
                Node::Object(kept)
            }
            b'"' => Node::Scalar(self.string()),
            _ => {
                let start = self.i;
                while self
                    .b
                    .get(self.i)
                    .is_some_and(|c| !matches!(c, b',' | b']' | b'}') && !c.is_ascii_whitespace())
                {
                    self.i += 1;
                }
                Node::Scalar(&self.b[start..self.i])
            }
        }
    }

    /// A string literal, quotes included.
    fn string(&mut self) -> &'a [u8] {
        let start = self.i;
        self.i += 1;
        loop {
            match self.b[self.i] {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return &self.b[start..self.i];
                }
                _ => self.i += 1,
            }
        }
    }
}

/// A key literal's text, for ordering (most keys have no escape and are their bytes).
fn unescaped(literal: &[u8]) -> String {
    let inner = &literal[1..literal.len() - 1];
    if !inner.contains(&b'\\') {
        return String::from_utf8_lossy(inner).into_owned();
    }
    let text = std::str::from_utf8(literal).unwrap_or_default();
    serde_json::from_str(text).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::sort_keys;

    fn sorted(text: &str) -> String {
        String::from_utf8(sort_keys(text.as_bytes())).unwrap()
    }

    #[test]
    fn keys_sort_at_every_depth_as_a_value_would_sort_them() {
        let text = r#"{"zebra":1,"leaseId":2,"lease_expires_at":[{"b":true,"a":null}],"Z":{}}"#;
        let via_value =
            serde_json::to_string(&serde_json::from_str::<serde_json::Value>(text).unwrap())
                .unwrap();
        assert_eq!(sorted(text), via_value);
    }

    #[test]
    fn numbers_and_strings_go_out_as_written() {
        let big = "9".repeat(400);
        let text = format!(r#"{{"n": 1e400, "i": {big}, "f": 1.50, "s": "a\"}}\\", "u": "é"}}"#);
        assert_eq!(
            sorted(&text),
            format!(r#"{{"f":1.50,"i":{big},"n":1e400,"s":"a\"}}\\","u":"é"}}"#)
        );
    }

    #[test]
    fn escaped_keys_sort_by_their_text_and_a_repeated_key_keeps_its_last_value() {
        assert_eq!(
            sorted(r#"{"b":1,"\u0061":2,"b":3}"#),
            r#"{"\u0061":2,"b":3}"#
        );
        assert_eq!(sorted(r#"[ ]"#), "[]");
        assert_eq!(sorted(r#" { } "#), "{}");
    }
}
