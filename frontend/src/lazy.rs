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
//!   bridge to the view), the conversation edit and delete dialogs, and the Markdown parser
//!   ([`crate::markdown::engine`], not a view: its split point hands back the parser, and a
//!   text shows plain until it is here). A reloaded conversation with an App view in it shows
//!   its text at once and the view when its chunk has arrived.
//! - **Without `lmchatkit_split`** (`trunk serve`, native unit tests) a split point is a
//!   plain function behind the same `async` signature, so the dev loop and the tests run the
//!   same components.
//! - **A chunk that fails to load** (network, a server updated under an open tab) does not abort
//!   the module: split points are `fallible`, and [`lazily`] shows the error with a "Try again"
//!   button, in a dialog for a dialog's part. A later attempt fetches the chunk again (failures
//!   are not cached).
//! - **While it loads** the part shows nothing: on loopback a chunk arrives within a frame or
//!   two, and a placeholder that flashes is worse than a dialog that opens a frame later.

use std::future::Future;

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
