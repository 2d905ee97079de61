//! [`Classify`]: turning an error item into an [`ErrorClass`].

use std::any::Any;

use crate::outcome::ErrorClass;

/// Maps an error to its class.
///
/// Implemented for closures `Fn(&E) -> ErrorClass` and by [`DefaultClassifier`].
pub trait Classify<E> {
    /// The class of `error`.
    fn classify(&mut self, error: &E) -> ErrorClass;
}

impl<E, F: FnMut(&E) -> ErrorClass> Classify<E> for F {
    fn classify(&mut self, error: &E) -> ErrorClass {
        self(error)
    }
}

/// The classifier used when none is given. It recognises:
///
/// - an [`ErrorClass`] itself, and anything implementing [`HasErrorClass`] through
///   `Box<dyn HasErrorClass>`;
/// - [`std::io::Error`] by kind ([`ErrorClass::from_io`]), also when boxed as
///   `Box<dyn std::error::Error + Send + Sync>` (its source chain is searched);
/// - `tokio::time::error::Elapsed` as [`ErrorClass::Timeout`] (feature `tokio`);
///
/// and classifies everything else as [`ErrorClass::Other`] (`_OTHER`).
///
/// # Examples
///
/// ```
/// use tokenmeter::ErrorClass;
/// use tokenmeter::stream::{Classify, DefaultClassifier};
///
/// let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
/// assert_eq!(DefaultClassifier.classify(&reset), ErrorClass::Transport);
/// assert_eq!(DefaultClassifier.classify(&ErrorClass::RateLimited), ErrorClass::RateLimited);
/// assert_eq!(DefaultClassifier.classify(&"boom"), ErrorClass::Other);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultClassifier;

/// An error type that knows its own class. Implement it for your error type and classify with
/// a closure `|e: &MyError| e.error_class()`, or box it as `Box<dyn HasErrorClass>` for the
/// [`DefaultClassifier`].
pub trait HasErrorClass {
    /// The class of this error.
    fn error_class(&self) -> ErrorClass;
}

impl<E: 'static> Classify<E> for DefaultClassifier {
    fn classify(&mut self, error: &E) -> ErrorClass {
        classify_any(error)
    }
}

fn classify_any(error: &dyn Any) -> ErrorClass {
    if let Some(class) = error.downcast_ref::<ErrorClass>() {
        return *class;
    }
    if let Some(io) = error.downcast_ref::<std::io::Error>() {
        return ErrorClass::from_io(io);
    }
    if let Some(own) = error.downcast_ref::<Box<dyn HasErrorClass + Send + Sync>>() {
        return own.error_class();
    }
    if let Some(own) = error.downcast_ref::<Box<dyn HasErrorClass>>() {
        return own.error_class();
    }
    #[cfg(feature = "tokio")]
    if error.is::<tokio::time::error::Elapsed>() {
        return ErrorClass::Timeout;
    }
    if let Some(boxed) = error.downcast_ref::<Box<dyn std::error::Error + Send + Sync>>() {
        return classify_chain(boxed.as_ref());
    }
    if let Some(boxed) = error.downcast_ref::<Box<dyn std::error::Error>>() {
        return classify_chain(boxed.as_ref());
    }
    ErrorClass::Other
}

fn classify_chain(error: &(dyn std::error::Error + 'static)) -> ErrorClass {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return ErrorClass::from_io(io);
        }
        #[cfg(feature = "tokio")]
        if e.is::<tokio::time::error::Elapsed>() {
            return ErrorClass::Timeout;
        }
        next = e.source();
    }
    ErrorClass::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxed_io_errors_are_found_in_the_chain() {
        let boxed: Box<dyn std::error::Error + Send + Sync> =
            Box::new(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert_eq!(DefaultClassifier.classify(&boxed), ErrorClass::Timeout);
    }

    #[test]
    fn own_classes_are_used() {
        struct Mine;
        impl HasErrorClass for Mine {
            fn error_class(&self) -> ErrorClass {
                ErrorClass::Overloaded
            }
        }
        let boxed: Box<dyn HasErrorClass + Send + Sync> = Box::new(Mine);
        assert_eq!(DefaultClassifier.classify(&boxed), ErrorClass::Overloaded);
    }
}
