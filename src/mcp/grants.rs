//! Launch grants for servers declared by project files (`./reasonix.toml`, `.mcp.json`): a
//! repository must not start processes or open connections on its own. A grant names the
//! workspace, the server and the SHA-256 of the server's launch identity (command, arguments
//! and environment variable names, or the URL), so changing any of those invalidates it.
//!
//! Grants live in `<home>/mcp-grants.json`, written atomically. An unreadable or malformed
//! file grants nothing (and is replaced on the next write).

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub const FILE_NAME: &str = "mcp-grants.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub workspace: String,
    pub server: String,
    /// Hex SHA-256 of the launch identity.
    pub identity: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct GrantFile {
    version: u32,
    grants: Vec<Grant>,
}

/// The grant file of one reasonix home.
#[derive(Debug, Clone)]
pub struct GrantStore {
    path: PathBuf,
}

impl GrantStore {
    pub fn new(home: &Path) -> GrantStore {
        GrantStore {
            path: home.join(FILE_NAME),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> GrantFile {
        std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    pub fn is_granted(&self, workspace: &Path, server: &str, identity: &str) -> bool {
        let workspace = workspace.to_string_lossy();
        self.read()
            .grants
            .iter()
            .any(|g| g.workspace == workspace && g.server == server && g.identity == identity)
    }

    /// Records a grant, replacing any earlier one for the same workspace and server.
    pub fn grant(&self, workspace: &Path, server: &str, identity: &str) -> io::Result<()> {
        let mut file = self.read();
        let grant = Grant {
            workspace: workspace.to_string_lossy().into_owned(),
            server: server.to_string(),
            identity: identity.to_string(),
        };
        file.version = 1;
        file.grants
            .retain(|g| !(g.workspace == grant.workspace && g.server == grant.server));
        file.grants.push(grant);
        let text = serde_json::to_string_pretty(&file).map_err(io::Error::other)?;
        crate::fsutil::write_private(&self.path, format!("{text}\n").as_bytes())
    }
}

/// SHA-256 (FIPS 180-4) of `data` as lowercase hex.
pub fn sha256_hex(data: &[u8]) -> String {
    sha256(data).iter().map(|b| format!("{b:02x}")).collect()
}

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

fn sha256(data: &[u8]) -> [u8; 32] {
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut message = data.to_vec();
    let bit_len = (data.len() as u64).wrapping_mul(8);
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&bit_len.to_be_bytes());
    for block in message.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7]
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [
                t1.wrapping_add(t2),
                v[0],
                v[1],
                v[2],
                v[3].wrapping_add(t1),
                v[4],
                v[5],
                v[6],
            ];
        }
        for (state, add) in h.iter_mut().zip(v) {
            *state = state.wrapping_add(add);
        }
    }
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(4).zip(h) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_matches_the_standard_vectors() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            sha256_hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        assert_eq!(
            sha256_hex(&[b'a'; 1000]),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"
        );
    }

    #[test]
    fn grants_are_per_workspace_server_and_identity_and_replace_each_other() {
        let dir = std::env::temp_dir().join(format!("reasonix-grants-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = GrantStore::new(&dir.join("home"));
        let ws = Path::new("/ws");
        assert!(!store.is_granted(ws, "s", "id1"));
        store.grant(ws, "s", "id1").unwrap();
        assert!(store.is_granted(ws, "s", "id1"));
        assert!(!store.is_granted(Path::new("/other"), "s", "id1"));
        assert!(!store.is_granted(ws, "t", "id1"));
        store.grant(ws, "s", "id2").unwrap();
        assert!(
            !store.is_granted(ws, "s", "id1"),
            "a new identity replaces the old grant"
        );
        assert!(store.is_granted(ws, "s", "id2"));
        std::fs::write(store.path(), "not json").unwrap();
        assert!(!store.is_granted(ws, "s", "id2"));
        store.grant(ws, "s", "id3").unwrap();
        assert!(store.is_granted(ws, "s", "id3"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
