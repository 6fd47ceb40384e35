//! Parts of the UI that a first paint does not need, each compiled into a wasm chunk of its own
//! that the browser fetches the first time the part is shown.
//!
//! - **Where the module is split.** `split_point!` declares a function
//!   that builds a part's view. `scripts/build-ui.sh` compiles the UI with
//!   `--cfg lmchatkit_split`; each split point then becomes a `wasm_split` function (the
//!   mechanism behind Leptos's `#[lazy]`), and `wasm-split-cli` moves into the chunk every function
//!   only that part reaches. Code two chunks share goes into a third that both load; code the
//!   first paint reaches stays in the main module.
//! - **What is split off**: the "Tools & servers" dialog, MCP App views (the frame and its
//!   bridge to the view), the conversation edit and delete dialogs, the Markdown parser
//!   ([`crate::markdown::engine`], not a view: its split point hands back the parser, and a
//!   text shows plain until it is here), the turn's code ([`crate::turn`]: the turn and
//!   follow loops) and the transcript ([`crate::components::transcript`]: the messages, tool and
//!   approval cards), both fetched at the composer's first keystroke, and export and import
//!   ([`crate::transfer`], at the first click on either). A reloaded conversation
//!   with an App view in it shows its text once the transcript has arrived and the view when its
//!   chunk has.
//! - **Also in the transcript's chunk** (code points, not views), since only a chat on screen
//!   needs them: reading a whole stored conversation ([`crate::stored`]: `StoredConversation`'s
//!   and `Message`'s `Deserialize`) and saving one ([`crate::history::save`]: the save loop,
//!   the `PUT` and its 409 merge, the `Serialize` side; a turn waits for it so that the
//!   user's message is saved before the turn's request goes). Measured on the main module
//!   after `wasm-opt` and brotli: 249,277 B before, 235,860 B without the decoder, 227,318 B
//!   without the save too (801 → 724 KB raw). The first load's bundle files (main wasm, its
//!   glue, the split loader, the CSS) went from 265,938 to 244,055 B as brotli (318,027 to
//!   290,148 B gzip); with the page and the stable loader (2,173 B) 246.2 KB, under the
//!   250 KB budget.
//! - **Without `lmchatkit_split`** (`trunk serve`, native unit tests) a split point is a
//!   plain function behind the same `async` signature, so the dev loop and the tests run the
//!   same components.
//! - **A chunk that fails to load** (network, a server updated under an open tab) does not abort
//!   the module: split points are `fallible`, and [`lazily`] shows the error with a "Try again"
//!   button, in a dialog for a dialog's part. A later attempt fetches the chunk again (failures
//!   are not cached).
//! - **While it loads** the part shows nothing: on loopback a chunk arrives within a frame or
//!   two, and a placeholder that flashes is worse than a dialog that opens a frame later.
//! - **Code that is not a view** (the Markdown parser, the turn's code, export and import) comes
//!   back from its split point (`code_point!`) as function pointers into the chunk, kept by a
//!   [`Loader`]: one load at a time, callers during a load wait for its outcome, and a failed
//!   load is tried again by the next caller.

use std::cell::RefCell;
use std::future::Future;
use std::task::{Poll, Waker};

use leptos::prelude::*;

/// A part of the UI could not be loaded (its wasm chunk failed to download or to start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadFailed;

#[cfg(lmchatkit_split)]
impl From<leptos::wasm_split::SplitLoaderError> for LoadFailed {
    fn from(e: leptos::wasm_split::SplitLoaderError) -> Self {
        web_sys::console::error_1(&format!("lmchatkit: {e}").into());
        LoadFailed
    }
}

/// Declares a split point: `chunk: fn name(args) { view }` defines
/// `async fn name(args) -> Result<AnyView, LoadFailed>`, whose body is compiled into the wasm
/// chunk `chunk` when the UI is built with `--cfg lmchatkit_split`, and is a plain call otherwise.
/// Split points naming the same chunk share it.
macro_rules! split_point {
    ($(#[$doc:meta])* $chunk:ident: fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$doc])*
        #[cfg(lmchatkit_split)]
        #[::leptos::wasm_split::wasm_split($chunk, wasm_split_path = ::leptos::wasm_split, fallible)]
        pub fn $name($($arg: $ty),*) -> ::std::result::Result<::leptos::prelude::AnyView, $crate::lazy::LoadFailed> {
            ::std::result::Result::Ok($body)
        }
        $(#[$doc])*
        #[cfg(not(lmchatkit_split))]
        pub async fn $name($($arg: $ty),*) -> ::std::result::Result<::leptos::prelude::AnyView, $crate::lazy::LoadFailed> {
            ::std::result::Result::Ok($body)
        }
    };
}
pub(crate) use split_point;

/// Declares the entry of a chunk of code (not a view): `chunk: fn name() -> T { value }`
/// defines `async fn name() -> Result<T, LoadFailed>`, compiled into the wasm chunk `chunk`
/// with `--cfg lmchatkit_split` and a plain function otherwise. `T` is what the chunk hands
/// back (function pointers into it), kept by a [`Loader`].
macro_rules! code_point {
    ($(#[$doc:meta])* $chunk:ident: fn $name:ident() -> $ty:ty $body:block) => {
        $(#[$doc])*
        #[cfg(lmchatkit_split)]
        #[::leptos::wasm_split::wasm_split($chunk, wasm_split_path = ::leptos::wasm_split, fallible)]
        fn $name() -> ::std::result::Result<$ty, $crate::lazy::LoadFailed> {
            ::std::result::Result::Ok($body)
        }
        $(#[$doc])*
        #[cfg(not(lmchatkit_split))]
        async fn $name() -> ::std::result::Result<$ty, $crate::lazy::LoadFailed> {
            ::std::result::Result::Ok($body)
        }
    };
}
pub(crate) use code_point;

/// Where a [`Loader`] is.
#[derive(Clone, Copy)]
enum Load<T> {
    NotAsked,
    Loading,
    Failed,
    Ready(T),
}

/// What a chunk's split point handed back (function pointers into the chunk), once loaded; kept
/// in a `thread_local!` of the part's module.
pub struct Loader<T: Copy + 'static> {
    state: RefCell<(Load<T>, Vec<Waker>)>,
}

/// How [`Loader::ready`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival<T> {
    /// It was here, or another call's load brought it.
    Here(T),
    /// This call loaded it (the part's first arrival).
    Arrived(T),
    /// The load failed (this call's or the one it waited for).
    Failed,
}

impl<T: Copy + 'static> Arrival<T> {
    /// What was loaded, if it was.
    pub fn value(self) -> Option<T> {
        match self {
            Arrival::Here(v) | Arrival::Arrived(v) => Some(v),
            Arrival::Failed => None,
        }
    }
}

impl<T: Copy + 'static> Loader<T> {
    /// Nothing loaded yet.
    pub const fn new() -> Self {
        Loader {
            state: RefCell::new((Load::NotAsked, Vec::new())),
        }
    }

    /// What was loaded, if it has arrived.
    pub fn here(&self) -> Option<T> {
        match self.state.borrow().0 {
            Load::Ready(v) => Some(v),
            _ => None,
        }
    }

    /// Whether nothing has asked for it yet.
    pub fn not_asked(&self) -> bool {
        matches!(self.state.borrow().0, Load::NotAsked)
    }

    /// Loads it with `load` unless it is here or a load is under way (then waits for that one).
    pub async fn ready<F, Fut>(key: &'static std::thread::LocalKey<Self>, load: F) -> Arrival<T>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, LoadFailed>>,
    {
        enum Step<T> {
            Here(T),
            Wait,
            Load,
        }
        let step = key.with(|l| {
            let mut s = l.state.borrow_mut();
            match s.0 {
                Load::Ready(v) => Step::Here(v),
                Load::Loading => Step::Wait,
                Load::NotAsked | Load::Failed => {
                    s.0 = Load::Loading;
                    Step::Load
                }
            }
        });
        match step {
            Step::Here(v) => return Arrival::Here(v),
            Step::Wait => return Self::outcome(key).await,
            Step::Load => {}
        }
        let loaded = load().await;
        let waiters = key.with(|l| {
            let mut s = l.state.borrow_mut();
            s.0 = match loaded {
                Ok(v) => Load::Ready(v),
                Err(LoadFailed) => Load::Failed,
            };
            std::mem::take(&mut s.1)
        });
        for w in waiters {
            w.wake();
        }
        match loaded {
            Ok(v) => Arrival::Arrived(v),
            Err(LoadFailed) => Arrival::Failed,
        }
    }

    /// Waits for the load under way to end.
    async fn outcome(key: &'static std::thread::LocalKey<Self>) -> Arrival<T> {
        std::future::poll_fn(|cx| {
            key.with(|l| {
                let mut s = l.state.borrow_mut();
                match s.0 {
                    Load::Loading => {
                        s.1.push(cx.waker().clone());
                        Poll::Pending
                    }
                    Load::Ready(v) => Poll::Ready(Arrival::Here(v)),
                    Load::NotAsked | Load::Failed => Poll::Ready(Arrival::Failed),
                }
            })
        })
        .await
    }
}

impl<T: Copy + 'static> Default for Loader<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// How a part that failed to load shows the failure.
#[derive(Clone, Copy)]
pub enum Shell {
    /// In place, where the part would have been (an App view in the transcript).
    Inline,
    /// In a dialog of its own, with a Close button calling this (a dialog's part).
    Dialog(Callback<()>),
}

/// Shows the view `load` gives once its chunk has loaded. A failure shows an error with a
/// "Try again" button (placed as `shell` says), which calls `load` again.
pub fn lazily<F, Fut>(shell: Shell, load: F) -> impl IntoView
where
    F: Fn() -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<AnyView, LoadFailed>> + Send + 'static,
{
    let attempt = RwSignal::new(0u32);
    move || {
        attempt.track();
        let load = load.clone();
        Suspend::new(async move {
            match load().await {
                Ok(view) => view,
                Err(LoadFailed) => failed(shell, attempt),
            }
        })
    }
}

/// The error a part that could not load shows.
fn failed(shell: Shell, attempt: RwSignal<u32>) -> AnyView {
    let message = view! {
        <p class="lmck-error lmck-load-failed" role="alert">
            "This part of the page could not be loaded (see the browser console). "
            <button class="lmck-btn lmck-retry" on:click=move |_| attempt.update(|n| *n += 1)>"Try again"</button>
        </p>
    };
    match shell {
        Shell::Inline => message.into_any(),
        Shell::Dialog(close) => view! {
            <div class="lmck-modal-back" on:click=move |_| close.run(())>
                <div class="lmck-modal" role="alertdialog" aria-modal="true" aria-label="Not loaded"
                    on:click=|ev| ev.stop_propagation()>
                    {message}
                    <button class="lmck-btn lmck-close" on:click=move |_| close.run(())>"Close"</button>
                </div>
            </div>
        }
        .into_any(),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::pin::pin;
    use std::rc::Rc;
    use std::task::{Context, Poll, Waker};

    use super::*;

    /// The future of a test's load.
    type Gate = std::pin::Pin<Box<dyn Future<Output = Result<u8, LoadFailed>>>>;

    /// A load that stays pending until the test settles it; counts its starts.
    fn gate(
        starts: &Rc<Cell<u32>>,
        outcome: &Rc<Cell<Option<Result<u8, LoadFailed>>>>,
    ) -> impl FnOnce() -> Gate {
        let (starts, outcome) = (starts.clone(), outcome.clone());
        move || {
            starts.set(starts.get() + 1);
            Box::pin(std::future::poll_fn(move |_| match outcome.get() {
                Some(r) => Poll::Ready(r),
                None => Poll::Pending,
            }))
        }
    }

    #[test]
    fn callers_during_a_load_wait_for_it_and_the_part_is_loaded_once() {
        thread_local! { static PART: Loader<u8> = const { Loader::new() }; }
        let cx = &mut Context::from_waker(Waker::noop());
        let (starts, outcome) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(None)));
        assert!(PART.with(|l| l.not_asked()));
        let mut first = pin!(Loader::ready(&PART, gate(&starts, &outcome)));
        let mut second = pin!(Loader::ready(&PART, gate(&starts, &outcome)));
        assert!(first.as_mut().poll(cx).is_pending());
        assert!(second.as_mut().poll(cx).is_pending());
        assert_eq!(
            starts.get(),
            1,
            "the second caller waits instead of loading"
        );
        assert!(!PART.with(|l| l.not_asked()));

        outcome.set(Some(Ok(7)));
        assert_eq!(first.as_mut().poll(cx), Poll::Ready(Arrival::Arrived(7)));
        assert_eq!(second.as_mut().poll(cx), Poll::Ready(Arrival::Here(7)));
        assert_eq!(PART.with(|l| l.here()), Some(7));
        let mut later = pin!(Loader::ready(&PART, gate(&starts, &outcome)));
        assert_eq!(later.as_mut().poll(cx), Poll::Ready(Arrival::Here(7)));
        assert_eq!(starts.get(), 1);
    }

    #[test]
    fn a_failed_load_fails_its_waiters_and_the_next_caller_loads_again() {
        thread_local! { static PART: Loader<u8> = const { Loader::new() }; }
        let cx = &mut Context::from_waker(Waker::noop());
        let (starts, outcome) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(None)));
        let mut first = pin!(Loader::ready(&PART, gate(&starts, &outcome)));
        let mut waiting = pin!(Loader::ready(&PART, gate(&starts, &outcome)));
        assert!(first.as_mut().poll(cx).is_pending());
        assert!(waiting.as_mut().poll(cx).is_pending());
        outcome.set(Some(Err(LoadFailed)));
        assert_eq!(first.as_mut().poll(cx), Poll::Ready(Arrival::Failed));
        assert_eq!(waiting.as_mut().poll(cx), Poll::Ready(Arrival::Failed));
        assert_eq!(PART.with(|l| l.here()), None);

        outcome.set(Some(Ok(3)));
        let mut again = pin!(Loader::ready(&PART, gate(&starts, &outcome)));
        assert_eq!(again.as_mut().poll(cx), Poll::Ready(Arrival::Arrived(3)));
        assert_eq!(starts.get(), 2, "the failure was not cached");
        assert_eq!(Arrival::Arrived(3).value(), Some(3));
        assert_eq!(Arrival::<u8>::Failed.value(), None);
    }
}
