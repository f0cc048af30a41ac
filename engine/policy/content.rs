//! What a file holds, told by its first bytes where its name does not tell: a private key
//! under a name no rule lists (`deploy_key`, `id_rsa.bak`, `github.old`).
//!
//! Only files whose name may hide one are opened: a name with no extension, or with one a
//! copy or a key is given (`.bak`, `.old`, `.txt`…). Source files and documents are not.

use std::io::Read as _;
use std::path::Path;

use super::disk;

/// Extensions of files that may be a key under another name (compared ignoring case).
const SNIFFED_EXTENSIONS: &[&str] = &[
    "bak",
    "old",
    "orig",
    "backup",
    "bkp",
    "save",
    "sav",
    "tmp",
    "txt",
    "priv",
    "private",
    "secret",
    "asc",
    "gpg",
    "key",
    "pem",
    "ppk",
    "der",
    "id",
    "crt",
    "cer",
    "p8",
    "pk8",
    // Configuration that embeds a key (a cloud service account's JSON key file).
    "json",
    "yaml",
    "yml",
    "toml",
    "ini",
    "conf",
    "cfg",
    "properties",
    "prv",
    // OpenVPN's client profiles embed their key (`<key>`, `<tls-auth>`).
    "ovpn",
];

/// How much of a file is read: a key follows a certificate in some bundles.
const SNIFFED_BYTES: u64 = 8 * 1024;

/// `path` opened for reading when it is a regular file (through links). Opened without
/// waiting, so that a FIFO (which would block until a writer comes) or a device is never
/// waited on or read.
pub(super) fn open_regular(path: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    // What the decision already knows of the path spares opening a folder or a missing file.
    if !disk::is_file(path) {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// The first `limit` bytes of the regular file `path` as text (lossily), never waiting on a
/// FIFO or reading a device (see [`open_regular`]).
pub(crate) fn read_regular(path: &Path, limit: u64) -> Option<String> {
    let mut bytes = Vec::new();
    open_regular(path)?
        .take(limit)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// How many other names the regular file `path` has (through links), when it has any: a
/// hard link made earlier (`ln ~/.aws/credentials notes.txt`, an archive's link entry) is
/// the same file as a secret or `.git/config` under a name no rule protects, and which file
/// it shares cannot be told without searching the disk.
pub(crate) fn other_names(path: &Path) -> Option<u64> {
    hard_linked(path).map(|(_, names)| names - 1)
}

/// The identity of the regular file `path` (through links: its device and inode) and how
/// many names it has, when it has more than one (see [`other_names`]).
pub(crate) fn hard_linked(path: &Path) -> Option<((u64, u64), u64)> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = disk::metadata(path).ok()?;
    (meta.is_file() && meta.nlink() > 1).then(|| ((meta.dev(), meta.ino()), meta.nlink()))
}

/// What a call is told of a file with other names (see [`other_names`]).
pub(crate) fn other_names_reason(count: u64) -> String {
    let names = if count == 1 { "name" } else { "names" };
    format!(
        "has {count} other {names} (hard links): one may be a protected file (a secret, `.git/config`) under a name no rule protects"
    )
}

/// Whether the file named `name` may be a key under another name.
fn may_hide_a_key(name: &str) -> bool {
    // An editor's backup (`key.pem~`) or a numbered copy (`key.pem.1`) too.
    match name.trim_start_matches('.').rsplit_once('.') {
        None => true,
        Some((_, extension)) => {
            extension.ends_with('~')
                || extension.bytes().all(|b| b.is_ascii_digit())
                || SNIFFED_EXTENSIONS
                    .iter()
                    .any(|known| extension.eq_ignore_ascii_case(known))
        }
    }
}

/// The armour line of the private key `path` holds (`-----BEGIN OPENSSH PRIVATE KEY-----`,
/// PuTTY's `PuTTY-User-Key-File-3: …`, OpenVPN's `-----BEGIN OpenVPN Static key V1-----`),
/// or the marker of a key with no armour (see [`bare_key`]), when its name may hide one
/// and its first 8 KiB show one. `None` when it holds none, or cannot be read.
pub fn private_key(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    if !may_hide_a_key(name) {
        return None;
    }
    // A file saved as UTF-16 has a NUL beside each ASCII letter: without them, its text.
    let text = read_regular(path, SNIFFED_BYTES)?.replace('\0', "");
    text.lines()
        .map(|line| line.trim().trim_start_matches('\u{feff}'))
        .find_map(|line| {
            if line.starts_with("PuTTY-User-Key-File-") {
                return Some(line);
            }
            // The ssh.com (RFC 4716) armour, with four dashes.
            if line.starts_with("---- BEGIN SSH2") && line.contains("PRIVATE KEY") {
                return Some(line);
            }
            if let Some(marker) = bare_key(line) {
                return Some(marker);
            }
            // Anywhere in the line: after a key (`"private_key": "-----BEGIN …`, a JSON key
            // file) or a variable (`PRIVATE_KEY="-----BEGIN …`), and after a certificate
            // (a bundle of both on one line): every armour of the line is looked at.
            line.match_indices("-----BEGIN ").find_map(|(at, _)| {
                let armour = &line[at..];
                let header_end = armour[5..]
                    .find("-----")
                    .map_or(armour.len(), |end| end + 10);
                let header = &armour[..header_end.min(armour.len())];
                // OpenVPN's static and tls-crypt keys are secret keys under other words.
                (header.contains("PRIVATE KEY") || header.starts_with("-----BEGIN OpenVPN"))
                    .then_some(header)
            })
        })
        .map(|line| line.chars().take(64).collect())
}

/// The marker of a secret key with no armour that `line` holds: age's
/// (`AGE-SECRET-KEY-1…`, as `age-keygen` writes it and sops reads it) or a WireGuard
/// interface's (`PrivateKey = ` and 44 characters of base64). Only the marker is named,
/// never the rest of the line, which is the key.
fn bare_key(line: &str) -> Option<&'static str> {
    if line.starts_with("AGE-SECRET-KEY-1") {
        return Some("AGE-SECRET-KEY-1");
    }
    let value = line
        .strip_prefix("PrivateKey")?
        .trim_start()
        .strip_prefix('=')?
        .split_whitespace()
        .next()?;
    let (body, end) = value.split_at_checked(43)?;
    let base64 = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    (end == "=" && body.bytes().all(base64)).then_some("PrivateKey = …")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_by_their_armour_in_files_named_to_hide_one() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let openssh = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n";
        assert_eq!(
            private_key(&write("deploy_key", openssh)).as_deref(),
            Some("-----BEGIN OPENSSH PRIVATE KEY-----")
        );
        assert!(private_key(&write("id_rsa.bak", "-----BEGIN RSA PRIVATE KEY-----\n")).is_some());
        let bundle = format!("{}\n-----BEGIN EC PRIVATE KEY-----\n", "x".repeat(2000));
        assert!(private_key(&write("bundle.TXT", &bundle)).is_some());
        assert!(private_key(&write("putty", "PuTTY-User-Key-File-3: ssh-ed25519\n")).is_some());
        // Saved as UTF-16 (a NUL beside each letter), with its byte order mark.
        let utf16: Vec<u8> = "\u{feff}-----BEGIN RSA PRIVATE KEY-----\nMIIE\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let path = dir.path().join("key16.txt");
        std::fs::write(&path, utf16).unwrap();
        assert!(private_key(&path).is_some());
        let ssh2 = "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: x\n";
        assert!(private_key(&write("ssh2.txt", ssh2)).is_some());
        for name in ["key.pem~", "key.pem.1", "server.crt"] {
            assert!(private_key(&write(name, openssh)).is_some(), "{name}");
        }
        // A key inside a line: a service account's JSON key file, a variable's value.
        let account = r#"{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"}"#;
        assert_eq!(
            private_key(&write("project-1a2b.json", account)).as_deref(),
            Some("-----BEGIN PRIVATE KEY-----")
        );
        let variable = "PRIVATE_KEY=\"-----BEGIN EC PRIVATE KEY-----\n";
        assert!(private_key(&write("deploy.conf", variable)).is_some());
        // After a certificate on the same line (a bundle: only the first armour was read).
        let tls = r#"{"certificate": "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n", "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n"}"#;
        assert_eq!(
            private_key(&write("tls.json", tls)).as_deref(),
            Some("-----BEGIN RSA PRIVATE KEY-----")
        );
        assert!(
            private_key(&write(
                "ca.json",
                r#"{"ca": "-----BEGIN CERTIFICATE-----"}"#
            ))
            .is_none()
        );
        // Keys with no PEM armour: age's, WireGuard's, OpenVPN's; only the marker is named.
        let age = "# public key: age1x\nAGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGP\n";
        assert_eq!(
            private_key(&write("keys.txt", age)).as_deref(),
            Some("AGE-SECRET-KEY-1")
        );
        let wg = "[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n";
        assert_eq!(
            private_key(&write("wg0.conf", wg)).as_deref(),
            Some("PrivateKey = …")
        );
        assert!(private_key(&write("wg1.conf", &wg.replace(" = ", "="))).is_some());
        let ovpn = "client\n<key>\n-----BEGIN PRIVATE KEY-----\nMIIE\n</key>\n";
        assert!(private_key(&write("client.ovpn", ovpn)).is_some());
        let ta = "-----BEGIN OpenVPN Static key V1-----\n0123abcd\n";
        assert_eq!(
            private_key(&write("ta", ta)).as_deref(),
            Some("-----BEGIN OpenVPN Static key V1-----")
        );
        // A peer's public key, a placeholder and age's public key are not.
        let peer = "[Peer]\nPublicKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n";
        assert!(private_key(&write("wg2.conf", peer)).is_none());
        let template = "[Interface]\nPrivateKey = <your private key>\n";
        assert!(private_key(&write("wg3.conf", template)).is_none());
        assert!(private_key(&write("recipients.txt", "age1qyqszqgpqyqszqgp\n")).is_none());
        let bom = format!("\u{feff}{openssh}");
        assert!(private_key(&write("with_bom", &bom)).is_some());
        // Public halves, certificates and source files are not keys or not opened.
        assert!(private_key(&write("id_rsa.old", "ssh-rsa AAAA user@host\n")).is_none());
        assert!(private_key(&write("cert", "-----BEGIN CERTIFICATE-----\n")).is_none());
        assert!(private_key(&write("notes.md", openssh)).is_none());
        assert!(private_key(&dir.path().join("missing")).is_none());
        // A FIFO is not waited on (nothing writes to it).
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(private_key(&fifo).is_none());
        assert!(private_key(dir.path()).is_none());
    }
}
