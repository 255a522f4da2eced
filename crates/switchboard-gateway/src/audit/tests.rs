use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use super::*;

/// A storage in memory that fails on purpose while `full` is set (a full
/// disk: part of the batch written, then the error).
#[derive(Clone, Default)]
struct Disk {
    data: Arc<Mutex<Vec<u8>>>,
    full: Arc<AtomicBool>,
    checkpoint: Arc<Mutex<String>>,
}

impl Storage for Disk {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut data = self.data.lock().unwrap();
        if self.full.load(Ordering::Relaxed) {
            data.extend_from_slice(&bytes[..bytes.len() / 2]);
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "No space left on device",
            ));
        }
        data.extend_from_slice(bytes);
        Ok(())
    }
    fn truncate(&mut self, len: u64) -> io::Result<()> {
        self.data.lock().unwrap().truncate(len as usize);
        Ok(())
    }
    fn len(&self) -> u64 {
        self.data.lock().unwrap().len() as u64
    }
    fn rotate(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn checkpoint(&mut self, text: &str) -> io::Result<()> {
        *self.checkpoint.lock().unwrap() = text.to_owned();
        Ok(())
    }
    fn head(&self) -> Head {
        Head::default()
    }
    fn max_bytes(&self) -> u64 {
        u64::MAX
    }
}

fn entry(tool: &str) -> Entry {
    Entry {
        time: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
        route: Name::new("/mcp"),
        subject: Some(Name::new("alice")),
        client_id: None,
        method: "tools/call",
        name: Some(tool.to_owned()),
        upstream: Some(Name::new("ex")),
        arguments: Some(RawValue::from_string(r#"{"b":1,"a":"x"}"#.into()).unwrap()),
        outcome: Outcome::Ok,
        refused: None,
        drifted: false,
        duration: Duration::from_micros(1500),
    }
}

fn lines(disk: &Disk) -> Vec<serde_json::Value> {
    let data = disk.data.lock().unwrap();
    let text = std::str::from_utf8(&data).unwrap();
    let mut v = chain::Verifier::new();
    v.file("trail");
    text.lines()
        .map(|l| {
            v.line(l, None).unwrap_or_else(|e| panic!("{e}: {text}"));
            serde_json::from_str(l).unwrap()
        })
        .collect()
}

#[test]
fn a_record_says_who_called_what_and_hashes_the_arguments_canonically() {
    let disk = Disk::default();
    let mut w = Writer::new(Box::new(disk.clone()), false);
    w.add(&entry("ex__echo"));
    let mut refused = entry("ex__rm");
    refused.refused = Some("allowlist".into());
    refused.outcome = Outcome::Code(-32602);
    refused.upstream = None;
    w.add(&refused);
    w.write();
    let r = lines(&disk);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0]["kind"], "call");
    assert_eq!(r[0]["time"], "2027-01-15T08:00:00.000000Z");
    assert_eq!(r[0]["subject"], "alice");
    assert_eq!(r[0]["name"], "ex__echo");
    assert_eq!(r[0]["upstream"], "ex");
    assert_eq!(r[0]["outcome"], "ok");
    assert_eq!(r[0]["duration_ms"], 1.5);
    // The SHA-256 of {"a":"x","b":1}, members sorted (RFC 8785).
    let canonical = crate::pin::sha256_hex(&serde_json::json!({"a": "x", "b": 1}));
    assert_eq!(r[0]["arguments_sha256"], canonical.as_str());
    assert!(
        r[0].get("arguments").is_none(),
        "never the arguments unless asked"
    );
    assert_eq!(r[1]["kind"], "refused");
    assert_eq!(
        (r[1]["reason"].as_str(), r[1]["code"].as_i64()),
        (Some("allowlist"), Some(-32602))
    );
}

#[test]
fn the_arguments_are_written_only_when_asked() {
    let disk = Disk::default();
    let mut w = Writer::new(Box::new(disk.clone()), true);
    w.add(&entry("ex__echo"));
    w.write();
    assert_eq!(
        lines(&disk)[0]["arguments"],
        serde_json::json!({"b": 1, "a": "x"})
    );
}

#[test]
fn a_full_disk_loses_no_chain_and_leaves_a_gap_record() {
    let disk = Disk::default();
    let mut w = Writer::new(Box::new(disk.clone()), false);
    w.add(&entry("one"));
    w.write();
    disk.full.store(true, Ordering::Relaxed);
    for t in ["two", "three"] {
        w.add(&entry(t));
        w.write();
    }
    w.checkpoint();
    // Cut back to the last whole record; the checkpoint names it.
    assert_eq!(lines(&disk).len(), 1);
    let cp = Checkpoint::parse(&disk.checkpoint.lock().unwrap()).unwrap();
    assert_eq!(cp.head.count, 1);
    disk.full.store(false, Ordering::Relaxed);
    w.add(&entry("four"));
    w.write();
    let r = lines(&disk);
    assert_eq!(r.len(), 3, "{r:?}");
    assert_eq!(
        (r[1]["kind"].as_str(), r[1]["lost"].as_u64()),
        (Some("gap"), Some(2))
    );
    assert_eq!(r[1]["why"], "No space left on device");
    assert_eq!(
        (r[2]["name"].as_str(), r[2]["seq"].as_u64()),
        (Some("four"), Some(2))
    );
    // One gap only: the next record follows as usual.
    w.add(&entry("five"));
    w.write();
    assert_eq!(lines(&disk)[3]["kind"], "call");
}

#[test]
fn a_trail_goes_on_across_restarts_and_rotations() {
    let dir = std::env::temp_dir().join(format!("sb-audit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("audit.jsonl");
    let mut config = AuditConfig::new(&path);
    config.max_bytes = 1500;
    config.keep = 2;
    for run in 0..3 {
        let mut w = Writer::new(Box::new(Files::open(&config).unwrap()), false);
        for i in 0..6 {
            w.add(&entry(&format!("r{run}-{i}")));
            w.write();
        }
        w.checkpoint();
    }
    // A crash mid-line: the torn line is cut at the next start.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(b"{\"time\":\"torn").unwrap();
    let mut w = Writer::new(Box::new(Files::open(&config).unwrap()), false);
    w.add(&entry("after-crash"));
    w.write();
    w.checkpoint();
    let all = files(&path).unwrap();
    assert_eq!(all.len(), 3, "two rotated kept, and the current: {all:?}");
    let cp =
        Checkpoint::parse(&std::fs::read_to_string(config.checkpoint_path()).unwrap()).unwrap();
    let mut v = chain::Verifier::new();
    for file in &all {
        v.file(&file.display().to_string());
        for line in std::fs::read_to_string(file).unwrap().lines() {
            v.line(line, Some(&cp)).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    let intact = v.finish(Some(&cp)).unwrap();
    assert_eq!(intact.head.count, 19);
    assert!(intact.first > 0, "the oldest files were removed");
    let _ = std::fs::remove_dir_all(&dir);
}
