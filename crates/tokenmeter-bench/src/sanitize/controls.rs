//! Terminal control sequences and invisible characters out of server text.
//!
//! Removed: ESC sequences (CSI `ESC [ … final`, OSC/DCS/SOS/PM/APC strings up to BEL or ST,
//! `ESC` + intermediates + final, two-character escapes), their 8-bit C1 forms (U+009B CSI,
//! U+009D OSC, …), every other C0 and C1 control and DEL, and the characters that hide or
//! reorder text without showing (zero-width, bidirectional overrides and isolates, BOM, soft
//! hyphen). Newlines, carriage returns, tabs and the Unicode line separators become one space:
//! every string the bench shows is one line.

use std::iter::Peekable;
use std::str::Chars;

/// `text` without control sequences or invisible characters (see the module docs).
pub(super) fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => escape(&mut chars),
            '\u{9b}' => csi(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => string(&mut chars),
            '\n' | '\r' | '\t' | '\u{2028}' | '\u{2029}' => {
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            c if c.is_control() || invisible(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// Zero-width and bidirectional formatting characters, the BOM and the soft hyphen.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{61c}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
    )
}

/// Skips what follows an ESC.
fn escape(chars: &mut Peekable<Chars<'_>>) {
    match chars.peek().copied() {
        Some('[') => {
            chars.next();
            csi(chars);
        }
        Some(']' | 'P' | 'X' | '^' | '_') => {
            chars.next();
            string(chars);
        }
        Some('\u{20}'..='\u{2f}') => {
            while chars
                .next_if(|c| ('\u{20}'..='\u{2f}').contains(c))
                .is_some()
            {}
            chars.next_if(|c| ('\u{30}'..='\u{7e}').contains(c));
        }
        Some('\u{30}'..='\u{7e}') => {
            chars.next();
        }
        _ => {}
    }
}

/// Skips a CSI's parameter and intermediate bytes and its final byte.
fn csi(chars: &mut Peekable<Chars<'_>>) {
    while chars
        .next_if(|c| ('\u{20}'..='\u{3f}').contains(c))
        .is_some()
    {}
    chars.next_if(|c| ('\u{40}'..='\u{7e}').contains(c));
}

/// Skips a control string up to and including its terminator (BEL, `ESC \` or ST); an
/// unterminated one runs to the end of the text.
fn string(chars: &mut Peekable<Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                chars.next_if_eq(&'\\');
                return;
            }
            _ => {}
        }
    }
}
