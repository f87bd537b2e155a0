//! A pop's answer, sent so that its lease is delivered with the last bytes: the answer's
//! body hands the lease over (`regent_service::Handover::deliver`) when its last frame goes to
//! the connection; a body dropped before that (the client went away, shutdown cut it off)
//! drops the handover, which releases the lease.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body::{Frame, SizeHint};

use regent_service::Handover;

/// Answers go out in frames of this size. The connection asks for the next frame only when
/// its buffer has room, so a client that stops reading a large answer keeps the last frame
/// (the delivery) back.
const FRAME: usize = 64 * 1024;

/// The JSON answer; with a handover, sent in frames and the lease delivered with the last.
pub fn respond(json: String, handover: Option<Handover>) -> Response {
    let json_type = [(header::CONTENT_TYPE, "application/json")];
    match handover {
        None => (json_type, json).into_response(),
        Some(handover) => {
            let body = Body::new(HandoverBody {
                rest: Bytes::from(json),
                handover,
            });
            (json_type, body).into_response()
        }
    }
}

struct HandoverBody {
    rest: Bytes,
    handover: Handover,
}

impl http_body::Body for HandoverBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.rest.is_empty() {
            return Poll::Ready(None);
        }
        let n = self.rest.len().min(FRAME);
        if n == self.rest.len() && !self.handover.deliver() {
            // Released (shutdown gave up on this connection): the client must not get a
            // complete answer naming a lease that no longer holds anything.
            return Poll::Ready(Some(Err(std::io::Error::other(
                "the lease was released before the answer was sent",
            ))));
        }
        let frame = self.rest.split_to(n);
        Poll::Ready(Some(Ok(Frame::data(frame))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.rest.len() as u64)
    }
}
