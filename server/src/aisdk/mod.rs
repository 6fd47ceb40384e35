//! The AI SDK side: what lets an app built on the Vercel AI SDK's `useChat`
//! (`DefaultChatTransport`) use the service as its backend. The server runs the tool loop
//! ([`crate::agent`]) and speaks the UI Message Stream protocol (v1 header, AI SDK 6); the wire
//! types are `lmchatkit_protocol::ui_stream`.
//!
//! Decisions:
//! - **One engine, one policy.** A turn is prepared exactly as a native one (persona, system
//!   prompt, tools the access layer offers, `@uri` and `/prompt`), and every tool call is decided
//!   by the same approval policy as our own UI's.
//! - **Only documented chunk keys.** `ai@6.0.0` validates chunks with strict schemas; the
//!   translator emits nothing an older 6.0 client would reject. Tools surface as dynamic tools
//!   (`dynamic-tool` parts), as the app does not know the server's tools at build time.
//! - **Approvals are bound** ([`approval_id`]): an approval the client returns runs the call only
//!   when it is the exact call (tool, input, thread, principal) the server asked about, and only
//!   when the stored thread does not already hold its outcome.
//! - **Threads are conversations.** A thread id is the body's `threadId`, else the chat `id`; it
//!   is saved in the same history store as the native UI's conversations, off the reply's path
//!   ([`thread`]), so a thread started here shows in our UI and the other way round.

pub(crate) mod approval_id;
pub(crate) mod chat;
mod translate;
