//! The text of a key: `kgb_<id>_<secret>`, 12 and 64 lowercase hex digits.

use sha2::{Digest, Sha256};

use super::KeyError;

const PREFIX: &str = "kgb_";
const ID_HEX: usize = 12;
const SECRET_HEX: usize = 64;

/// A key as a client presents it.
pub struct Token {
    pub id: String,
    secret: String,
}

impl Token {
    /// `None` unless `text` has the form of a key.
    pub fn parse(text: &str) -> Option<Token> {
        let rest = text.trim().strip_prefix(PREFIX)?;
        let (id, secret) = rest.split_once('_')?;
        let hex = |s: &str, n: usize| {
            s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        };
        (hex(id, ID_HEX) && hex(secret, SECRET_HEX)).then(|| Token {
            id: id.to_string(),
            secret: secret.to_string(),
        })
    }

    /// The SHA-256 of the secret, as the key file keeps it.
    pub fn secret_hash(&self) -> [u8; 32] {
        Sha256::digest(self.secret.as_bytes()).into()
    }

    /// Whether `text` holds something of a key's form anywhere (for
    /// refusing keys in URLs).
    pub fn appears_in(text: &str) -> bool {
        text.match_indices(PREFIX).any(|(at, _)| {
            text.get(at..at + PREFIX.len() + ID_HEX + 1 + SECRET_HEX)
                .is_some_and(|t| Token::parse(t).is_some())
        })
    }
}

/// A key just made: the text to hand over once, and what the file keeps.
pub struct NewKey {
    pub text: String,
    pub id: String,
    pub hash: String,
}

impl NewKey {
    pub fn generate() -> Result<NewKey, KeyError> {
        let mut id = [0u8; ID_HEX / 2];
        let mut secret = [0u8; SECRET_HEX / 2];
        getrandom::fill(&mut id)
            .and_then(|()| getrandom::fill(&mut secret))
            .map_err(|e| KeyError::Invalid(format!("no randomness for a new key: {e}")))?;
        let (id, secret) = (hex::encode(id), hex::encode(secret));
        let text = format!("{PREFIX}{id}_{secret}");
        let hash = hex::encode(Sha256::digest(secret.as_bytes()));
        Ok(NewKey { text, id, hash })
    }
}
