//! The binary layout of messages inside a segment.
//!
//! A segment's `frames` column is the concatenation of its messages' frames in offset order.
//! Each frame is self-delimiting, so the store can append frames it has filtered without
//! re-encoding, and a reader can walk to the k-th message without parsing the payloads:
//!
//! ```text
//! u32 LE  length of the rest of the frame
//! u8      flags: 1 = payload encrypted, 2 = trace id present, 4 = producer subject present
//! [16]    message id
//! u16 LE  transaction id length, then its UTF-8 bytes
//! [16]    trace id                          (if flag 2)
//! u16 LE  producer subject length, bytes    (if flag 4)
//! ...     payload: JSON text, to the end of the frame
//! ```
//!
//! PostgreSQL never looks inside: no JSON parsing on write or read, and the payload bytes a
//! client sent are the bytes it gets back.

use uuid::Uuid;

const ENCRYPTED: u8 = 1;
const HAS_TRACE: u8 = 2;
const HAS_SUB: u8 = 4;

/// One message, borrowed for encoding or decoded from a segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    pub message_id: Uuid,
    pub transaction_id: &'a str,
    pub trace_id: Option<Uuid>,
    pub producer_sub: Option<&'a str>,
    pub encrypted: bool,
    /// JSON text.
    pub payload: &'a [u8],
}

impl Frame<'_> {
    /// Appends this frame's encoding to `out`. Transaction ids and subjects are bounded well
    /// below 64 KiB by the HTTP layer.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        let mut flags = 0;
        if self.encrypted {
            flags |= ENCRYPTED;
        }
        if self.trace_id.is_some() {
            flags |= HAS_TRACE;
        }
        if self.producer_sub.is_some() {
            flags |= HAS_SUB;
        }
        out.push(flags);
        out.extend_from_slice(self.message_id.as_bytes());
        put_str(out, self.transaction_id);
        if let Some(t) = self.trace_id {
            out.extend_from_slice(t.as_bytes());
        }
        if let Some(s) = self.producer_sub {
            put_str(out, s);
        }
        out.extend_from_slice(self.payload);
        let len = (out.len() - start - 4) as u32;
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(64 + self.transaction_id.len() + self.payload.len());
        self.encode_into(&mut v);
        v
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    let len = u16::try_from(s.len()).expect("bounded by the HTTP layer");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("corrupt segment frame")]
pub struct Corrupt;

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Corrupt> {
        if self.b.len() < n {
            return Err(Corrupt);
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }

    fn u16(&mut self) -> Result<usize, Corrupt> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]) as usize)
    }

    fn uuid(&mut self) -> Result<Uuid, Corrupt> {
        Uuid::from_slice(self.take(16)?).map_err(|_| Corrupt)
    }

    fn str(&mut self) -> Result<&'a str, Corrupt> {
        let n = self.u16()?;
        std::str::from_utf8(self.take(n)?).map_err(|_| Corrupt)
    }
}

fn decode(body: &[u8]) -> Result<Frame<'_>, Corrupt> {
    let mut r = Reader { b: body };
    let flags = r.take(1)?[0];
    let message_id = r.uuid()?;
    let transaction_id = r.str()?;
    let trace_id = if flags & HAS_TRACE != 0 {
        Some(r.uuid()?)
    } else {
        None
    };
    let producer_sub = if flags & HAS_SUB != 0 {
        Some(r.str()?)
    } else {
        None
    };
    Ok(Frame {
        message_id,
        transaction_id,
        trace_id,
        producer_sub,
        encrypted: flags & ENCRYPTED != 0,
        payload: r.b,
    })
}

/// The frames of a segment, in offset order.
pub fn iter(segment: &[u8]) -> impl Iterator<Item = Result<Frame<'_>, Corrupt>> {
    let mut rest = segment;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if rest.len() < 4 {
            rest = &[];
            return Some(Err(Corrupt));
        }
        let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        if rest.len() < 4 + len {
            rest = &[];
            return Some(Err(Corrupt));
        }
        let body = &rest[4..4 + len];
        rest = &rest[4 + len..];
        Some(decode(body))
    })
}

/// The raw bytes (length prefix included) of the frame at `index` of a segment: what a dead
/// letter keeps as its snapshot.
pub fn raw_at(segment: &[u8], index: usize) -> Result<&[u8], Corrupt> {
    let mut rest = segment;
    for k in 0.. {
        if rest.len() < 4 {
            return Err(Corrupt);
        }
        let len = 4 + u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        if rest.len() < len {
            return Err(Corrupt);
        }
        if k == index {
            return Ok(&rest[..len]);
        }
        rest = &rest[len..];
    }
    unreachable!()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_concatenate() {
        let a = Frame {
            message_id: Uuid::now_v7(),
            transaction_id: "order-1",
            trace_id: Some(Uuid::new_v4()),
            producer_sub: Some("svc-a"),
            encrypted: false,
            payload: br#"{"n":1}"#,
        };
        let b = Frame {
            message_id: Uuid::now_v7(),
            transaction_id: "ünïcode",
            trace_id: None,
            producer_sub: None,
            encrypted: true,
            payload: b"null",
        };
        let mut seg = a.encode();
        b.encode_into(&mut seg);
        let got: Vec<Frame<'_>> = iter(&seg).collect::<Result<_, _>>().unwrap();
        assert_eq!(got, vec![a.clone(), b.clone()]);
        let second = raw_at(&seg, 1).unwrap();
        assert_eq!(iter(second).next().unwrap().unwrap(), b);
        assert!(raw_at(&seg, 2).is_err());
    }

    #[test]
    fn truncation_is_reported_not_panicked() {
        let f = Frame {
            message_id: Uuid::nil(),
            transaction_id: "t",
            trace_id: None,
            producer_sub: Some("s"),
            encrypted: false,
            payload: b"{}",
        }
        .encode();
        for cut in 0..f.len() {
            let r: Result<Vec<_>, _> = iter(&f[..cut]).collect();
            assert!(cut == 0 || r.is_err(), "cut at {cut}");
        }
    }
}
