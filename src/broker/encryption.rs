//! Payload encryption at rest for queues with `encryptionEnabled`: AES-256-GCM with a fresh
//! 96-bit nonce per message, stored in Queen's envelope `{"encrypted","iv","authTag"}` (base64)
//! so data written by either broker stays readable by the other.

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};

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

    pub fn encrypt(&self, payload: &Value) -> Value {
        let plain = serde_json::to_vec(payload).expect("a JSON value serializes");
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        let sealed = self
            .cipher
            .encrypt(&nonce, plain.as_slice())
            .expect("AES-GCM encryption does not fail for in-memory input");
        let (body, tag) = sealed.split_at(sealed.len() - TAG_LEN);
        json!({ "encrypted": B64.encode(body), "iv": B64.encode(nonce), "authTag": B64.encode(tag) })
    }

    pub fn decrypt(&self, envelope: &Value) -> Result<Value, CipherError> {
        let field = |k: &str| {
            envelope
                .get(k)
                .and_then(Value::as_str)
                .and_then(|s| B64.decode(s).ok())
                .ok_or(CipherError::Undecryptable)
        };
        let (mut body, iv, tag) = (field("encrypted")?, field("iv")?, field("authTag")?);
        if iv.len() != 12 || tag.len() != TAG_LEN {
            return Err(CipherError::Undecryptable);
        }
        body.extend_from_slice(&tag);
        let plain = self
            .cipher
            .decrypt(Nonce::from_slice(&iv), body.as_slice())
            .map_err(|_| CipherError::Undecryptable)?;
        serde_json::from_slice(&plain).map_err(|_| CipherError::Undecryptable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    #[test]
    fn round_trip_and_tamper() {
        let c = PayloadCipher::from_hex(KEY).unwrap();
        let v = json!({"card": "4111", "n": [1, 2, 3]});
        let env = c.encrypt(&v);
        assert!(env.get("encrypted").is_some() && env.get("authTag").is_some());
        assert_ne!(env["encrypted"], json!(v.to_string()));
        assert_eq!(c.decrypt(&env).unwrap(), v);
        let mut bad = env.clone();
        bad["authTag"] = json!(B64.encode([0u8; 16]));
        assert!(c.decrypt(&bad).is_err());
    }

    #[test]
    fn key_must_be_32_bytes_of_hex() {
        assert!(PayloadCipher::from_hex("abcd").is_err());
        assert!(PayloadCipher::from_hex(&"zz".repeat(32)).is_err());
    }
}
