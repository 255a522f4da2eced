//! Reading the files an operator names (a lock, its signature, a key, a
//! gateway configuration), at start and again on every reload: only a
//! regular file, and only up to a size, so that a path pointing at a FIFO
//! (whose open would wait for a writer) or `/dev/zero` (which never ends)
//! is refused in one line instead of freezing or exhausting a running
//! bridge or gateway.
//!
//! This module must not know what the files hold.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The most a lock file (or a gateway configuration) may hold: 16 MiB.
pub(crate) const MAX_LOCK_BYTES: u64 = 16 << 20;

/// The most a key or a signature file may hold: 64 KiB.
pub(crate) const MAX_KEY_BYTES: u64 = 64 << 10;

/// The bytes of the regular file at `path`, at most `max`. Errors (as the
/// `io::Error` of the read): not a regular file (`InvalidInput`), larger than
/// `max` (`FileTooLarge`), or the system's own.
pub(crate) fn read(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind};
    // Opened without waiting (a FIFO's open would wait for a writer); what
    // it is, asked of the open file itself.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(Error::new(
            ErrorKind::FileTooLarge,
            format!("larger than {max} bytes"),
        ));
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text. Errors: also not UTF-8 (`InvalidData`).
pub(crate) fn read_text(path: &Path, max: u64) -> std::io::Result<String> {
    String::from_utf8(read(path, max)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// Files watched for a change of their bytes (a ConfigMap update, `lock
/// approve`): read at each poll and compared with what was seen last.
pub(crate) struct Watched {
    paths: Vec<PathBuf>,
    seen: Vec<Option<Vec<u8>>>,
}

impl Watched {
    /// Watches `paths`, as they are now.
    pub(crate) fn new(paths: Vec<PathBuf>) -> Watched {
        let mut w = Watched {
            paths,
            seen: Vec::new(),
        };
        w.seen = w.read_all();
        w
    }

    /// Takes them as they are now (read again for another reason: SIGHUP).
    pub(crate) fn seen_now(&mut self) {
        self.seen = self.read_all();
    }

    /// What changed since seen, as `A and B changed` (then seen); `None`
    /// when nothing did, or while one cannot be read (caught mid-swap: the
    /// next poll sees it whole).
    pub(crate) fn changed(&mut self) -> Option<String> {
        let now = self.read_all();
        if now.iter().any(Option::is_none) {
            return None;
        }
        let changed: Vec<String> = self
            .paths
            .iter()
            .zip(now.iter().zip(&self.seen))
            .filter(|(_, (n, s))| n != s)
            .map(|(p, _)| p.display().to_string())
            .collect();
        if changed.is_empty() {
            return None;
        }
        self.seen = now;
        Some(format!("{} changed", changed.join(" and ")))
    }

    fn read_all(&self) -> Vec<Option<Vec<u8>>> {
        self.paths
            .iter()
            .map(|p| read(p, MAX_LOCK_BYTES).ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_size_are_read() {
        let dir = std::env::temp_dir().join(format!("sb-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let small = dir.join("small");
        std::fs::write(&small, b"0123456789").unwrap();
        assert_eq!(read(&small, 10).unwrap(), b"0123456789");
        let e = read(&small, 9).unwrap_err();
        assert_eq!(e.to_string(), "larger than 9 bytes");
        // Neither endless nor waiting for a writer.
        let e = read(Path::new("/dev/zero"), 10).unwrap_err();
        assert_eq!(e.to_string(), "not a regular file");
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a plain system call with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(
            read(&fifo, 10).unwrap_err().to_string(),
            "not a regular file"
        );
        assert!(read(&dir, 10).is_err());
        std::fs::write(&small, [0xff, 0xfe]).unwrap();
        assert_eq!(
            read_text(&small, 10).unwrap_err().to_string(),
            "not UTF-8 text"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_watched_file_is_told_changed_once_and_not_while_missing() {
        let dir = std::env::temp_dir().join(format!("sb-watched-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::write(&a, "1").unwrap();
        std::fs::write(&b, "1").unwrap();
        let mut w = Watched::new(vec![a.clone(), b.clone()]);
        assert_eq!(w.changed(), None);
        std::fs::write(&b, "2").unwrap();
        assert_eq!(w.changed(), Some(format!("{} changed", b.display())));
        assert_eq!(w.changed(), None, "once");
        // Caught mid-swap: not yet; whole again: changed.
        std::fs::remove_file(&a).unwrap();
        assert_eq!(w.changed(), None);
        std::fs::write(&a, "3").unwrap();
        assert_eq!(w.changed(), Some(format!("{} changed", a.display())));
        // Seen now (a SIGHUP read them): nothing to tell.
        std::fs::write(&a, "4").unwrap();
        w.seen_now();
        assert_eq!(w.changed(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
