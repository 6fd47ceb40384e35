//! Where lmchatkit's per-event CPU goes, in-process and without sockets: the same 500-event
//! OpenAI body the throughput phase streams, pushed one chunk per event (as it arrives off the
//! wire) through each stage of the relay. Profiling evidence for the throughput gap to the
//! bare echo, which does none of this work (`bench pipeline`).

use std::time::Instant;

use bytes::Bytes;
use futures_util::StreamExt;
use lmchatkit::llm::openai::translate;
use lmchatkit::protocol::Event;
use serde::Serialize;

use super::mock::frames;
use super::workload::Workload;

/// Nanoseconds per event of each stage.
#[derive(Debug, Clone, Serialize)]
pub struct Stages {
    /// Events per pass.
    pub events: usize,
    /// `translate` (SSE framing + JSON chunk → `Event`) and encoding each `Event` as an SSE
    /// frame, as `routes/chat.rs` does.
    pub translate_and_frame_ns: f64,
    /// `translate` alone.
    pub translate_ns: f64,
    /// Only parsing each chunk's JSON into a `serde_json::Value` (the crate enables
    /// `preserve_order`, so objects are `IndexMap`s hashed with SipHash).
    pub value_parse_ns: f64,
    /// Parsing each chunk's JSON into a borrowed typed struct instead (what a typed translator
    /// would pay).
    pub typed_parse_ns: f64,
    /// Encoding each `Event` as a frame (`serde_json::to_string` + `data: …\n\n`).
    pub frame_ns: f64,
}

#[derive(serde::Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: Vec<Choice<'a>>,
}

#[derive(serde::Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Delta<'a>,
    #[serde(default)]
    finish_reason: Option<&'a str>,
}

#[derive(serde::Deserialize, Default)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<std::borrow::Cow<'a, str>>,
}

fn frame(ev: &Event) -> Bytes {
    let json = serde_json::to_string(ev).unwrap();
    let mut out = String::with_capacity(json.len() + 8);
    out.push_str("data: ");
    out.push_str(&json);
    out.push_str("\n\n");
    Bytes::from(out)
}

fn per_event(start: Instant, passes: usize, events: usize) -> f64 {
    start.elapsed().as_nanos() as f64 / (passes * events) as f64
}

/// Times each stage over `passes` passes of a `tokens`-token reply.
pub async fn run(tokens: u32, passes: usize) -> Stages {
    let w = Workload {
        tokens,
        ..Workload::default()
    };
    let chunks = frames(&w);
    let events = chunks.len();
    let body = || futures_util::stream::iter(chunks.clone().into_iter().map(Ok::<_, String>));

    let t = Instant::now();
    for _ in 0..passes {
        let mut s = Box::pin(translate(body()).map(|ev| frame(&ev)));
        while let Some(f) = s.next().await {
            std::hint::black_box(f);
        }
    }
    let translate_and_frame_ns = per_event(t, passes, events);

    let t = Instant::now();
    let mut evs = Vec::new();
    for _ in 0..passes {
        evs = translate(body()).collect::<Vec<_>>().await;
    }
    let translate_ns = per_event(t, passes, events);

    let datas: Vec<&[u8]> = chunks
        .iter()
        .map(|c| &c[6..c.len() - 2])
        .filter(|d| d.starts_with(b"{"))
        .collect();
    let t = Instant::now();
    for _ in 0..passes {
        for d in &datas {
            std::hint::black_box(serde_json::from_slice::<serde_json::Value>(d).unwrap());
        }
    }
    let value_parse_ns = per_event(t, passes, events);

    let t = Instant::now();
    for _ in 0..passes {
        for d in &datas {
            let c: Chunk<'_> = serde_json::from_slice(d).unwrap();
            std::hint::black_box((
                c.choices.first().map(|c| &c.delta.content),
                c.choices.first().map(|c| c.finish_reason),
            ));
        }
    }
    let typed_parse_ns = per_event(t, passes, events);

    let t = Instant::now();
    for _ in 0..passes {
        for ev in &evs {
            std::hint::black_box(frame(ev));
        }
    }
    let frame_ns = per_event(t, passes, evs.len().max(1)) * evs.len() as f64 / events as f64;

    Stages {
        events,
        translate_and_frame_ns,
        translate_ns,
        value_parse_ns,
        typed_parse_ns,
        frame_ns,
    }
}
