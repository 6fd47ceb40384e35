//! The reply this tab reads live, and re-attaching to a reply that runs on the server.
//!
//! A turn is a run on the server (see the server's `runs` module): it goes on when the tab
//! that started it reloads or closes, and the service saves the reply into the conversation
//! itself. This module holds the one reply this tab reads live (its run, its abort controller,
//! its bubble), so the composer's Stop stops it wherever it came from.
//!
//! Decisions:
//! - **Re-attach** ([`attach_now`]): when the tab opens a conversation (the remembered one after a
//!   reload, a click in the sidebar, a second tab, or a re-read after another tab's save) and
//!   the service names a running run (`lmchatkit-run-id` on `GET /api/conversations/{id}`), the
//!   tab follows `GET /api/runs/{id}/stream` **from the run's first event** into the bubble of
//!   the message the run writes (the stream's `lmchatkit-run-message-id`). The log is the
//!   truth: a saved copy of the reply, when the conversation holds one, is emptied and rebuilt
//!   from the log rather than matched against it, so nothing shows twice whatever was saved.
//!   The bubble streams, Stop shows (the tab is busy) and stops the run, and the `saved` event
//!   becomes the chat's base revision, so the tab's next save is not a conflict. A tab that
//!   only follows never saves the reply itself (the service did).
//! - **Tool calls** of a followed reply are shown with the policy's approval only (as the
//!   service saved them): pending ones get their approval cards, and deciding them resumes the
//!   turn in this tab; calls the policy allowed are run by the tab that started the turn, never
//!   by a follower (two tabs would run them twice).
//! - **Reconnects** ([`read_on`]): a connection that drops before the run's end (an error, or
//!   an end without `done`/`error`) is resumed with `Last-Event-ID` set to the last event shown,
//!   after 250 ms doubling to 4 s, at most [`MAX_RETRIES`] times in a row without progress;
//!   frames already shown are dropped by id ([`crate::reply`]). The tab that started the turn
//!   resumes the same way when the `POST /api/chat` response drops.
//! - **Stop** posts `POST /api/runs/{id}/stop`, marks the bubble stopped and stops reading at
//!   once; the service keeps and saves the partial reply marked stopped. Leaving a followed
//!   chat for another ([`leave`]) only stops reading: the run goes on.

use std::cell::RefCell;

use leptos::prelude::*;
use leptos::task::spawn_local;
use lmchatkit_protocol::HistoryMode;

use crate::api::{Api, ApiError};
use crate::reply::ReplyWriter;
use crate::state::{Chat, Store, UiMessage};
use crate::timer::sleep;

/// How many reconnections in a row may bring nothing before the reader gives up.
pub const MAX_RETRIES: u32 = 6;

/// Whose reply is read live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A turn this tab started.
    Turn,
    /// A run this tab re-attached to.
    Follow,
}

struct Live {
    generation: u64,
    kind: Kind,
    api: Api,
    ctrl: Option<web_sys::AbortController>,
    run: Option<String>,
    bubble: Option<UiMessage>,
}

thread_local! {
    static LIVE: RefCell<Option<Live>> = const { RefCell::new(None) };
    static GENERATION: RefCell<u64> = const { RefCell::new(0) };
}

/// Starts reading a reply live (replacing any other); its generation and abort signal.
pub fn begin(api: Api, kind: Kind) -> (u64, Option<web_sys::AbortSignal>) {
    let generation = GENERATION.with(|g| {
        *g.borrow_mut() += 1;
        *g.borrow()
    });
    let ctrl = web_sys::AbortController::new().ok();
    let signal = ctrl.as_ref().map(|c| c.signal());
    LIVE.with(|l| {
        *l.borrow_mut() = Some(Live {
            generation,
            kind,
            api,
            ctrl,
            run: None,
            bubble: None,
        })
    });
    (generation, signal)
}

fn with_live(generation: u64, f: impl FnOnce(&mut Live)) {
    LIVE.with(|l| {
        if let Some(live) = l
            .borrow_mut()
            .as_mut()
            .filter(|l| l.generation == generation)
        {
            f(live);
        }
    });
}

/// The run the live reply belongs to, once known.
pub fn set_run(generation: u64, id: String) {
    with_live(generation, |l| l.run = Some(id));
}

/// The bubble the live reply streams into.
pub fn set_bubble(generation: u64, ui: &UiMessage) {
    with_live(generation, |l| l.bubble = Some(ui.clone()));
}

/// Ends reading; whether no other reply became the live one meanwhile (a Stop or [`leave`]
/// ends it without replacing it).
pub fn end(generation: u64) -> bool {
    LIVE.with(|l| {
        let mut l = l.borrow_mut();
        match l.as_ref().map(|l| l.generation) {
            Some(g) if g == generation => {
                *l = None;
                true
            }
            Some(_) => false,
            None => true,
        }
    })
}

/// Whether this tab follows a run it did not start.
pub fn following() -> bool {
    LIVE.with(|l| l.borrow().as_ref().is_some_and(|l| l.kind == Kind::Follow))
}

/// Stops the live reply: the service stops its run (the model call with it; closing the
/// connection alone would not), the bubble is marked stopped and this tab stops reading at
/// once. The partial reply is kept.
pub fn stop() {
    let Some(live) = LIVE.with(|l| l.borrow_mut().take()) else {
        return;
    };
    if let Some(ui) = &live.bubble {
        ui.data.update(|d| d.stopped = true);
    }
    if let Some(id) = live.run {
        let api = live.api;
        spawn_local(async move {
            if let Err(e) = api.stop_run(&id).await {
                leptos::logging::warn!("stopping run {id} failed: {e}");
            }
        });
    }
    if let Some(c) = live.ctrl {
        c.abort();
    }
}

/// Stops following a run this tab did not start (the user opened another chat); the run goes
/// on. A turn of this tab is left alone.
pub fn leave(store: Store) {
    let Some(live) = LIVE.with(|l| {
        let mut l = l.borrow_mut();
        match l.as_ref() {
            Some(live) if live.kind == Kind::Follow => l.take(),
            _ => None,
        }
    }) else {
        return;
    };
    if let Some(c) = live.ctrl {
        c.abort();
    }
    store.busy.set(false);
}

/// What to do after a connection to a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// The run's end was read (or the reading was aborted, or the service refused): return this.
    Return(Result<(), ApiError>),
    /// Connect again after `Last-Event-ID`, waiting this many milliseconds first.
    Reconnect(u32),
}

/// Decides the next step after a connection ended with `res`, having seen the end (`done`,
/// `error`, `saved`) or `saved` itself, `progressed` past what the connection started from, on
/// `retries` reconnections in a row without progress.
pub fn next_step(
    res: Result<(), ApiError>,
    saw_end: bool,
    saw_saved: bool,
    progressed: bool,
    retries: u32,
) -> Next {
    match res {
        Err(e @ (ApiError::Aborted | ApiError::Status { .. })) => Next::Return(Err(e)),
        // `saved` is a run's last event.
        _ if saw_saved => Next::Return(Ok(())),
        // The service ends a run's stream only when the run ended: an end after its last
        // event, or one that brought nothing new, is the end.
        Ok(()) if saw_end || !progressed => Next::Return(Ok(())),
        res if retries >= MAX_RETRIES => Next::Return(res.and(Err(ApiError::Network(
            "the reply's stream kept dropping".into(),
        )))),
        _ => Next::Reconnect(250u32 << retries.min(4)),
    }
}

/// Reads run `run` into `w` after the first connection ended with `first`, reconnecting with
/// `Last-Event-ID` until the run's end (see the module docs).
pub async fn read_on(
    api: &Api,
    run: &str,
    w: &mut ReplyWriter,
    signal: Option<&web_sys::AbortSignal>,
    first: Result<(), ApiError>,
    first_progressed: bool,
) -> Result<(), ApiError> {
    let (mut res, mut progressed, mut retries) = (first, first_progressed, 0u32);
    loop {
        if progressed {
            retries = 0;
        }
        match next_step(res, w.saw_end(), w.saw_saved(), progressed, retries) {
            Next::Return(r) => return r,
            Next::Reconnect(ms) => {
                sleep(ms).await;
                if signal.is_some_and(|s| s.aborted()) {
                    return Err(ApiError::Aborted);
                }
            }
        }
        retries += 1;
        let before = w.last_id();
        res = api
            .run_stream(run, before, signal, |_| {}, |f| w.frame(f))
            .await;
        progressed = w.last_id() > before;
    }
}

/// Takes the revision of the service's save of the reply as the chat's base (when newer), so
/// this tab's next save is not a conflict.
pub fn take_base(chat: &Chat, revision: u64) {
    let ids: Vec<String> = chat.messages.with_untracked(|ms| {
        ms.iter()
            .filter(|m| m.is_substantial())
            .map(|m| m.key.clone())
            .collect()
    });
    if let Ok(mut s) = chat.sync.lock()
        && revision > s.revision
    {
        s.revision = revision;
        s.base_ids = ids;
    }
}

/// Follows run `run` writing into the open chat `chat` (see the module docs); nothing while a
/// turn of this tab runs, or without server-side history. In the turn's chunk: the UI calls
/// [`crate::turn::attach`].
pub(crate) fn attach_now(store: Store, chat: Chat, run: String) {
    if store.history_mode() != Some(HistoryMode::Server) {
        return;
    }
    if store.busy.get_untracked() && !following() {
        return;
    }
    leave(store);
    store.busy.set(true);
    crate::markdown::engine::fetch();
    let api = store.api();
    let (generation, signal) = begin(api.clone(), Kind::Follow);
    set_run(generation, run.clone());
    spawn_local(async move {
        let gone = follow(&api, &chat, &run, generation, signal.as_ref()).await;
        if end(generation) {
            store.busy.set(false);
            if gone {
                // The run ended (and was dropped) before this tab got to it: show the save, and
                // follow the next run when one writes the chat now.
                // (`turn::attach` does the same from outside the turn's chunk, a tick later.)
                if let Some((chat, Some(run))) = crate::history::reread_open(store).await {
                    spawn_local(async move { attach_now(store, chat, run) });
                }
            } else if !chat.has_pending() {
                store.focus();
            }
        }
    });
}

/// Reads the run into its bubble; `true` when the service no longer knows the run.
async fn follow(
    api: &Api,
    chat: &Chat,
    run: &str,
    generation: u64,
    signal: Option<&web_sys::AbortSignal>,
) -> bool {
    let slot = RefCell::new(None::<ReplyWriter>);
    let first = api
        .run_stream(
            run,
            0,
            signal,
            |message_id| {
                let ui = bubble_for(chat, message_id);
                set_bubble(generation, &ui);
                *slot.borrow_mut() = Some(ReplyWriter::new(ui, |_| false));
            },
            |f| {
                if let Some(w) = slot.borrow_mut().as_mut() {
                    w.frame(f);
                }
            },
        )
        .await;
    let Some(mut w) = slot.into_inner() else {
        return first.is_err_and(|e| e.is_not_found());
    };
    let progressed = w.last_id() > 0;
    let res = read_on(api, run, &mut w, signal, first, progressed).await;
    let ui = w.ui().clone();
    let ended = w.finish();
    if let Some(revision) = ended.saved {
        take_base(chat, revision);
    }
    match res {
        Err(ApiError::Aborted) => {}
        Err(e) => ui.error.set(Some(e.to_string())),
        Ok(()) => ui.error.set(ended.failed),
    }
    false
}

/// The bubble of message `id` in `chat`, emptied to be written again from the run's log, else
/// a new one at the end (a new id when the service named none).
fn bubble_for(chat: &Chat, id: Option<String>) -> UiMessage {
    let existing = id.as_ref().and_then(|id| {
        chat.messages
            .with_untracked(|ms| ms.iter().find(|m| &m.key == id).cloned())
    });
    if let Some(ui) = existing {
        ui.data.update(|d| {
            d.content = lmchatkit_protocol::Content::Text(String::new());
            d.thinking = None;
            d.tool_calls.clear();
            d.usage = None;
            d.cost_usd = None;
            d.stopped = false;
            d.failed = None;
        });
        ui.set_html(String::new());
        ui.error.set(None);
        ui.streamed.set(Vec::new());
        return ui;
    }
    let mut m = lmchatkit_protocol::Message::assistant("");
    m.id = id;
    m.created_at = Some(crate::state::now_ms());
    let ui = UiMessage::new(m);
    chat.push(ui.clone());
    ui
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net() -> Result<(), ApiError> {
        Err(ApiError::Network("reset".into()))
    }

    #[test]
    fn a_drop_before_the_end_reconnects_with_a_growing_wait() {
        assert_eq!(
            next_step(net(), false, false, true, 0),
            Next::Reconnect(250)
        );
        assert_eq!(
            next_step(net(), false, false, false, 2),
            Next::Reconnect(1000)
        );
        assert_eq!(
            next_step(net(), false, false, false, 5),
            Next::Reconnect(4000)
        );
        // A clean end in the middle of the reply (a proxy gave up) reconnects too.
        assert_eq!(
            next_step(Ok(()), false, false, true, 0),
            Next::Reconnect(250)
        );
        // `done` came but the connection dropped before `saved`: read on for the revision.
        assert_eq!(next_step(net(), true, false, true, 0), Next::Reconnect(250));
    }

    #[test]
    fn the_end_a_refusal_or_an_abort_returns() {
        assert_eq!(
            next_step(Ok(()), true, false, true, 0),
            Next::Return(Ok(()))
        );
        assert_eq!(next_step(net(), true, true, true, 0), Next::Return(Ok(())));
        assert_eq!(
            next_step(Ok(()), false, false, false, 1),
            Next::Return(Ok(())),
            "a reconnection that brought nothing: the run is over"
        );
        let gone = ApiError::Status {
            status: 404,
            message: "no such run".into(),
        };
        assert_eq!(
            next_step(Err(gone.clone()), false, false, false, 0),
            Next::Return(Err(gone))
        );
        assert_eq!(
            next_step(Err(ApiError::Aborted), false, false, true, 0),
            Next::Return(Err(ApiError::Aborted))
        );
        assert!(matches!(
            next_step(net(), false, false, false, MAX_RETRIES),
            Next::Return(Err(ApiError::Network(_)))
        ));
    }
}
