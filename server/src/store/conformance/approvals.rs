//! The behaviour every [`ApprovalStore`] must show, for store authors' tests (feature
//! `test-support`): lists per principal, replaced whole, in the order given.

use crate::host::Principal;
use crate::store::ApprovalStore;

/// Runs the suite against `store`, which must start empty. Panics on the first failure.
pub async fn run(store: &dyn ApprovalStore) {
    let (alice, bob) = (Principal::new("alice"), Principal::new("bob"));
    assert!(store.always(&alice).await.unwrap().is_empty());
    store
        .set_always(&alice, vec!["a__x".into(), "b__y".into()])
        .await
        .unwrap();
    assert_eq!(store.always(&alice).await.unwrap(), ["a__x", "b__y"]);
    // Per principal: bob sees nothing of alice's, and his list leaves hers alone.
    assert!(store.always(&bob).await.unwrap().is_empty());
    store.set_always(&bob, vec!["c__z".into()]).await.unwrap();
    assert_eq!(store.always(&alice).await.unwrap(), ["a__x", "b__y"]);
    assert_eq!(store.always(&bob).await.unwrap(), ["c__z"]);
    // A set replaces the whole list, in the order given; an empty one clears it.
    store
        .set_always(&alice, vec!["d__w".into(), "a__x".into()])
        .await
        .unwrap();
    assert_eq!(store.always(&alice).await.unwrap(), ["d__w", "a__x"]);
    store.set_always(&alice, Vec::new()).await.unwrap();
    assert!(store.always(&alice).await.unwrap().is_empty());
    assert_eq!(store.always(&bob).await.unwrap(), ["c__z"]);
    // The anonymous principal is a principal like any other.
    let anon = Principal::anonymous();
    assert!(store.always(&anon).await.unwrap().is_empty());
    store.set_always(&anon, vec!["e".into()]).await.unwrap();
    assert_eq!(store.always(&anon).await.unwrap(), ["e"]);
}
