//! The public paths of 0.1 that the layered layout moved (`history` is `store`, `engine` and
//! `events` are in `live`, `http_util` is `api`, `catalog` is `presets`, the memory stores sit
//! with the other stores)
//! still name the same items, so code written against 0.1 builds unchanged.

use std::any::TypeId;

fn same<A: ?Sized + 'static, B: ?Sized + 'static>() -> bool {
    TypeId::of::<A>() == TypeId::of::<B>()
}

#[test]
fn the_module_paths_of_0_1_name_the_same_items_as_their_new_homes() {
    assert!(same::<
        lmchatkit::history::MemoryStore,
        lmchatkit::store::MemoryStore,
    >());
    assert!(same::<
        lmchatkit::history::SqliteStore,
        lmchatkit::store::SqliteStore,
    >());
    assert!(same::<
        lmchatkit::history::HistoryError,
        lmchatkit::store::HistoryError,
    >());
    assert!(same::<
        lmchatkit::history::PostgresOptions,
        lmchatkit::store::PostgresOptions,
    >());
    assert!(same::<
        lmchatkit::engine::SharedEngine,
        lmchatkit::live::SharedEngine,
    >());
    assert!(same::<lmchatkit::engine::Redis, lmchatkit::live::Redis>());
    assert!(same::<lmchatkit::engine::Postgres, lmchatkit::live::Postgres>());
    assert!(same::<
        lmchatkit::engine::EngineError,
        lmchatkit::live::EngineError,
    >());
    assert!(same::<
        lmchatkit::events::EventBroadcaster,
        lmchatkit::live::events::EventBroadcaster,
    >());
    assert!(same::<
        lmchatkit::http_util::ApiError,
        lmchatkit::api::ApiError,
    >());
    assert!(same::<
        lmchatkit::http_util::ResponseBody,
        lmchatkit::api::ResponseBody,
    >());
    assert_eq!(
        lmchatkit::history::decode_id("c%201").unwrap(),
        lmchatkit::store::decode_id("c%201").unwrap()
    );
}

#[test]
fn the_memory_stores_keep_their_0_1_paths_beside_the_store_module() {
    assert!(same::<
        lmchatkit::access::approval::MemoryApprovalStore,
        lmchatkit::store::MemoryApprovalStore,
    >());
    assert!(same::<
        dyn lmchatkit::access::approval::ApprovalStore,
        dyn lmchatkit::store::ApprovalStore,
    >());
    assert!(same::<
        dyn lmchatkit::ApprovalStore,
        dyn lmchatkit::store::ApprovalStore,
    >());
    assert!(same::<
        lmchatkit::user_mcp::MemoryUserMcpStore,
        lmchatkit::store::MemoryUserMcpStore,
    >());
    assert!(same::<
        lmchatkit::user_mcp::UserMcpRecord,
        lmchatkit::store::UserMcpRecord,
    >());
    assert!(same::<
        lmchatkit::catalog::PersonaDir,
        lmchatkit::presets::PersonaDir,
    >());
    assert!(same::<
        lmchatkit::catalog::CatalogError,
        lmchatkit::presets::PresetError,
    >());
}
