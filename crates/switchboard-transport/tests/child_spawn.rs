//! How a child is started: without `fork`, whose copy of our address space
//! (page tables, then a copy-on-write fault for each page we write afterwards)
//! costs more the more memory we hold, e.g. the sessions of a bridge that
//! starts a child per session. Alone in its test binary: a fork made by any
//! other thread of this process would write-protect our pages too.

#![cfg(target_os = "linux")]

use std::time::Duration;

use switchboard_transport::stdio::{self, ChildConfig, ChildScheduling};
use switchboard_transport::TransportConfig;

/// Pages in the region written before and after the spawn: 16 MiB of 4 KiB.
const PAGES: usize = 4096;

/// Minor page faults of the calling thread so far (`getrusage(2)`).
fn minor_faults() -> i64 {
    // SAFETY: `usage` is a plain struct the call fills in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a valid pointer to `usage`.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    assert_eq!(rc, 0, "getrusage");
    usage.ru_minflt
}

/// Writes one byte in each page.
fn touch(region: *mut u8, page: usize) {
    for i in 0..PAGES {
        // SAFETY: `region` maps PAGES pages of `page` bytes, read-write.
        unsafe { region.add(i * page).write_volatile(i as u8) };
    }
}

/// Spawning a child does not write-protect our memory: writing every page of a
/// region we had already written costs no page faults after the spawn (a fork
/// would cost one per page), for each scheduling policy. The child is `cat`,
/// shut down normally.
#[tokio::test]
async fn spawning_a_child_does_not_copy_our_address_space() {
    // SAFETY: sysconf has no memory arguments.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap();
    // SAFETY: a new private anonymous mapping; checked below.
    let region = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            PAGES * page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(region, libc::MAP_FAILED, "mmap");
    // Small pages, so that a fork's write protection costs a fault per page.
    // SAFETY: the mapping made above.
    unsafe { libc::madvise(region, PAGES * page, libc::MADV_NOHUGEPAGE) };
    let region = region.cast::<u8>();
    for scheduling in [ChildScheduling::Inherit, ChildScheduling::Batch] {
        // The fewest faults of three spawns: a fork costs one per page every
        // time, while something else of the kernel's (NUMA balancing's hinting
        // faults, on a machine that has it) could cost some once.
        let mut fewest = i64::MAX;
        for _ in 0..3 {
            touch(region, page);
            let before = minor_faults();
            let mut config = ChildConfig::new("spawned", "cat");
            config.scheduling = scheduling;
            let child = stdio::spawn(config, &TransportConfig::default()).unwrap();
            touch(region, page);
            fewest = fewest.min(minor_faults() - before);
            let report = tokio::time::timeout(Duration::from_secs(20), child.process.shutdown())
                .await
                .expect("cat ends when its stdin closes")
                .unwrap();
            assert!(report.status.success(), "{report:?}");
        }
        assert!(
            fewest < (PAGES / 4) as i64,
            "{scheduling:?}: {fewest} page faults writing {PAGES} pages after the spawn: \
             the spawn write-protected our memory (fork)"
        );
    }
    // SAFETY: the mapping made above, no longer used.
    unsafe { libc::munmap(region.cast(), PAGES * page) };
}
