//! The history conformance suite through the public API, the way the author of another
//! `HistoryStore` runs it (feature `test-support`): here against `MemoryStore`, which the
//! crate's own tests also check with the row counts.

use std::sync::Arc;

use lmchatkit::store::{MemoryStore, conformance};

#[tokio::test]
async fn memory_store_passes_the_suite() {
    conformance::run(&MemoryStore::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_passes_the_concurrency_checks() {
    conformance::concurrency(Arc::new(MemoryStore::new())).await;
}

#[tokio::test]
async fn memory_store_passes_the_large_conversation_check() {
    conformance::large_conversation(&MemoryStore::new()).await;
}
