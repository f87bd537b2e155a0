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

use serde_json::value::RawValue;
use uuid::Uuid;

use crate::message::Message;

const ENCRYPTED: u8 = 1;
const HAS_TRACE: u8 = 2;
const HAS_SUB: u8 = 4;

/// A message whose fields do not fit the layout: a transaction id or subject of 64 KiB or
/// more, or a frame of 4 GiB or more. The HTTP layer bounds all three well below that; this
/// is the last line, so a bad value is refused instead of panicking a flusher.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field} is too long for a message frame ({len} bytes)")]
pub struct TooLarge {
    pub field: &'static str,
    pub len: usize,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("corrupt segment frame")]
pub struct Corrupt;

/// Appends the frame of `m` to `out`; on error `out` is left as it was.
pub fn encode_into(m: &Message, out: &mut Vec<u8>) -> Result<(), TooLarge> {
    let start = out.len();
    let written = write(m, out);
    if written.is_err() {
        out.truncate(start);
    }
    written
}

fn write(m: &Message, out: &mut Vec<u8>) -> Result<(), TooLarge> {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    let mut flags = 0;
    if m.encrypted {
        flags |= ENCRYPTED;
    }
    if m.trace_id.is_some() {
        flags |= HAS_TRACE;
    }
    if m.producer_sub.is_some() {
        flags |= HAS_SUB;
    }
    out.push(flags);
    out.extend_from_slice(m.message_id.as_bytes());
    put_str(out, "transaction id", &m.transaction_id)?;
    if let Some(t) = m.trace_id {
        out.extend_from_slice(t.as_bytes());
    }
    if let Some(s) = &m.producer_sub {
        put_str(out, "producer subject", s)?;
    }
    out.extend_from_slice(m.payload.get().as_bytes());
    let len = out.len() - start - 4;
    let len = u32::try_from(len).map_err(|_| TooLarge {
        field: "message",
        len,
    })?;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    Ok(())
}

/// The frame of one message.
pub fn encode(m: &Message) -> Result<Vec<u8>, TooLarge> {
    let mut v = Vec::with_capacity(64 + m.transaction_id.len() + m.payload.get().len());
    encode_into(m, &mut v)?;
    Ok(v)
}

fn put_str(out: &mut Vec<u8>, field: &'static str, s: &str) -> Result<(), TooLarge> {
    let len = u16::try_from(s.len()).map_err(|_| TooLarge {
        field,
        len: s.len(),
    })?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

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

/// The body of a frame: everything after its length prefix.
fn body(frame: &[u8]) -> Result<&[u8], Corrupt> {
    frame.get(4..).ok_or(Corrupt)
}

/// The message of one frame (length prefix included). The payload must still be JSON: a
/// frame that is not is a storage fault, never something to skip silently.
pub fn decode(frame: &[u8]) -> Result<Message, Corrupt> {
    let mut r = Reader { b: body(frame)? };
    let flags = r.take(1)?[0];
    let message_id = r.uuid()?;
    let transaction_id = r.str()?.to_string();
    let trace_id = if flags & HAS_TRACE != 0 {
        Some(r.uuid()?)
    } else {
        None
    };
    let producer_sub = if flags & HAS_SUB != 0 {
        Some(r.str()?.to_string())
    } else {
        None
    };
    let payload = std::str::from_utf8(r.b)
        .ok()
        .and_then(|t| RawValue::from_string(t.to_string()).ok())
        .ok_or(Corrupt)?;
    Ok(Message {
        message_id,
        transaction_id,
        trace_id,
        producer_sub,
        encrypted: flags & ENCRYPTED != 0,
        payload,
    })
}

/// Only the message id of a frame: what a duplicate's verdict reports.
pub fn message_id(frame: &[u8]) -> Result<Uuid, Corrupt> {
    let mut r = Reader { b: body(frame)? };
    r.take(1)?;
    r.uuid()
}

/// Only the transaction id of a frame: what an ack resolves from a leased segment.
pub fn transaction_id(frame: &[u8]) -> Result<&str, Corrupt> {
    let mut r = Reader { b: body(frame)? };
    r.take(1)?;
    r.uuid()?;
    r.str()
}

/// The frames of a segment, in offset order, each with its length prefix: cheap to skip,
/// decoded only when wanted.
pub fn split(segment: &[u8]) -> impl Iterator<Item = Result<&[u8], Corrupt>> {
    let mut rest = segment;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let frame = rest
            .get(..4)
            .map(|h| 4 + u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize)
            .and_then(|len| rest.get(..len));
        match frame {
            Some(f) => {
                rest = &rest[f.len()..];
                Some(Ok(f))
            }
            None => {
                rest = &[];
                Some(Err(Corrupt))
            }
        }
    })
}

/// The messages of a segment, in offset order.
pub fn iter(segment: &[u8]) -> impl Iterator<Item = Result<Message, Corrupt>> + '_ {
    split(segment).map(|f| f.and_then(decode))
}

/// The raw frame at `index` of a segment: what a dead letter keeps as its snapshot.
pub fn raw_at(segment: &[u8], index: usize) -> Result<&[u8], Corrupt> {
    split(segment).nth(index).ok_or(Corrupt)?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(txid: &str, payload: &str) -> Message {
        Message {
            message_id: Uuid::now_v7(),
            transaction_id: txid.into(),
            trace_id: None,
            producer_sub: None,
            encrypted: false,
            payload: RawValue::from_string(payload.into()).unwrap(),
        }
    }

    #[test]
    fn frames_round_trip_and_concatenate() {
        let a = Message {
            trace_id: Some(Uuid::new_v4()),
            producer_sub: Some("svc-a".into()),
            ..message("order-1", r#"{"n":1}"#)
        };
        let b = Message {
            encrypted: true,
            ..message("ünïcode", "null")
        };
        let mut seg = encode(&a).unwrap();
        encode_into(&b, &mut seg).unwrap();
        let got: Vec<Message> = iter(&seg).collect::<Result<_, _>>().unwrap();
        assert_eq!(got, vec![a.clone(), b.clone()]);
        let second = raw_at(&seg, 1).unwrap();
        assert_eq!(decode(second).unwrap(), b);
        assert_eq!(message_id(second).unwrap(), b.message_id);
        assert!(raw_at(&seg, 2).is_err());
    }

    #[test]
    fn truncation_is_reported_not_panicked() {
        let f = encode(&Message {
            producer_sub: Some("s".into()),
            ..message("t", "{}")
        })
        .unwrap();
        for cut in 0..f.len() {
            let r: Result<Vec<_>, _> = iter(&f[..cut]).collect();
            assert!(cut == 0 || r.is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn fields_past_the_layout_are_refused_not_panicked() {
        let long = "x".repeat(64 * 1024);
        let mut out = b"kept".to_vec();
        let sub = Message {
            producer_sub: Some(long.clone()),
            ..message("t", "{}")
        };
        assert_eq!(
            encode_into(&sub, &mut out),
            Err(TooLarge {
                field: "producer subject",
                len: long.len()
            })
        );
        assert_eq!(out, b"kept", "nothing half-written");
        assert!(encode(&message(&long, "{}")).is_err());
        let just_fits = "y".repeat(u16::MAX as usize);
        assert!(encode(&message(&just_fits, "{}")).is_ok());
    }
}
