//! Binary entry point trunk builds into the wasm bundle; all of the UI lives in the library.

fn main() {
    lmchatkit_web::start();
}
