//! The audit trail's hash chain: how a record is sealed into its line, and
//! how a trail (its files in order, and a checkpoint) is verified.
//!
//! A line is one JSON object whose members end `"seq":N,"prev":"H"` and then
//! `,"hash":"H"}`: `hash` is the lowercase hex SHA-256 of the line's bytes
//! before `,"hash":`, `prev` the `hash` of the record before it (64 zeros
//! for the first record of a trail), `seq` its number from 0. An edited
//! line fails its own hash; a deleted, inserted or reordered one breaks
//! `seq` or `prev`; a cut-off end is found against a checkpoint (the
//! count and last hash, kept apart from the trail).
//!
//! Pure: no I/O, no clock.

use crate::pin::{hex, sha256};

/// The `prev` of a trail's first record.
pub const GENESIS: [u8; 32] = [0; 32];

/// What the chain has sealed so far: how many records, and the last one's hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Records sealed (the next record's `seq`).
    pub count: u64,
    /// The last record's hash ([`GENESIS`] before the first).
    pub hash: [u8; 32],
}

impl Default for Head {
    fn default() -> Self {
        Head {
            count: 0,
            hash: GENESIS,
        }
    }
}

fn unhex(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// The end of a sealed line after its hash's 64 digits.
const END: &str = "\"}";
const HASH_KEY: &str = ",\"hash\":\"";

impl Head {
    /// Seals `body` (a JSON object's members, without braces, none named
    /// `seq`, `prev` or `hash`) as the next record: its line, without the
    /// newline. The head moves on.
    pub fn seal(&mut self, body: &str) -> String {
        let mut line = String::with_capacity(body.len() + 190);
        line.push('{');
        line.push_str(body);
        if !body.is_empty() {
            line.push(',');
        }
        line.push_str("\"seq\":");
        line.push_str(itoa::Buffer::new().format(self.count));
        line.push_str(",\"prev\":\"");
        line.push_str(&hex(&self.hash));
        line.push('"');
        let hash = sha256(line.as_bytes());
        line.push_str(HASH_KEY);
        line.push_str(&hex(&hash));
        line.push_str(END);
        self.count += 1;
        self.hash = hash;
        line
    }
}

/// A sealed line's parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    /// Its number in the trail, from 0.
    pub seq: u64,
    /// The hash of the record before it.
    pub prev: [u8; 32],
    /// Its own hash.
    pub hash: [u8; 32],
}

/// Why a line is not a sealed record of its own hash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// Not JSON, or not an object.
    #[error("not a JSON object: {0}")]
    NotJson(String),
    /// No `hash` member at its end.
    #[error("no hash at its end (cut off, or not a record)")]
    NoHash,
    /// No `seq` or `prev`.
    #[error("no seq or prev before its hash")]
    NoChain,
    /// Its hash is not that of its content.
    #[error("its hash is not its content's: the record was edited")]
    Edited,
}

/// Reads and checks one line: its own hash, and its `seq` and `prev`.
pub fn open(line: &str) -> Result<Sealed, LineError> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| LineError::NotJson(e.to_string()))?;
    if !value.is_object() {
        return Err(LineError::NotJson("not an object".into()));
    }
    let cut = line
        .len()
        .checked_sub(HASH_KEY.len() + 64 + END.len())
        .filter(|&c| line.is_char_boundary(c) && line[c..].starts_with(HASH_KEY))
        .filter(|_| line.ends_with(END))
        .ok_or(LineError::NoHash)?;
    let hash =
        unhex(&line[cut + HASH_KEY.len()..line.len() - END.len()]).ok_or(LineError::NoHash)?;
    let seq = value
        .get("seq")
        .and_then(|v| v.as_u64())
        .ok_or(LineError::NoChain)?;
    let prev = value
        .get("prev")
        .and_then(|v| v.as_str())
        .and_then(unhex)
        .ok_or(LineError::NoChain)?;
    let own = sha256(&line.as_bytes()[..cut]);
    if own != hash {
        return Err(LineError::Edited);
    }
    Ok(Sealed { seq, prev, hash })
}

/// A checkpoint: the head as it was at some moment, kept apart from the
/// trail (a file beside it, `/metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoint {
    /// The head it saw.
    pub head: Head,
}

impl Checkpoint {
    /// Its file's text: `{"count":N,"hash":"H","time":"T"}` and a newline.
    pub fn to_text(&self, time: &str) -> String {
        format!(
            "{{\"count\":{},\"hash\":\"{}\",\"time\":\"{time}\"}}\n",
            self.head.count,
            hex(&self.head.hash)
        )
    }

    /// Reads a checkpoint file's text.
    ///
    /// Errors: [`CheckpointError`], not JSON or without its count or hash.
    pub fn parse(text: &str) -> Result<Checkpoint, CheckpointError> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| CheckpointError::NotJson(e.to_string()))?;
        let count = v["count"].as_u64().ok_or(CheckpointError::NoCount)?;
        let hash = v["hash"]
            .as_str()
            .and_then(unhex)
            .ok_or(CheckpointError::NoHash)?;
        Ok(Checkpoint {
            head: Head { count, hash },
        })
    }
}

/// Why a checkpoint's text is not one ([`Checkpoint::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// Not JSON.
    #[error("not a checkpoint: {0}")]
    NotJson(String),
    /// No `count` (a whole number).
    #[error("not a checkpoint: no count")]
    NoCount,
    /// No `hash` (64 lowercase hex digits).
    #[error("not a checkpoint: no hash")]
    NoHash,
}

/// Where the trail is broken: the first bad line and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {why}")]
pub struct Broken {
    /// The file (as named to [`Verifier::file`]).
    pub file: String,
    /// Its line, from 1 (0: the file as a whole).
    pub line: u64,
    /// What is wrong there.
    pub why: String,
}

/// What an intact trail holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intact {
    /// The `seq` of its first record (0 unless older files were removed).
    pub first: u64,
    /// Its head: the next `seq` and the last hash.
    pub head: Head,
}

/// Checks a trail line by line, file after file, oldest first.
#[derive(Debug, Default)]
pub struct Verifier {
    file: String,
    line: u64,
    first: Option<u64>,
    head: Head,
    /// Where each seq's record is, for the checkpoint: only the last few
    /// are kept (see [`Verifier::finish`]).
    seen: Vec<(u64, [u8; 32], String, u64)>,
}

impl Verifier {
    /// A verifier before the first line.
    pub fn new() -> Verifier {
        Verifier::default()
    }

    /// The next lines come from `file`.
    pub fn file(&mut self, file: &str) {
        self.file = file.to_owned();
        self.line = 0;
    }

    fn broken(&self, why: impl Into<String>) -> Broken {
        Broken {
            file: self.file.clone(),
            line: self.line,
            why: why.into(),
        }
    }

    /// Checks the next line (without its newline).
    pub fn line(&mut self, text: &str, checkpoint: Option<&Checkpoint>) -> Result<(), Broken> {
        self.line += 1;
        let sealed = open(text).map_err(|e| self.broken(e.to_string()))?;
        match self.first {
            // The first record present: a trail that starts later (its
            // older files removed) is taken from there.
            None => {
                if sealed.seq == 0 && sealed.prev != GENESIS {
                    return Err(self.broken("the first record does not start a trail"));
                }
                self.first = Some(sealed.seq);
            }
            Some(_) => {
                if sealed.seq != self.head.count {
                    return Err(self.broken(format!(
                        "record {} where {} was due: a record was deleted, inserted or moved",
                        sealed.seq, self.head.count
                    )));
                }
                if sealed.prev != self.head.hash {
                    return Err(self.broken(
                        "its prev is not the hash of the record before it: a record was replaced",
                    ));
                }
            }
        }
        self.head = Head {
            count: sealed.seq + 1,
            hash: sealed.hash,
        };
        // Only the record a checkpoint names matters; keep that one's place.
        if checkpoint.is_some_and(|c| c.head.count == sealed.seq + 1) {
            self.seen
                .push((sealed.seq, sealed.hash, self.file.clone(), self.line));
        }
        Ok(())
    }

    /// The end of the trail: against `checkpoint`, its record must be there
    /// with the hash it had (else the trail was cut or rewritten after it).
    pub fn finish(self, checkpoint: Option<&Checkpoint>) -> Result<Intact, Broken> {
        let first = self.first.unwrap_or(0);
        if let Some(c) = checkpoint.filter(|c| c.head.count > 0) {
            let at = c.head.count - 1;
            match self.seen.iter().find(|s| s.0 == at) {
                Some((_, hash, _, _)) if *hash == c.head.hash => {}
                Some((_, _, file, line)) => {
                    return Err(Broken {
                        file: file.clone(),
                        line: *line,
                        why: format!(
                        "record {at} is not the one the checkpoint names: the trail was rewritten"
                    ),
                    })
                }
                None if c.head.count > self.head.count => {
                    return Err(Broken {
                        file: self.file.clone(),
                        line: self.line + 1,
                        why: format!(
                        "the trail ends after {} records; the checkpoint says {}: it was cut off",
                        self.head.count, c.head.count
                    ),
                    })
                }
                None => {
                    return Err(Broken {
                        file: self.file.clone(),
                        line: 0,
                        why: format!(
                            "record {at}, which the checkpoint names, is not in the trail"
                        ),
                    })
                }
            }
        }
        Ok(Intact {
            first,
            head: self.head,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trail(n: usize) -> (Vec<String>, Head) {
        let mut head = Head::default();
        let lines = (0..n)
            .map(|i| head.seal(&format!("\"kind\":\"call\",\"tool\":\"t{i}\"")))
            .collect();
        (lines, head)
    }

    fn verify(lines: &[String], cp: Option<&Checkpoint>) -> Result<Intact, Broken> {
        let mut v = Verifier::new();
        v.file("audit.jsonl");
        for l in lines {
            v.line(l, cp)?;
        }
        v.finish(cp)
    }

    #[test]
    fn a_sealed_line_opens_and_chains() {
        let (lines, head) = trail(3);
        assert!(
            lines[0].starts_with("{\"kind\":\"call\",\"tool\":\"t0\",\"seq\":0,\"prev\":\"0000")
        );
        let s = open(&lines[2]).unwrap();
        assert_eq!((s.seq, s.hash), (2, head.hash));
        assert_eq!(open(&lines[1]).unwrap().prev, open(&lines[0]).unwrap().hash);
        let intact = verify(&lines, Some(&Checkpoint { head })).unwrap();
        assert_eq!((intact.first, intact.head), (0, head));
    }

    #[test]
    fn each_kind_of_tampering_names_the_first_bad_line() {
        let (lines, head) = trail(6);
        let cp = Checkpoint { head };
        let line_of = |l: Vec<String>| verify(&l, Some(&cp)).unwrap_err().line;
        // Edited: that line.
        let mut edited = lines.clone();
        edited[2] = edited[2].replace("t2", "t9");
        assert_eq!(line_of(edited), 3);
        // Deleted: the line after the gap.
        let mut deleted = lines.clone();
        deleted.remove(3);
        assert_eq!(line_of(deleted), 4);
        // Reordered.
        let mut moved = lines.clone();
        moved.swap(1, 4);
        assert_eq!(line_of(moved), 2);
        // Cut off: only the checkpoint knows; without it the rest is intact.
        let cut = lines[..4].to_vec();
        let e = verify(&cut, Some(&cp)).unwrap_err();
        assert_eq!(e.line, 5);
        assert!(e.why.contains("cut off"), "{e}");
        assert!(verify(&cut, None).is_ok());
        // Rewritten from some record on, each hash recomputed: the
        // checkpoint's record differs.
        let mut head2 = Head::default();
        let mut forged: Vec<String> = lines[..2].to_vec();
        for l in &forged {
            let s = open(l).unwrap();
            head2 = Head {
                count: s.seq + 1,
                hash: s.hash,
            };
        }
        for i in 2..6 {
            forged.push(head2.seal(&format!("\"kind\":\"call\",\"tool\":\"x{i}\"")));
        }
        let e = verify(&forged, Some(&cp)).unwrap_err();
        assert_eq!(e.line, 6, "{e}");
        // A line cut mid-write, and one that is not JSON.
        let mut torn = lines.clone();
        torn[5].truncate(40);
        assert_eq!(line_of(torn), 6);
        let mut junk = lines.clone();
        junk.insert(0, "hello".into());
        assert_eq!(line_of(junk), 1);
    }

    #[test]
    fn a_trail_whose_older_files_were_removed_starts_later() {
        let (lines, head) = trail(5);
        let intact = verify(&lines[2..], Some(&Checkpoint { head })).unwrap();
        assert_eq!(intact.first, 2);
    }

    #[test]
    fn checkpoints_read_back() {
        let (_, head) = trail(2);
        let text = Checkpoint { head }.to_text("2026-12-07T00:00:00Z");
        assert_eq!(Checkpoint::parse(&text).unwrap().head, head);
        assert_eq!(Checkpoint::parse("{}"), Err(CheckpointError::NoCount));
    }
}
