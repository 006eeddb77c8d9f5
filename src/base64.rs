//! Base64 (RFC 4648): the standard alphabet with padding (HTTP Basic credentials, `data:`
//! URLs), the unpadded URL-safe one (PKCE, JWT), and any other alphabet over the same bit
//! layout (bcrypt's). A leaf: it uses nothing in the crate.

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `bytes` in `alphabet`, most significant bits first, padded with `=` when `pad`.
pub fn encode(bytes: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let symbols = chunk.len() + 1;
        for i in 0..4 {
            if i < symbols {
                out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

/// Base64 with `+/` and padding (HTTP Basic credentials).
pub fn base64(bytes: &[u8]) -> String {
    encode(bytes, STANDARD, true)
}

/// Unpadded base64url (PKCE, JWT).
pub fn base64url(bytes: &[u8]) -> String {
    encode(bytes, URL_SAFE, false)
}

/// Decodes standard base64 with padding (what [`base64`] writes); `None` for anything else:
/// another alphabet, a missing or misplaced `=`, or a length that is not a multiple of 4.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if bytes.len() % 4 != 0 {
        return None;
    }
    let value = |c: u8| STANDARD.iter().position(|&s| s == c).map(|v| v as u32);
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    let chunks = bytes.chunks(4).count();
    for (i, chunk) in bytes.chunks(4).enumerate() {
        let pads = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pads > 2 || (pads > 0 && i + 1 != chunks) {
            return None;
        }
        let mut n = 0u32;
        for &c in &chunk[..4 - pads] {
            n = (n << 6) | value(c)?;
        }
        n <<= 6 * pads as u32;
        let decoded = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&decoded[..3 - pads]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain}");
            assert_eq!(
                decode(encoded).as_deref(),
                Some(plain.as_bytes()),
                "{encoded}"
            );
            assert_eq!(base64url(plain.as_bytes()), encoded.trim_end_matches('='));
        }
        assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
        assert_eq!(decode("+/8="), Some(vec![0xfb, 0xff]));
        for bad in ["Zg=", "Zg==Zm8=", "Z===", "Zm-v", "Zm9v\n"] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
