//! The login file: every stored authorization (tokens and the registered
//! client, per issuer, resource and client) in one JSON file readable by the
//! user alone, the CLI's [`TokenStore`].
//!
//! Where: `$SWITCHBOARD_AUTH_FILE` (or `--auth-file`), else
//! `$XDG_CONFIG_HOME/switchboard/auth.json`, else
//! `~/.config/switchboard/auth.json`. The file is created with mode 0600 and a
//! directory it needs with 0700; every change is a read, modify and atomic write
//! (a temporary file in the same directory, then `rename`) under an exclusive
//! `flock` on `auth.json.lock` (waited for at most [`LOCK_BOUND`]). Its values
//! are never logged.
//!
//! Shape: `{"version": 1, "authorizations": [StoredAuthorization, ...]}`.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use switchboard::client::auth::{StoreError, StoredAuthorization, TokenStore};

/// The environment variable naming the login file.
pub const AUTH_FILE_ENV: &str = "SWITCHBOARD_AUTH_FILE";

/// The most a change waits for another process's lock on the file.
pub const LOCK_BOUND: Duration = Duration::from_secs(10);

/// The version of the file's shape written and understood.
const VERSION: u32 = 1;

/// Why the login file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum FileStoreError {
    /// Neither `$SWITCHBOARD_AUTH_FILE`, `$XDG_CONFIG_HOME` nor `$HOME` is set.
    #[error("cannot tell where to keep logins: set {AUTH_FILE_ENV}, XDG_CONFIG_HOME or HOME")]
    NoHome,
    /// A file operation failed.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being done (`read`, `write`, `create`, `lock`, ...).
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not the JSON this program writes.
    #[error("{} is not a switchboard login file", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// serde_json's error (never quoting the file's values).
        #[source]
        source: serde_json::Error,
    },
    /// A file of a later version.
    #[error("{} is of version {version}; this switchboard understands {VERSION}", path.display())]
    Version {
        /// The file.
        path: PathBuf,
        /// Its version.
        version: u32,
    },
    /// Another process held the lock for longer than [`LOCK_BOUND`].
    #[error("{} stayed locked by another switchboard for {LOCK_BOUND:?}", path.display())]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
}

/// The file's contents.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Contents {
    version: u32,
    #[serde(default)]
    authorizations: Vec<StoredAuthorization>,
}

/// `url` in a canonical form for comparing (scheme and host lowercased, the
/// default port dropped, an empty path as `/`), or as given when it does not
/// parse.
pub fn canonical_url(url: &str) -> String {
    url::Url::parse(url.trim())
        .map(|u| u.to_string())
        .unwrap_or_else(|_| url.trim().to_owned())
}

/// The login file.
#[derive(Debug, Clone)]
pub struct FileStore {
    path: PathBuf,
}

impl FileStore {
    /// The file at `path` (not touched until used).
    pub fn new(path: PathBuf) -> Self {
        FileStore { path }
    }

    /// The file given (`--auth-file`), else the one the environment names (see
    /// the module's documentation).
    ///
    /// Errors: [`FileStoreError::NoHome`].
    pub fn locate(given: Option<PathBuf>) -> Result<Self, FileStoreError> {
        Self::locate_in(given, |k| std::env::var_os(k))
    }

    /// [`locate`](Self::locate) with the environment as `env`.
    fn locate_in(
        given: Option<PathBuf>,
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Self, FileStoreError> {
        let set = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let path = match given.or_else(|| set(AUTH_FILE_ENV)) {
            Some(p) => p,
            None => match set("XDG_CONFIG_HOME").filter(|p| p.is_absolute()) {
                Some(c) => c.join("switchboard").join("auth.json"),
                None => set("HOME")
                    .ok_or(FileStoreError::NoHome)?
                    .join(".config")
                    .join("switchboard")
                    .join("auth.json"),
            },
        };
        Ok(FileStore::new(path))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every stored authorization, in the file's order (none when the file does
    /// not exist).
    ///
    /// Errors: the file cannot be read, or is not a login file of a version
    /// understood.
    pub fn entries(&self) -> Result<Vec<StoredAuthorization>, FileStoreError> {
        Ok(self.read()?.authorizations)
    }

    /// Removes the authorizations for which `which` holds and returns them.
    ///
    /// Errors: as [`entries`](Self::entries), or the file cannot be written or
    /// locked.
    pub fn remove(
        &self,
        which: impl Fn(&StoredAuthorization) -> bool,
    ) -> Result<Vec<StoredAuthorization>, FileStoreError> {
        let mut removed = Vec::new();
        self.update(|list| {
            let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(list).into_iter().partition(&which);
            *list = kept;
            removed = gone;
        })?;
        Ok(removed)
    }

    /// The most recently saved authorization for the MCP endpoint `server`.
    pub fn find(&self, server: &str) -> Result<Option<StoredAuthorization>, FileStoreError> {
        let server = canonical_url(server);
        Ok(self
            .entries()?
            .into_iter()
            .filter(|a| canonical_url(&a.server) == server)
            .max_by_key(|a| a.saved_at))
    }

    fn read(&self) -> Result<Contents, FileStoreError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Contents::default()),
            Err(source) => {
                return Err(FileStoreError::Io {
                    action: "read",
                    path: self.path.clone(),
                    source,
                })
            }
        };
        if let Ok(meta) = std::fs::metadata(&self.path) {
            if meta.permissions().mode() & 0o077 != 0 {
                tracing::warn!(path = %self.path.display(), "the login file is readable by others; it is rewritten with mode 0600 on the next change");
            }
        }
        let contents: Contents =
            serde_json::from_slice(&bytes).map_err(|source| FileStoreError::Parse {
                path: self.path.clone(),
                source,
            })?;
        if contents.version > VERSION {
            return Err(FileStoreError::Version {
                path: self.path.clone(),
                version: contents.version,
            });
        }
        Ok(contents)
    }

    /// Read, `change`, write atomically, under the lock.
    fn update(
        &self,
        change: impl FnOnce(&mut Vec<StoredAuthorization>),
    ) -> Result<(), FileStoreError> {
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let io = |action: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| FileStoreError::Io {
                action,
                path,
                source,
            }
        };
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io("create the directory", dir))?;
        let _lock = self.lock()?;
        let mut contents = self.read()?;
        contents.version = VERSION;
        change(&mut contents.authorizations);
        let mut text =
            serde_json::to_vec_pretty(&contents).map_err(|source| FileStoreError::Parse {
                path: self.path.clone(),
                source,
            })?;
        text.push(b'\n');
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "auth.json".into());
        let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let written = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&temp)?;
            // A temporary file left by a crashed run may have another mode.
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            f.write_all(&text)?;
            f.sync_all()
        })();
        if let Err(source) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(FileStoreError::Io {
                action: "write",
                path: temp,
                source,
            });
        }
        std::fs::rename(&temp, &self.path).map_err(|source| {
            let _ = std::fs::remove_file(&temp);
            FileStoreError::Io {
                action: "replace",
                path: self.path.clone(),
                source,
            }
        })?;
        // The rename itself durable (best effort).
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// An exclusive `flock` on `<file>.lock`, released when the returned file
    /// is dropped; waits at most [`LOCK_BOUND`].
    fn lock(&self) -> Result<File, FileStoreError> {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".lock");
        let path = PathBuf::from(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(|source| FileStoreError::Io {
                action: "open the lock",
                path: path.clone(),
                source,
            })?;
        let deadline = Instant::now() + LOCK_BOUND;
        loop {
            // SAFETY: flock on a descriptor we own, open for the call's length.
            let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if r == 0 {
                return Ok(file);
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != ErrorKind::WouldBlock {
                return Err(FileStoreError::Io {
                    action: "lock",
                    path,
                    source: e,
                });
            }
            if Instant::now() >= deadline {
                return Err(FileStoreError::Locked { path });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl TokenStore for FileStore {
    fn load(&self, server: &str) -> Result<Option<StoredAuthorization>, StoreError> {
        self.find(server).map_err(StoreError::new)
    }

    fn save(&self, authorization: &StoredAuthorization) -> Result<(), StoreError> {
        self.update(|list| {
            list.retain(|a| !a.same_key(authorization));
            list.push(authorization.clone());
        })
        .map_err(StoreError::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(server: &str, client: &str, saved_at: u64) -> StoredAuthorization {
        StoredAuthorization {
            server: server.into(),
            issuer: "http://127.0.0.1:1/".into(),
            resource: server.into(),
            client_id: client.into(),
            client_secret: Some("s3cret".into()),
            token_endpoint_auth_method: None,
            redirect_uri: Some("http://127.0.0.1:2/callback".into()),
            access_token: format!("at-{client}"),
            refresh_token: None,
            expires_at: Some(100),
            scopes: vec!["mcp:tools".into()],
            saved_at,
        }
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("switchboard-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn saves_with_owner_only_modes_and_reads_back() {
        let dir = temp_dir("modes");
        let store = FileStore::new(dir.join("sub").join("auth.json"));
        assert!(store.entries().unwrap().is_empty());
        store.save(&entry("http://h/mcp", "a", 1)).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(store.path()), 0o600);
        assert_eq!(mode(&dir.join("sub")), 0o700);
        assert_eq!(
            store.entries().unwrap(),
            vec![entry("http://h/mcp", "a", 1)]
        );
        // No temporary file left behind.
        let names: Vec<_> = std::fs::read_dir(dir.join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn one_entry_per_issuer_resource_and_client_newest_found() {
        let dir = temp_dir("keys");
        let store = FileStore::new(dir.join("auth.json"));
        store.save(&entry("http://h/mcp", "a", 1)).unwrap();
        store.save(&entry("http://h/mcp", "b", 2)).unwrap();
        let mut again = entry("http://h/mcp", "a", 3);
        again.access_token = "newer".into();
        store.save(&again).unwrap();
        store.save(&entry("http://other/mcp", "c", 4)).unwrap();
        let all = store.entries().unwrap();
        assert_eq!(all.len(), 3);
        // The newest for the server, whatever the URL's spelling.
        let found = store.find("HTTP://H:80/mcp").unwrap().unwrap();
        assert_eq!(found.access_token, "newer");
        assert!(store.find("http://h/other").unwrap().is_none());
        let removed = store
            .remove(|a| canonical_url(&a.server) == canonical_url("http://h/mcp"))
            .unwrap();
        assert_eq!(removed.len(), 2);
        assert_eq!(store.entries().unwrap().len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_foreign_file_is_refused_not_overwritten() {
        let dir = temp_dir("foreign");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("auth.json");
        std::fs::write(&path, b"not json").unwrap();
        let store = FileStore::new(path.clone());
        assert!(matches!(store.entries(), Err(FileStoreError::Parse { .. })));
        assert!(store.save(&entry("http://h/mcp", "a", 1)).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"not json");
        std::fs::write(&path, br#"{"version": 9, "authorizations": []}"#).unwrap();
        assert!(matches!(
            store.entries(),
            Err(FileStoreError::Version { version: 9, .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn located_by_flag_env_xdg_then_home() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        let all = env(&[
            (AUTH_FILE_ENV, "/e/auth.json"),
            ("XDG_CONFIG_HOME", "/x"),
            ("HOME", "/h"),
        ]);
        let at = |given: Option<&str>, e| {
            FileStore::locate_in(given.map(PathBuf::from), e).map(|s| s.path().to_path_buf())
        };
        assert_eq!(at(Some("/f"), all).unwrap(), PathBuf::from("/f"));
        assert_eq!(at(None, all).unwrap(), PathBuf::from("/e/auth.json"));
        assert_eq!(
            at(None, env(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/x/switchboard/auth.json")
        );
        // A relative XDG_CONFIG_HOME is ignored (XDG Base Directory spec).
        assert_eq!(
            at(None, env(&[("XDG_CONFIG_HOME", "x"), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/h/.config/switchboard/auth.json")
        );
        assert!(matches!(at(None, env(&[])), Err(FileStoreError::NoHome)));
    }
}
