//! Log lines on stderr (stdout carries only what a user or script reads, the URL), each
//! written while a request is handled prefixed with that request's id.

use std::fmt;
use std::io::IsTerminal;

use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{Format, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Installs the process's subscriber: `RUST_LOG`, else `regent=info` (every crate of the
/// workspace). Colour only on a terminal, and never with `NO_COLOR`: a log written to a file
/// or a pipe carries no escape codes.
pub fn init() {
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "regent=info".into()),
        )
        .event_format(WithRequestId(Format::default()))
        .init();
}

/// The default format, with `request=<id> ` in front of lines written for a request.
pub struct WithRequestId<F>(pub F);

impl<S, N, F> FormatEvent<S, N> for WithRequestId<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        regent_http::request_id::with_current(|id| match id {
            Some(id) => write!(writer, "request={id} "),
            None => Ok(()),
        })?;
        self.0.format_event(ctx, writer, event)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::fmt::MakeWriter;

    use super::*;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Buffer {
        type Writer = Buffer;
        fn make_writer(&'a self) -> Buffer {
            self.clone()
        }
    }

    #[tokio::test]
    async fn lines_written_for_a_request_name_it_and_others_do_not() {
        let buf = Buffer::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(buf.clone())
            .with_ansi(false)
            .event_format(WithRequestId(Format::default()))
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        regent_http::request_id::scope("req-42", async {
            tracing::warn!("inside the request");
        })
        .await;
        tracing::warn!("outside any request");
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].starts_with("request=req-42 ") && lines[0].ends_with("inside the request")
        );
        assert!(!lines[1].contains("request=") && lines[1].ends_with("outside any request"));
    }
}
