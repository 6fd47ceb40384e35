//! Shared pieces of the end-to-end tests (and, later, the benchmarks): a mock OpenAI-compatible
//! upstream that speaks the real wire format, and helpers to serve a `ChatService` on loopback.

pub mod aisdk;
pub mod app_binary;
pub mod bench;
pub mod browser;
pub mod captured;
pub mod engines;
pub mod installed;
pub mod mcp_server;
pub mod mock_anthropic;
pub mod mock_upstream;
pub mod mutable_mcp;
/// The `notes` CLI of the library's `clap_tools` example, shared with it (one source).
#[path = "../../server/examples/clap_tools/notes.rs"]
pub mod notes;
pub mod quiet;
pub mod serve;
pub mod task_server;
pub mod test_host;

/// The book's chapters (`docs/src/`) and the README: their Rust code blocks compile (and run,
/// unless marked `no_run`) as doctests of this crate, which has every feature and framework
/// they use. `tests/tests/it/book.rs` checks that no block escapes this (each is Rust or says
/// which configuration it is).
#[cfg(doctest)]
pub mod book {
    #[doc = include_str!("../../README.md")]
    pub struct Readme;
    #[doc = include_str!("../../docs/src/introduction.md")]
    pub struct Introduction;
    #[doc = include_str!("../../docs/src/mounting.md")]
    pub struct Mounting;
    #[doc = include_str!("../../docs/src/features.md")]
    pub struct Features;
    #[doc = include_str!("../../docs/src/aisdk.md")]
    pub struct AiSdk;
    #[doc = include_str!("../../docs/src/app.md")]
    pub struct App;
    #[doc = include_str!("../../docs/src/mcp.md")]
    pub struct Mcp;
    #[doc = include_str!("../../docs/src/instances.md")]
    pub struct Instances;
    #[doc = include_str!("../../docs/src/ui.md")]
    pub struct Ui;
    #[doc = include_str!("../../docs/src/security.md")]
    pub struct Security;
    #[doc = include_str!("../../docs/src/performance.md")]
    pub struct Performance;
    #[doc = include_str!("../../docs/src/contributing.md")]
    pub struct Contributing;
}

/// A 1x1 PNG (the one `tests/python/cache_icons_server.py` uses as its server icon).
pub const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];
