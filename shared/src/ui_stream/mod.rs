//! The AI SDK side of the protocol: the UI Message Stream that `POST {prefix}/api/aisdk/chat`
//! answers (`ai@6`, header `x-vercel-ai-ui-message-stream: v1`), the `UIMessage` list its
//! clients send, threads, usage and the model menu, the conversion between `UIMessage` and our
//! [`crate::Message`], and [`UiMessageBuilder`], which builds a reply from its chunks as the AI
//! SDK's client does (so a Rust client can read the stream too).
//!
//! ```
//! use lmchatkit_protocol::ui_stream::{sse_frame, UiChunk, UiFinishReason, DONE_FRAME};
//! let body: String = [UiChunk::start("m1"), UiChunk::text_start("t"), UiChunk::text_delta("t", "Hi"),
//!     UiChunk::text_end("t"), UiChunk::finish(UiFinishReason::Stop)].iter().map(sse_frame).collect();
//! assert!(body.starts_with("data: {\"type\":\"start\",\"messageId\":\"m1\"}\n\n"));
//! let _end = DONE_FRAME;
//! ```

mod build;
mod chunk;
mod constructors;
pub mod convert;
mod extra;
mod message;
mod request;
mod thread;

pub use build::UiMessageBuilder;
pub use chunk::{
    AI_SDK_VERSION_HEADER, DONE_DATA, DONE_FRAME, KEEP_ALIVE_FRAME, UI_MESSAGE_STREAM_HEADER,
    UiChunk, UiDataChunk, UiFinishReason, sse_frame, v6_frames, v6_may_read, wants_v7,
};
pub use convert::{denied_text, to_messages, to_ui_messages};
pub use extra::{AiSdkExtra, AiSdkPart, AiSdkTool, OutputForm, mark_failed};
pub use message::{
    UiApproval, UiDataPart, UiMessage, UiPart, UiRole, UiTextState, UiToolPart, UiToolState,
};
pub use request::{AiSdkChatRequest, ReasoningEffort, UiTrigger};
pub use thread::{AiSdkModelInfo, Thread, ThreadSummary, UiMessageMetadata, UiUsage};
