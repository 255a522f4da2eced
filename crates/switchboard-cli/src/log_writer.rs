//! Where the logs go: stderr, each event's text made printable first. A
//! server's text reaches the logs in many fields (its stderr lines, its name,
//! its tool names, its error messages); none of it may forge a log line (a
//! newline inside an event) or drive the terminal (escape sequences,
//! bidirectional marks): those become visible `\u{..}` escapes, as
//! `render::one_line` writes them, and only the event's final newline stays.
//!
//! This module must not know what is logged.

use std::io::{self, Write};

use tracing_subscriber::fmt::MakeWriter;

/// Makes [`EscapedStderr`] writers for a `tracing_subscriber::fmt` layer.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LogStderr;

impl<'a> MakeWriter<'a> for LogStderr {
    type Writer = EscapedStderr;

    fn make_writer(&'a self) -> Self::Writer {
        EscapedStderr
    }
}

/// Writes one formatted event (the fmt layer writes each in one call) to
/// stderr, escaped (see the module documentation).
pub(crate) struct EscapedStderr;

impl Write for EscapedStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        std::io::stderr()
            .lock()
            .write_all(escaped(buf).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        std::io::stderr().flush()
    }
}

/// `event` as written: printable, with one newline at most, at its end.
fn escaped(event: &[u8]) -> String {
    let text = String::from_utf8_lossy(event);
    let (body, end) = match text.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (&*text, ""),
    };
    crate::client::render::one_line(body) + end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_cannot_forge_a_line_or_drive_the_terminal() {
        let forged =
            "WARN drift name=x\n2026-12-04T03:00:00Z  INFO bridge stopped\u{1b}[31m\r\u{202e}\n";
        assert_eq!(
            escaped(forged.as_bytes()),
            "WARN drift name=x\\u{a}2026-12-04T03:00:00Z  INFO bridge stopped\\u{1b}[31m\\u{d}\\u{202e}\n"
        );
        // An ordinary event, tabs included, is left as it is.
        assert_eq!(escaped(b"INFO ready\tpid=1\n"), "INFO ready\tpid=1\n");
        assert_eq!(escaped(b"no newline"), "no newline");
    }
}
