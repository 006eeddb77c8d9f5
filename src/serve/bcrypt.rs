//! bcrypt password hashes (`$2b$`), for `[serve] password_hash`: hashing with a fresh salt,
//! verifying a stored hash in constant time, and bcrypt's own base64. `$2a$` and `$2y$` hashes
//! verify the same way (they differ from `$2b$` only for passwords of 255 bytes and more,
//! which no one types into a login form).

use super::blowfish::Blowfish;

/// The cost new hashes get: 2^12 rounds of the key schedule (a fraction of a second).
pub const DEFAULT_COST: u32 = 12;
/// The lowest cost `--hash-password` produces, and the lowest a stored hash may have.
pub const MIN_COST: u32 = 10;

const ALPHABET: &[u8; 64] = b"./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const MAGIC: &[u8; 24] = b"OrpheanBeholderScryDoubt";

/// Why a stored hash cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadHash(pub String);

impl std::fmt::Display for BadHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a bcrypt hash: {}", self.0)
    }
}

/// A parsed `$2b$CC$<22 salt chars><31 hash chars>`.
struct Parsed {
    cost: u32,
    salt: [u8; 16],
    hash: String,
}

fn parse(stored: &str) -> Result<Parsed, BadHash> {
    let bad = |why: &str| BadHash(why.to_string());
    let rest = ["$2b$", "$2a$", "$2y$"]
        .iter()
        .find_map(|prefix| stored.strip_prefix(prefix))
        .ok_or_else(|| bad("it must start with $2b$ (or $2a$, $2y$)"))?;
    let (cost, rest) = rest.split_once('$').ok_or_else(|| bad("no cost"))?;
    let cost: u32 = match (cost.len(), cost.parse()) {
        (2, Ok(cost)) if (4..=31).contains(&cost) => cost,
        _ => return Err(bad("the cost must be two digits from 04 to 31")),
    };
    if rest.len() != 53 || !rest.bytes().all(|b| ALPHABET.contains(&b)) {
        return Err(bad(
            "the salt and hash must be 53 characters of bcrypt's base64",
        ));
    }
    let decoded = decode(&rest[..22], 16).ok_or_else(|| bad("bad salt"))?;
    let mut salt = [0u8; 16];
    salt.copy_from_slice(&decoded);
    Ok(Parsed {
        cost,
        salt,
        hash: rest[22..].to_string(),
    })
}

/// The 23 bytes bcrypt keeps of its output for `password`, `salt` and `cost`.
fn raw(password: &[u8], salt: &[u8; 16], cost: u32) -> [u8; 23] {
    // `$2b$`: at most 72 bytes of the password, then its terminating NUL; the key schedule
    // uses only the first 72 bytes of that.
    let mut key: Vec<u8> = password[..password.len().min(72)].to_vec();
    key.push(0);
    let mut state = Blowfish::initial();
    state.expand_key(&key, salt);
    for _ in 0..(1u64 << cost) {
        state.expand_key(&key, &[]);
        state.expand_key(salt, &[]);
    }
    let mut words = [0u32; 6];
    for (word, chunk) in words.iter_mut().zip(MAGIC.chunks(4)) {
        *word = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
    for _ in 0..64 {
        for pair in words.chunks_mut(2) {
            (pair[0], pair[1]) = state.encrypt(pair[0], pair[1]);
        }
    }
    let mut out = [0u8; 23];
    for (i, byte) in words
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .take(23)
        .enumerate()
    {
        out[i] = byte;
    }
    out
}

/// The full hash string of `password` with `salt` at `cost` (4..=31).
pub fn hash_with_salt(password: &[u8], salt: &[u8; 16], cost: u32) -> String {
    format!(
        "$2b${cost:02}${}{}",
        encode(salt),
        encode(&raw(password, salt, cost))
    )
}

/// Whether `password` matches the stored hash. The comparison takes the same time wherever
/// the strings differ.
pub fn verify(password: &[u8], stored: &str) -> Result<bool, BadHash> {
    let parsed = parse(stored)?;
    let computed = encode(&raw(password, &parsed.salt, parsed.cost));
    Ok(super::auth::same(
        computed.as_bytes(),
        parsed.hash.as_bytes(),
    ))
}

/// Checks a stored hash's shape without computing anything (at startup); its cost.
pub fn check(stored: &str) -> Result<u32, BadHash> {
    parse(stored).map(|parsed| parsed.cost)
}

/// bcrypt's base64: its own alphabet, most significant bits first, no padding.
fn encode(bytes: &[u8]) -> String {
    crate::base64::encode(bytes, ALPHABET, false)
}

/// The first `len` bytes that `text` encodes; `None` when it holds fewer.
fn decode(text: &str, len: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(len);
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes() {
        let value = ALPHABET.iter().position(|&a| a == c)? as u32;
        acc = (acc << 6) | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
            if out.len() == len {
                return Some(out);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Published vectors: Openwall's crypt_blowfish wrapper.c set (as also used by John the
    /// Ripper and PHP's test suite) and jBCrypt's empty-password vector.
    const VECTORS: &[(&[u8], &str)] = &[
        (
            b"U*U",
            "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
        ),
        (
            b"U*U*",
            "$2a$05$CCCCCCCCCCCCCCCCCCCCC.VGOzA784oUp/Z0DY336zx7pLYAy0lwK",
        ),
        (
            b"U*U*U",
            "$2a$05$XXXXXXXXXXXXXXXXXXXXXOAcXxm9kjPGEMsLznoKqmqw7tc8WCx4a",
        ),
        (
            b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789chars after 72 are ignored",
            "$2a$05$abcdefghijklmnopqrstuu5s2v8.iXieOjg/.AySBTTZIIVFJeBui",
        ),
        (
            b"\xff\xff\xa3",
            "$2b$05$/OK.fbVrR/bpIqNJ5ianF.CE5elHaaO4EbggVDjb8P19RukzXSM3e",
        ),
        (
            b"\xa3",
            "$2b$05$/OK.fbVrR/bpIqNJ5ianF.Sa7shbm4.OzKpvFnX1pQLmQW96oUlCq",
        ),
        (
            b"U*U*U*U*",
            "$2a$05$c92SVSfjeiCD6F2nAD6y0uBpJDjdRkt0EgeC4/31Rf2LUZbDRDE.O",
        ),
        (
            b"",
            "$2a$06$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s.",
        ),
    ];

    #[test]
    fn published_vectors_verify() {
        for (password, hash) in VECTORS {
            assert_eq!(verify(password, hash), Ok(true), "{hash}");
        }
    }

    #[test]
    fn a_wrong_password_does_not_verify() {
        for (password, hash) in VECTORS {
            let mut wrong = password.to_vec();
            wrong.push(b'x');
            if wrong.len() <= 72 {
                assert_eq!(verify(&wrong, hash), Ok(false), "{hash}");
            }
        }
    }

    #[test]
    fn hashing_reproduces_a_vector_with_its_salt() {
        let parsed = parse(VECTORS[0].1).unwrap();
        let ours = hash_with_salt(VECTORS[0].0, &parsed.salt, 5);
        assert_eq!(&ours[4..], &VECTORS[0].1[4..]);
        assert!(ours.starts_with("$2b$05$"));
    }

    #[test]
    fn base64_round_trips() {
        let bytes: Vec<u8> = (0u8..23).map(|b| b.wrapping_mul(37)).collect();
        assert_eq!(decode(&encode(&bytes), 23).unwrap(), bytes);
        assert_eq!(encode(&[0u8; 16]).len(), 22);
        assert_eq!(encode(&[0u8; 23]).len(), 31);
    }

    #[test]
    fn malformed_hashes_are_refused() {
        for bad in [
            "",
            "$1$abc",
            "$2b$5$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
            "$2b$32$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
            "$2b$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOe",
            "$2b$05$CCCCCCCCCCCCCCCCCCCCC!E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW",
        ] {
            assert!(verify(b"x", bad).is_err(), "{bad}");
        }
    }
}
