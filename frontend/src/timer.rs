//! Waiting in the browser: a `setTimeout` as a future (reconnect delays, polling).

/// Waits `ms` milliseconds.
pub async fn sleep(ms: u32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms as i32);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(p).await;
}
