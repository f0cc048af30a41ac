//! Reading a policy file from disk: the first step of loading. [`read_source`] turns a path
//! into a [`SourceFile`] or into a positioned [`Diagnostic`] (missing file, directory, too
//! large, not UTF-8); it never panics.

use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

use crate::diagnostics::{Code, Diagnostic, Format, SourceFile, lowercase_first};

/// Limits applied while reading a file from disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    /// Files larger than this many bytes are rejected with `toolgate::syntax::too_large`
    /// before they are parsed.
    pub max_bytes: u64,
}

impl ReadLimits {
    /// The default: 8 MiB, far above any hand-written policy file and small enough that a
    /// stray log file passed by mistake is refused quickly.
    pub const DEFAULT: ReadLimits = ReadLimits {
        max_bytes: 8 * 1024 * 1024,
    };
}

impl Default for ReadLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Reads a policy file from disk.
///
/// The displayed path is `path` as given. The format comes from the extension; a file with
/// another extension is rejected. Missing files, directories, unreadable files, files over
/// `limits.max_bytes` and files that are not UTF-8 all become diagnostics that name the file
/// (and, for encoding errors, the line and column of the first invalid byte).
pub fn read_source(path: &Path, limits: &ReadLimits) -> Result<Arc<SourceFile>, Diagnostic> {
    let shown: Arc<str> = Arc::from(path.display().to_string());
    let format = Format::from_path(path);
    let placeholder = || SourceFile::placeholder(&shown, format.unwrap_or(Format::Yaml));

    let metadata = std::fs::metadata(path).map_err(|err| io_diagnostic(&err, &placeholder()))?;
    if metadata.is_dir() {
        return Err(Diagnostic::new(
            Code::IoRead,
            format!("`{shown}` is a directory, not a policy file"),
        )
        .with_location(placeholder().location_at(0, 0))
        .with_help(
            "pass a directory as a policy root, or name a `.yaml`, `.yml` or `.toml` file",
        ));
    }
    if !metadata.is_file() {
        // A FIFO or socket would block the read forever; a device is no policy file either.
        return Err(
            Diagnostic::new(Code::IoRead, format!("`{shown}` is not a regular file"))
                .with_location(placeholder().location_at(0, 0))
                .with_help("policy files are regular files; remove it from the policy folder"),
        );
    }
    let Some(format) = format else {
        let ext = path
            .extension()
            .map(|ext| format!("`.{}`", ext.to_string_lossy()))
            .unwrap_or_else(|| "no extension".to_owned());
        return Err(Diagnostic::new(
            Code::SyntaxUnsupported,
            format!("cannot tell the format of `{shown}` from its extension ({ext})"),
        )
        .with_location(placeholder().location_at(0, 0))
        .with_help("name policy files `.yaml`, `.yml` or `.toml`"));
    };
    if metadata.len() > limits.max_bytes {
        return Err(too_large(&placeholder(), metadata.len(), limits));
    }

    let file = std::fs::File::open(path).map_err(|err| io_diagnostic(&err, &placeholder()))?;
    // The file may have grown since `metadata`: never read more than the limit allows.
    match read_limited(file, limits.max_bytes, metadata.len()) {
        Ok(Limited::Read(bytes)) => source_from_bytes(shown, bytes, format),
        Ok(Limited::TooLarge) => Err(too_large(&placeholder(), metadata.len(), limits)),
        Err(err) => Err(io_diagnostic(&err, &placeholder())),
    }
}

/// What [`read_limited`] read.
#[derive(Debug, PartialEq, Eq)]
pub enum Limited {
    /// Everything the reader held: at most the limit.
    Read(Vec<u8>),
    /// The reader held more than the limit; only one byte past it was read.
    TooLarge,
}

/// Reads `reader` to its end, but never more than `max_bytes + 1` bytes: a file that grows
/// while it is read, a device such as `/dev/zero` or a pipe that never ends is refused after
/// the limit instead of filling memory. `size_hint` (e.g. the file's length from its
/// metadata) sizes the buffer up front, capped at the limit, so that a file is read in one
/// go rather than into a buffer grown a dozen times.
pub fn read_limited(reader: impl Read, max_bytes: u64, size_hint: u64) -> io::Result<Limited> {
    let capacity = size_hint.min(max_bytes).saturating_add(1);
    let mut bytes = Vec::with_capacity(usize::try_from(capacity).unwrap_or(0));
    reader
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max_bytes {
        return Ok(Limited::TooLarge);
    }
    Ok(Limited::Read(bytes))
}

/// Builds a source file from raw bytes, rejecting bytes that are not UTF-8 with a diagnostic
/// at the first invalid byte.
pub fn source_from_bytes(
    path: impl Into<Arc<str>>,
    bytes: Vec<u8>,
    format: Format,
) -> Result<Arc<SourceFile>, Diagnostic> {
    let path = path.into();
    match String::from_utf8(bytes) {
        Ok(text) => Ok(SourceFile::in_memory(path, text, format)),
        Err(err) => {
            let valid_up_to = err.utf8_error().valid_up_to();
            let bytes = err.into_bytes();
            let bad = bytes.get(valid_up_to).copied().unwrap_or(0);
            // Show the file with the invalid bytes replaced; everything before the first bad
            // byte is unchanged, so its offset, line and column are those of the file.
            let lossy = String::from_utf8_lossy(&bytes).into_owned();
            let had_bom = lossy.starts_with('\u{feff}');
            let source = SourceFile::in_memory(path, lossy, format);
            let offset = if had_bom {
                valid_up_to.saturating_sub(3)
            } else {
                valid_up_to
            };
            Err(Diagnostic::new(
                Code::SyntaxEncoding,
                format!("the file is not valid UTF-8: invalid byte `0x{bad:02X}`"),
            )
            .with_location(source.location_at(offset, '\u{fffd}'.len_utf8()))
            .with_help("save the file as UTF-8"))
        }
    }
}

fn too_large(source: &Arc<SourceFile>, size: u64, limits: &ReadLimits) -> Diagnostic {
    Diagnostic::new(
        Code::SyntaxTooLarge,
        format!(
            "the file is too large: {size} bytes, the limit is {} bytes",
            limits.max_bytes
        ),
    )
    .with_location(source.location_at(0, 0))
    .with_help("split the policy into several files")
}

fn io_diagnostic(err: &io::Error, source: &Arc<SourceFile>) -> Diagnostic {
    let path = source.path();
    let (code, message, help) = match err.kind() {
        io::ErrorKind::NotFound => (
            Code::IoNotFound,
            format!("cannot read `{path}`: no such file"),
            "check the path, or create the file with `toolgate init`",
        ),
        io::ErrorKind::PermissionDenied => (
            Code::IoRead,
            format!("cannot read `{path}`: permission denied"),
            "make the file readable by the user running toolgate",
        ),
        io::ErrorKind::IsADirectory => (
            Code::IoRead,
            format!("`{path}` is a directory, not a policy file"),
            "pass a directory as a policy root, or name a `.yaml`, `.yml` or `.toml` file",
        ),
        _ => (
            Code::IoRead,
            format!(
                "cannot read `{path}`: {}",
                lowercase_first(&err.to_string())
            ),
            "check that the file exists and is readable",
        ),
    };
    Diagnostic::new(code, message)
        .with_location(source.location_at(0, 0))
        .with_help(help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_is_positioned_at_the_first_bad_byte() {
        let bytes = b"a: 1\nb: \xff\xfe\n".to_vec();
        let Err(diagnostic) = source_from_bytes("t.yaml", bytes, Format::Yaml) else {
            panic!("expected an encoding error");
        };
        assert_eq!(diagnostic.code, Code::SyntaxEncoding);
        let location = diagnostic.location.unwrap();
        assert_eq!((location.span.line, location.span.column), (2, 4));
        assert!(
            diagnostic.message.contains("0xFF"),
            "{}",
            diagnostic.message
        );
    }
}
