//! Signed JWTs for `private_key_jwt` client authentication (RFC 7523 §2.2, the client
//! assertion of the client-credentials grant): reading the PEM private key, signing with ES256
//! or RS256 through the `ring` provider rustls already carries (no crypto of our own), and the
//! JOSE form of an ECDSA signature (`r || s`, where ring gives ASN.1 DER).

use std::sync::Arc;

use rustls::crypto::ring::sign::any_supported_type;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::PrivateKeyDer;
use rustls::sign::SigningKey;
use rustls::SignatureScheme;
use serde_json::{json, Value};

use super::pkce::{base64url, random_token};
use super::OAuthError;

/// How long an assertion is valid: long enough for one token request.
const LIFETIME: u64 = 300;

/// `client_assertion_type` of a JWT client assertion.
pub const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The JWS algorithms reasonix signs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alg {
    Es256,
    Rs256,
}

impl Alg {
    pub fn parse(name: &str) -> Result<Alg, OAuthError> {
        match name.to_ascii_uppercase().as_str() {
            "ES256" => Ok(Alg::Es256),
            "RS256" => Ok(Alg::Rs256),
            other => Err(OAuthError::Unsupported(format!(
                "signing_algorithm `{other}`: reasonix signs client assertions with ES256 or \
                 RS256"
            ))),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Alg::Es256 => "ES256",
            Alg::Rs256 => "RS256",
        }
    }

    fn scheme(self) -> SignatureScheme {
        match self {
            Alg::Es256 => SignatureScheme::ECDSA_NISTP256_SHA256,
            Alg::Rs256 => SignatureScheme::RSA_PKCS1_SHA256,
        }
    }
}

/// A private key ready to sign.
pub struct Key {
    key: Arc<dyn SigningKey>,
    alg: Alg,
}

impl Key {
    /// Reads `pem` (PKCS#8, SEC1 or PKCS#1): the PEM text itself, or the path of a file
    /// holding it. `alg` defaults to what the key is: ES256 for a P-256 key, RS256 for RSA.
    pub fn load(pem: &str, alg: Option<Alg>) -> Result<Key, OAuthError> {
        let text = match pem.trim_start().starts_with("-----BEGIN") {
            true => pem.to_string(),
            false => std::fs::read_to_string(pem)
                .map_err(|e| OAuthError::io(format!("reading the private key {pem}"), e))?,
        };
        let der = PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|e| {
            OAuthError::Unsupported(format!("the private key is not a PEM private key: {e}"))
        })?;
        let key = any_supported_type(&der)
            .map_err(|e| OAuthError::Unsupported(format!("the private key cannot sign: {e}")))?;
        let alg = match alg {
            Some(alg) => alg,
            None => match key.algorithm() {
                rustls::SignatureAlgorithm::ECDSA => Alg::Es256,
                rustls::SignatureAlgorithm::RSA => Alg::Rs256,
                other => {
                    return Err(OAuthError::Unsupported(format!(
                        "a {other:?} key: reasonix signs with ES256 or RS256"
                    )))
                }
            },
        };
        Ok(Key { key, alg })
    }

    pub fn alg(&self) -> Alg {
        self.alg
    }

    /// A compact JWS of `claims`.
    pub fn sign(&self, claims: &Value) -> Result<String, OAuthError> {
        let header = json!({"alg": self.alg.name(), "typ": "JWT"});
        let input = format!(
            "{}.{}",
            base64url(header.to_string().as_bytes()),
            base64url(claims.to_string().as_bytes())
        );
        let signer = self
            .key
            .choose_scheme(&[self.alg.scheme()])
            .ok_or_else(|| {
                OAuthError::Unsupported(format!("the private key cannot sign {}", self.alg.name()))
            })?;
        let signature = signer
            .sign(input.as_bytes())
            .map_err(|e| OAuthError::Unsupported(format!("signing failed: {e}")))?;
        let signature = match self.alg {
            Alg::Es256 => der_to_jose(&signature, 32)?,
            Alg::Rs256 => signature,
        };
        Ok(format!("{input}.{}", base64url(&signature)))
    }
}

/// The client assertion of RFC 7523 §3: issued by and about `client_id`, for `audience` (the
/// authorization server's issuer), short-lived and unique.
pub fn client_assertion(key: &Key, client_id: &str, audience: &str) -> Result<String, OAuthError> {
    let now = super::grant::now();
    let jti = random_token().map_err(|e| OAuthError::io("reading random bytes", e))?;
    key.sign(&json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + LIFETIME,
        "jti": jti,
    }))
}

/// An ASN.1 DER `SEQUENCE { INTEGER r, INTEGER s }` as the fixed-width `r || s` of JWS
/// (RFC 7518 §3.4).
fn der_to_jose(der: &[u8], width: usize) -> Result<Vec<u8>, OAuthError> {
    let bad = || OAuthError::Unsupported("an ECDSA signature that is not DER".into());
    let body = match der {
        [0x30, len, rest @ ..] if usize::from(*len) == rest.len() => rest,
        _ => return Err(bad()),
    };
    let mut out = Vec::with_capacity(width * 2);
    let mut rest = body;
    for _ in 0..2 {
        let (int, after) = match rest {
            [0x02, len, tail @ ..] if usize::from(*len) <= tail.len() => {
                tail.split_at(usize::from(*len))
            }
            _ => return Err(bad()),
        };
        // DER adds a 0x00 before a high bit; a short value is left-padded.
        let int = match int.iter().position(|&b| b != 0) {
            Some(first) => &int[first..],
            None => &[][..],
        };
        if int.len() > width {
            return Err(bad());
        }
        out.extend(std::iter::repeat_n(0, width - int.len()));
        out.extend_from_slice(int);
        rest = after;
    }
    match rest.is_empty() {
        true => Ok(out),
        false => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_signatures_become_fixed_width_r_and_s() {
        // r with a leading 0x00 (high bit set), s shorter than 32 bytes.
        let mut der = vec![0x30, 0x00, 0x02, 33, 0x00];
        der.extend([0x80; 32]);
        der.extend([0x02, 2, 0x01, 0x02]);
        der[1] = (der.len() - 2) as u8;
        let jose = der_to_jose(&der, 32).unwrap();
        assert_eq!(jose.len(), 64);
        assert_eq!(&jose[..32], &[0x80; 32]);
        assert_eq!(&jose[32..62], &[0; 30]);
        assert_eq!(&jose[62..], &[1, 2]);
        assert!(
            der_to_jose(&[0x30, 3, 0x02, 1, 1], 32).is_err(),
            "one integer"
        );
        assert!(der_to_jose(&[0x31, 0], 32).is_err());
    }

    #[test]
    fn algorithms_are_named_and_others_refused() {
        assert_eq!(Alg::parse("es256").unwrap(), Alg::Es256);
        assert_eq!(Alg::parse("RS256").unwrap(), Alg::Rs256);
        let err = Alg::parse("HS256").unwrap_err();
        assert!(err.to_string().contains("ES256 or RS256"), "{err}");
        let err = Key::load("-----BEGIN PRIVATE KEY-----\nnope\n", None)
            .err()
            .unwrap();
        assert!(err.to_string().contains("not a PEM private key"), "{err}");
    }
}
