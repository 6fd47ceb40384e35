//! Request-body tests.
