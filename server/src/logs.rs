//! The log filter the app installs (feature `logs`), from a `RUST_LOG`-style spec such as
//! `info` or `info,lmchatkit=debug,hyper=warn`.
//!
//! Decisions:
//! - **A spec of targets and levels only gets a static filter** ([`Targets`]). It decides per
//!   callsite and keeps no state per span. [`EnvFilter`] also tracks every span, so that
//!   directives like `[chat{model=x}]=debug` can match what is entered: every span entry and
//!   exit takes a read lock on one map shared by all threads and hashes the span's id. A turn
//!   enters spans about 170 times (the run's task and the upstream's stream, once per poll), so
//!   with the default `info` that tracking was 1.7% of a turn's instructions and bought
//!   nothing. Measured with callgrind on the bench's relay, 50-token replies with history:
//!   1.024 M instructions a turn with `EnvFilter`, 1.007 M with `Targets`.
//! - **A spec with a span directive** (any `[`) gets [`EnvFilter`], which alone understands it.
//! - **An empty spec** keeps [`EnvFilter`], so it still logs nothing ([`Targets`] would read it
//!   as errors only).
//! - A spec neither parses is an error; the app then says so and logs at `info`.
//!
//! ```
//! use lmchatkit::logs::LogFilter;
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! let filter = LogFilter::parse("info,lmchatkit=debug").unwrap();
//! assert!(filter.is_static());
//! assert!(!LogFilter::parse("info,[chat]=debug").unwrap().is_static());
//! let subscriber = tracing_subscriber::registry()
//!     .with(filter.into_layer())
//!     .with(tracing_subscriber::fmt::layer());
//! tracing::subscriber::with_default(subscriber, || tracing::info!("hello"));
//! ```

use std::fmt;

use tracing::Subscriber;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;

/// The global filter of a log subscriber: static ([`Targets`]) when the spec allows it, else
/// [`EnvFilter`]. See the module docs.
pub struct LogFilter(Kind);

enum Kind {
    Static(Box<Targets>),
    Spans(Box<EnvFilter>),
}

/// A log filter spec that parses neither as targets and levels nor as an `EnvFilter`.
#[derive(Debug)]
pub struct LogFilterError(String);

impl fmt::Display for LogFilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LogFilterError {}

impl LogFilter {
    /// Reads a `RUST_LOG`-style spec.
    pub fn parse(spec: &str) -> Result<Self, LogFilterError> {
        if !spec.trim().is_empty()
            && !spec.contains('[')
            && let Ok(targets) = spec.parse::<Targets>()
        {
            return Ok(Self(Kind::Static(Box::new(targets))));
        }
        EnvFilter::try_new(spec)
            .map(|f| Self(Kind::Spans(Box::new(f))))
            .map_err(|e| LogFilterError(e.to_string()))
    }

    /// Whether the filter keeps no state per span (a spec of targets and levels only).
    pub fn is_static(&self) -> bool {
        matches!(self.0, Kind::Static(_))
    }

    /// The filter as a layer of a `tracing_subscriber` stack, below the layers that write.
    pub fn into_layer<S>(self) -> Box<dyn Layer<S> + Send + Sync + 'static>
    where
        S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        match self.0 {
            Kind::Static(t) => t,
            Kind::Spans(f) => f,
        }
    }
}

/// `info` for every target.
impl Default for LogFilter {
    fn default() -> Self {
        Self(Kind::Static(Box::new(
            Targets::new().with_default(tracing::level_filters::LevelFilter::INFO),
        )))
    }
}

impl fmt::Debug for LogFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::Static(t) => f.debug_tuple("LogFilter::Static").field(t).finish(),
            Kind::Spans(e) => f.debug_tuple("LogFilter::Spans").field(e).finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    /// Runs `f` under a subscriber filtered by `spec` and returns what it wrote.
    fn logged(spec: &str, f: impl FnOnce()) -> String {
        logged_with(LogFilter::parse(spec).unwrap(), f)
    }

    fn logged_with(filter: LogFilter, f: impl FnOnce()) -> String {
        crate::presets::capture_with(
            |writer| {
                tracing_subscriber::registry()
                    .with(filter.into_layer())
                    .with(
                        tracing_subscriber::fmt::layer()
                            .with_writer(writer)
                            .with_ansi(false),
                    )
            },
            f,
        )
    }

    #[test]
    fn targets_and_levels_get_the_static_filter_and_filter_by_target_and_level() {
        let spec = "warn,lmchatkit=debug";
        assert!(LogFilter::parse(spec).unwrap().is_static());
        let out = logged(spec, || {
            tracing::debug!(target: "lmchatkit::turn", "kept debug");
            tracing::trace!(target: "lmchatkit::turn", "dropped trace");
            tracing::info!(target: "hyper::proto", "dropped info");
            tracing::warn!(target: "hyper::proto", "kept warn");
            let span = tracing::info_span!(target: "lmchatkit::chat", "chat", model = "m");
            let _in = span.enter();
            tracing::info!(target: "lmchatkit::turn", "in a span");
        });
        assert!(out.contains("kept debug"), "{out}");
        assert!(out.contains("kept warn"), "{out}");
        assert!(!out.contains("dropped"), "{out}");
        assert!(
            out.contains("chat{model=\"m\"}: lmchatkit::turn: in a span"),
            "{out}"
        );
    }

    #[test]
    fn a_span_directive_gets_the_filter_that_tracks_spans() {
        let spec = "warn,[chat]=debug";
        assert!(!LogFilter::parse(spec).unwrap().is_static());
        let out = logged(spec, || {
            tracing::debug!("outside the span");
            let span = tracing::info_span!("chat");
            let _in = span.enter();
            tracing::debug!("inside the span");
        });
        assert!(out.contains("inside the span"), "{out}");
        assert!(!out.contains("outside the span"), "{out}");
    }

    #[test]
    fn an_empty_spec_logs_nothing_and_a_bad_one_is_an_error() {
        let filter = LogFilter::parse("").unwrap();
        assert!(!filter.is_static());
        assert_eq!(logged_with(filter, || tracing::error!("an error")), "");
        assert!(LogFilter::parse("lmchatkit=loud").is_err());
    }

    #[test]
    fn the_default_is_info_for_every_target() {
        assert!(LogFilter::default().is_static());
        let out = logged_with(LogFilter::default(), || {
            tracing::debug!(target: "lmchatkit::turn", "a debug line");
            tracing::info!(target: "hyper::proto", "an info line");
        });
        assert!(
            out.contains("an info line") && !out.contains("a debug line"),
            "{out}"
        );
    }
}
