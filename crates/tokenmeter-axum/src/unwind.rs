//! [`ending_on_panic`]: a request held across a call to user code ends as a panic if one
//! unwinds through it, even when something above catches the panic and drops the request
//! later (tower-http's `CatchPanic`, `catch_unwind`).

/// Runs `f`; if it panics, drops what `held` holds while the panic unwinds, so that a
/// [`tokenmeter::Request`] inside ends as an `_OTHER` error marked as panicked.
pub(crate) fn ending_on_panic<T, R>(held: &mut Option<T>, f: impl FnOnce() -> R) -> R {
    struct Guard<'a, T>(&'a mut Option<T>);
    impl<T> Drop for Guard<'_, T> {
        fn drop(&mut self) {
            self.0.take();
        }
    }
    let guard = Guard(held);
    let out = f();
    std::mem::forget(guard);
    out
}
