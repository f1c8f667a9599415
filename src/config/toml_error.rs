//! Turning a `toml` crate error (syntax, unknown key, wrong type, missing key) into a
//! [`ConfigError`] whose field is the key path the error's span points at.
//!
//! The `toml` crate names the offending key in its message and gives a byte span, but not the
//! path (`clan[1].colour`). The path is found by parsing the text again into spanned tables and
//! walking down to the smallest key or value that holds the span.

use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::error::ConfigError;

/// The error of `toml::from_str` on `text`, as a [`ConfigError`] of file `origin`.
pub(crate) fn from_toml_error(error: &toml::de::Error, text: &str, origin: &str) -> ConfigError {
    let message = error.message().trim_end();
    let Some(span) = error.span() else {
        return ConfigError::new(origin, "", message);
    };
    let (line, column) = line_column(text, span.start);
    let reason = format!("{message} (line {line}, column {column})");
    let mut field = key_path_at(text, &span).unwrap_or_default();
    if let Some(missing) = quoted_after(message, "missing field `") {
        if !field.ends_with(&format!(".{missing}")) && field != missing {
            field = join(&field, &missing);
        }
    }
    ConfigError::new(origin, field, reason)
}

/// 1-based line and column (in characters) of byte offset `at`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let at = floor_char_boundary(text, at.min(text.len()));
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The text between `prefix` and the next backquote, if the message has it.
fn quoted_after(message: &str, prefix: &str) -> Option<String> {
    let rest = &message[message.find(prefix)? + prefix.len()..];
    Some(rest[..rest.find('`')?].to_owned())
}

/// The key path of the smallest key or value of `text` whose span holds `span`.
fn key_path_at(text: &str, span: &Range<usize>) -> Option<String> {
    let root = DeTable::parse(text).ok()?;
    let path = in_table(root.get_ref(), span, "")?;
    (!path.is_empty()).then_some(path)
}

fn holds(outer: Range<usize>, inner: &Range<usize>) -> bool {
    outer.start <= inner.start && inner.end <= outer.end && outer.start < outer.end
}

fn in_table(table: &DeTable<'_>, span: &Range<usize>, path: &str) -> Option<String> {
    table.iter().find_map(|(key, value)| {
        let here = join(path, &key_text(key.get_ref()));
        if holds(key.span(), span) {
            return Some(here);
        }
        // Tables and arrays of tables are searched even when their own span does not hold
        // the error: a `[[clan]]` header's span does not cover the keys below it.
        in_value(value, span, &here).or_else(|| holds(value.span(), span).then_some(here))
    })
}

fn in_value(value: &Spanned<DeValue<'_>>, span: &Range<usize>, path: &str) -> Option<String> {
    match value.get_ref() {
        DeValue::Table(table) => in_table(table, span, path),
        DeValue::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
            let here = format!("{path}[{i}]");
            in_value(item, span, &here).or_else(|| holds(item.span(), span).then_some(here))
        }),
        _ => None,
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// A key as written in a path: bare when TOML allows it bare, else quoted.
fn key_text(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        key.to_owned()
    } else {
        format!("{key:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(text: &str) -> ConfigError {
        let e = toml::from_str::<crate::config::file::FileConfig>(text)
            .expect_err("the text is refused");
        from_toml_error(&e, text, "t.toml")
    }

    #[test]
    fn unknown_key_in_an_array_of_tables_names_its_path() {
        let text = "[[clan]]\nname = \"a\"\nregion = 1\naddress = \"127.0.1.1:1719\"\n\n\
                    [[clan]]\nname = \"b\"\ncolour = 1\n";
        let e = error_of(text);
        assert_eq!(e.field, "clan[1].colour");
        assert!(e.reason.contains("colour"), "{e}");
        assert!(e.reason.contains("line 8, column 1"), "{e}");
    }

    #[test]
    fn unknown_key_in_a_table() {
        let e = error_of("[gatekeeper]\nttl = 3\n");
        assert_eq!(e.field, "gatekeeper.ttl");
        assert!(e.reason.contains("ttl"), "{e}");
    }

    #[test]
    fn unknown_top_level_table() {
        let e = error_of("[gatekeepers]\nttl_s = 3\n");
        assert_eq!(e.field, "gatekeepers");
    }

    #[test]
    fn wrong_type_names_the_value() {
        let e = error_of("[gatekeeper]\nttl_s = \"long\"\n");
        assert_eq!(e.field, "gatekeeper.ttl_s");
    }

    #[test]
    fn missing_key_names_the_key() {
        let e = error_of("[[clan]]\nname = \"a\"\naddress = \"127.0.1.1:1719\"\n");
        assert_eq!(e.field, "clan[0].region");
        assert!(e.reason.contains("region"), "{e}");
    }

    #[test]
    fn syntax_error_has_a_line() {
        let e = error_of("[gatekeeper\n");
        assert!(e.reason.contains("line 1"), "{e}");
    }

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column("ab\ncé\nx", 7), (3, 1));
        assert_eq!(line_column("ab\ncé\nx", 6), (2, 3));
        assert_eq!(line_column("ab\ncé", 5), (2, 2));
        assert_eq!(line_column("é", 1), (1, 1));
        assert_eq!(line_column("", 10), (1, 1));
    }
}
