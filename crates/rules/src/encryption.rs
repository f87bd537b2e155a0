//! Payload encryption at rest for queues with `encryptionEnabled`: AES-256-GCM with a fresh
//! 96-bit nonce per message, stored in Queen's envelope `{"encrypted","iv","authTag"}` (base64)
//! so data written by either broker stays readable by the other.

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

const TAG_LEN: usize = 16;

#[derive(Clone)]
pub struct PayloadCipher {
    cipher: Aes256Gcm,
}

#[derive(Debug, thiserror::Error)]
pub enum CipherError {
    #[error("QUEEN_ENCRYPTION_KEY must be 64 hex characters (32 bytes)")]
    BadKey,
    #[error("encrypted payload is malformed or was written with another key")]
    Undecryptable,
}

impl PayloadCipher {
    pub fn from_hex(key: &str) -> Result<PayloadCipher, CipherError> {
        let bytes = hex::decode(key.trim()).map_err(|_| CipherError::BadKey)?;
        if bytes.len() != 32 {
            return Err(CipherError::BadKey);
        }
        Ok(PayloadCipher {
            cipher: Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&bytes)),
        })
    }

    /// Seals a payload (JSON text) into Queen's envelope (JSON text).
    pub fn encrypt(&self, payload: &RawValue) -> Box<RawValue> {
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let sealed = self
            .cipher
            .encrypt(&nonce, payload.get().as_bytes())
            .expect("AES-GCM encryption does not fail for in-memory input");
        let (body, tag) = sealed.split_at(sealed.len() - TAG_LEN);
        let envelope = json!({ "encrypted": B64.encode(body), "iv": B64.encode(nonce), "authTag": B64.encode(tag) });
        RawValue::from_string(envelope.to_string()).expect("the envelope is JSON")
    }

    /// Opens an envelope back into the payload's JSON text.
    pub fn decrypt(&self, envelope: &RawValue) -> Result<Box<RawValue>, CipherError> {
        #[derive(Deserialize)]
        struct Envelope<'a> {
            encrypted: &'a str,
            iv: &'a str,
            #[serde(rename = "authTag")]
            auth_tag: &'a str,
        }
        let e: Envelope<'_> =
            serde_json::from_str(envelope.get()).map_err(|_| CipherError::Undecryptable)?;
        let b64 = |s: &str| B64.decode(s).map_err(|_| CipherError::Undecryptable);
        let (mut body, iv, tag) = (b64(e.encrypted)?, b64(e.iv)?, b64(e.auth_tag)?);
        if iv.len() != 12 || tag.len() != TAG_LEN {
            return Err(CipherError::Undecryptable);
        }
        body.extend_from_slice(&tag);
        let plain = self
            .cipher
            .decrypt(Nonce::from_slice(&iv), body.as_slice())
            .map_err(|_| CipherError::Undecryptable)?;
        let text = String::from_utf8(plain).map_err(|_| CipherError::Undecryptable)?;
        RawValue::from_string(text).map_err(|_| CipherError::Undecryptable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    #[test]
    fn round_trip_and_tamper() {
        let c = PayloadCipher::from_hex(KEY).unwrap();
        let v = RawValue::from_string(r#"{"card":"4111","n":[1,2,3]}"#.to_string()).unwrap();
        let env = c.encrypt(&v);
        let fields: serde_json::Value = serde_json::from_str(env.get()).unwrap();
        assert!(fields["encrypted"].is_string() && fields["authTag"].is_string());
        assert!(!env.get().contains("4111"));
        assert_eq!(c.decrypt(&env).unwrap().get(), v.get());
        let mut bad = fields.clone();
        bad["authTag"] = json!(B64.encode([0u8; 16]));
        let bad = RawValue::from_string(bad.to_string()).unwrap();
        assert!(c.decrypt(&bad).is_err());
    }

    #[test]
    fn key_must_be_32_bytes_of_hex() {
        assert!(PayloadCipher::from_hex("abcd").is_err());
        assert!(PayloadCipher::from_hex(&"zz".repeat(32)).is_err());
    }
}
