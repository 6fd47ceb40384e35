//! File descriptors and the cap on concurrent chat streams, so that overload is a 429 with
//! `Retry-After` before the process runs out of descriptors.
//!
//! Decisions:
//! - **The soft `RLIMIT_NOFILE` is raised to the hard limit at start** (Unix; allowed without
//!   privileges), since the soft default (often 1,024) is far below what one process can serve.
//! - **Each stream is counted as two descriptors** (the client's connection and the upstream
//!   request's; an HTTP/2 upstream shares one, so this errs on the safe side), and a quarter of
//!   the limit plus [`RESERVED`] are left for everything else: other requests' connections, the
//!   database, MCP servers' pipes, log files. So the cap is `(limit × 3/4 − 64) / 2`.
//! - **The default cap is that, at most [`DEFAULT_MAX_STREAMS`]** (memory is the other bound:
//!   the bench measures the RSS of that many open streams). A configured `max_streams` above
//!   what the descriptors allow is lowered to it, with a warning naming both numbers.
//! - A stream past the cap is the library's 429 (its `Streams` count); accepting a connection
//!   past the descriptors is retried after a pause rather than spun on (see `serve`).

/// Descriptors left for everything but the streams, besides a quarter of the limit.
pub const RESERVED: u64 = 64;

/// The cap when none is configured and the descriptors allow more.
pub const DEFAULT_MAX_STREAMS: usize = 10_000;

/// Raises the soft descriptor limit to the hard one; the limit in force after (`None` where
/// it cannot be read).
pub fn raise_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        match rlimit::increase_nofile_limit(u64::MAX) {
            Ok(n) => Some(n),
            Err(e) => {
                tracing::warn!(error = %e, "could not raise the open-files limit");
                rlimit::getrlimit(rlimit::Resource::NOFILE)
                    .ok()
                    .map(|(soft, _)| soft)
            }
        }
    }
    #[cfg(not(unix))]
    None
}

/// How many streams `limit` descriptors carry, by the rule in the module docs (at least 1).
pub fn streams_for(limit: u64) -> usize {
    let usable = (limit / 4 * 3).saturating_sub(RESERVED) / 2;
    usize::try_from(usable).unwrap_or(usize::MAX).max(1)
}

/// The total stream cap: `configured`, or [`DEFAULT_MAX_STREAMS`], never more than `limit`
/// descriptors carry; with a warning to log when a configured cap was lowered.
pub fn stream_cap(configured: Option<usize>, limit: Option<u64>) -> (usize, Option<String>) {
    let wanted = configured.unwrap_or(DEFAULT_MAX_STREAMS).max(1);
    let Some(limit) = limit else {
        return (wanted, None);
    };
    let fits = streams_for(limit);
    if wanted <= fits {
        return (wanted, None);
    }
    let warning = configured.map(|n| {
        format!(
            "max_streams {n} needs about {} open files but the limit is {limit}: at most {fits} \
             streams (raise the hard limit, e.g. LimitNOFILE= in a systemd unit)",
            (n as u64).saturating_mul(2).saturating_add(RESERVED) / 3 * 4
        )
    });
    (fits, warning)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_takes_two_descriptors_after_a_quarter_and_the_reserve_are_set_aside() {
        assert_eq!(streams_for(1024), (768 - 64) / 2);
        assert_eq!(streams_for(20_000), (15_000 - 64) / 2);
        assert_eq!(streams_for(0), 1);
        assert_eq!(
            streams_for(u64::MAX),
            usize::try_from((u64::MAX / 4 * 3 - 64) / 2).unwrap_or(usize::MAX)
        );
    }

    #[test]
    fn the_default_cap_is_ten_thousand_or_what_the_descriptors_carry_without_a_warning() {
        assert_eq!(stream_cap(None, Some(1_048_576)), (10_000, None));
        assert_eq!(stream_cap(None, Some(1024)), (352, None));
        assert_eq!(stream_cap(None, None), (10_000, None));
    }

    #[test]
    fn a_configured_cap_above_the_descriptors_is_lowered_with_a_warning_naming_both() {
        let (cap, warning) = stream_cap(Some(50_000), Some(20_000));
        assert_eq!(cap, streams_for(20_000));
        let warning = warning.unwrap();
        assert!(warning.contains("max_streams 50000"), "{warning}");
        assert!(warning.contains("limit is 20000"), "{warning}");
        assert_eq!(stream_cap(Some(100), Some(20_000)), (100, None));
        assert_eq!(stream_cap(Some(0), Some(20_000)), (1, None));
    }
}
