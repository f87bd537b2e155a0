//! Opening encrypted payloads on the way out, in one place for every route that returns
//! messages (pops, dead letters, traces).

use regent_store::Message;

use crate::Service;

impl Service {
    /// Replaces an encrypted payload by the client's JSON. One that cannot be opened (the key
    /// changed, or the broker has none) stays the envelope, with a warning naming `queue`.
    pub(crate) fn open(&self, queue: &str, m: &mut Message) {
        if !m.encrypted {
            return;
        }
        match self.cipher.as_ref().map(|c| c.decrypt(&m.payload)) {
            Some(Ok(plain)) => {
                m.payload = plain;
                m.encrypted = false;
            }
            _ => tracing::warn!(%queue, "cannot decrypt payload; answering with the envelope"),
        }
    }
}
