//! Waiting in the browser: a `setTimeout` as a future (reconnect delays, polling), and giving
//! the main thread back to the browser in the middle of long work ([`Slice`]).

/// Waits `ms` milliseconds.
pub async fn sleep(ms: u32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms as i32);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(p).await;
}

/// `performance.now()` in milliseconds (0 where there is none).
pub fn now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or(0.0, |p| p.now())
}

/// Lets the browser run what waits (a paint, the user's input) and then goes on: the rest runs
/// as a task of its own, posted through a `MessageChannel`, which unlike a repeated
/// `setTimeout(0)` is not held back 4 ms each time.
pub async fn yield_now() {
    let p = js_sys::Promise::new(&mut |resolve, _| match web_sys::MessageChannel::new() {
        Ok(channel) => {
            channel.port1().set_onmessage(Some(&resolve));
            if channel
                .port2()
                .post_message(&wasm_bindgen::JsValue::NULL)
                .is_err()
            {
                let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
            }
        }
        Err(_) => {
            let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(p).await;
}

/// A slice of the main thread's time for work that may come in a burst (a stream's frames
/// buffered faster than they are handled): [`Slice::spent`] says when [`SLICE_MS`] have gone
/// since the slice began, and the work then [`yield_now`]s and begins a new one.
///
/// Why: a reply that arrives faster than the UI handles it (a fast model, a local one, a
/// reload that follows a run's log) is read from the body as promise continuations, which
/// never leave the task they began in. Measured in Chromium on a 48 KB Markdown reply in
/// 6,184 frames as fast as loopback sends them (the bench's UI timings,
/// `tests/src/bench/ui_timing.rs`, three runs of each UI taken in turn): without slices the
/// page had 3-6 tasks over 50 ms, the longest 484-591 ms, and ran 16-18 animation frames in
/// the 0.95-1.40 s until the reply was shown whole. Slices of 8 ms leave time in each 16.7 ms
/// frame to paint; with the bubble replacing only the blocks that changed
/// (`components::message`), 0-1 task over 50 ms (54 ms at most) and 36-56 animation frames in
/// 0.62-1.09 s.
pub struct Slice(f64);

/// The main-thread time a [`Slice`] may take before the browser gets a turn, ms.
pub const SLICE_MS: f64 = 8.0;

impl Slice {
    /// A slice beginning now.
    pub fn begin() -> Self {
        Slice(now())
    }

    /// Whether the slice has taken its time; if so the next one begins now (the caller then
    /// yields).
    pub fn spent(&mut self) -> bool {
        let t = now();
        if t - self.0 >= SLICE_MS {
            self.0 = t;
            true
        } else {
            false
        }
    }
}
