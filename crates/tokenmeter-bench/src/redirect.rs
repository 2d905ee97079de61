//! Redirects: the policy of every HTTP client of the bench ([`redirect_policy`]), and the error
//! of a redirect that was not followed ([`redirected`]).
//!
//! A redirect is not followed unless asked (`--follow-redirects`), so that the bench measures,
//! and sends the key to, only the server at `--url`.

use reqwest::StatusCode;

use crate::sanitize::Sanitizer;
use crate::url::display_url;

/// The redirect policy of every HTTP client of the bench: none unless `follow`; when
/// following, at most 10 hops, and none to another origin (scheme, host or port) if
/// `guard_headers`: reqwest drops `Authorization` and `Cookie` on such a hop but forwards every
/// other header, `--header` values (`api-key`, `x-api-key`) included, so a client that carries
/// them refuses the hop with [`CrossOrigin`] instead.
pub(crate) fn redirect_policy(follow: bool, guard_headers: bool) -> reqwest::redirect::Policy {
    if !follow {
        return reqwest::redirect::Policy::none();
    }
    if !guard_headers {
        return reqwest::redirect::Policy::limited(MAX_REDIRECTS);
    }
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_none_or(|first| first.origin() == attempt.url().origin());
        if !same_origin {
            let to = display_url(attempt.url());
            attempt.error(CrossOrigin(to))
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// The most redirects followed with `--follow-redirects`.
const MAX_REDIRECTS: usize = 10;

/// A redirect to another origin refused because the request carries `--header` values: the
/// target is shown without user info or query.
#[derive(Debug)]
pub(crate) struct CrossOrigin(String);

impl std::fmt::Display for CrossOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a redirect to another origin ({}) was not followed: the request carries --header \
             values, which would be sent there (only Authorization and Cookie are dropped on such \
             a hop); point --url at the new address",
            self.0
        )
    }
}

impl std::error::Error for CrossOrigin {}

/// The error of a redirect that was not followed: where it pointed (sanitised) and how to opt in.
pub(crate) fn redirected(
    status: StatusCode,
    location: Option<&[u8]>,
    sanitizer: &Sanitizer,
) -> String {
    let target = location.map_or_else(
        || "no Location".to_owned(),
        |l| sanitizer.clean_bytes(l).to_string(),
    );
    format!(
        "the server answered HTTP {} redirecting to {target}; redirects are not followed, so that \
         the bench measures the server at --url: point --url at the new address, or pass \
         --follow-redirects",
        status.as_u16()
    )
}
