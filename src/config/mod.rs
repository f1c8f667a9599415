//! The gatekeeper's configuration: the TOML file of docs/rules.md §15 and the checked model the
//! core runs on.
//!
//! - `file`: the file as written (serde structs, defaults).
//! - `address`: the `ip:port` fields, read alike by every section.
//! - `convert`: the checks, from the file model to [`Config`].
//! - `error`: [`ConfigError`].
//! - `toml_error`: `toml` crate errors as [`ConfigError`]s with a key path.
//! - `model`: the checked model.
//! - `routing`: the checks of nodes, trunks, route groups, route lists and route patterns.
//! - `default.toml`: the embedded default topology, [`DEFAULT_TOML`].

mod address;
mod convert;
mod error;
mod file;
mod model;
mod routing;
pub(crate) mod toml_error;

use std::path::Path;

pub use error::ConfigError;
pub use model::*;

/// The embedded default configuration: three regions and eight C-LANs on loopback, with a
/// comment on every key (`rasgk serve --print-default-config`).
pub const DEFAULT_TOML: &str = include_str!("default.toml");

/// The checked configuration of TOML `text`; `origin` is the file name errors show.
pub fn from_toml(text: &str, origin: &str) -> Result<Config, ConfigError> {
    let file: file::FileConfig =
        toml::from_str(text).map_err(|e| toml_error::from_toml_error(&e, text, origin))?;
    convert::convert(file).map_err(|fault| fault.in_file(origin))
}

/// The checked configuration of the file at `path`.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::new(&origin, "", format!("cannot read: {e}")))?;
    from_toml(&text, &origin)
}

/// [`DEFAULT_TOML`], checked.
pub fn embedded_default() -> Config {
    from_toml(DEFAULT_TOML, "default.toml")
        .expect("the embedded default.toml is valid (tested in config::tests)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_default_parses() {
        let config = from_toml(DEFAULT_TOML, "default.toml").expect("default.toml is valid");
        assert_eq!(config, embedded_default());
        assert_eq!(config.gatekeeper.seed, Some(7));
        assert_eq!(config.region(2).map(|r| r.name.as_str()), Some("branch"));
        assert_eq!(config.clan("pe-1").map(|c| c.kind), Some(ClanKind::Pe));
    }

    #[test]
    fn default_calls_example_parses_when_uncommented() {
        let text = DEFAULT_TOML
            .replace("\n#: ", "\n")
            .replace("\n#:\n", "\n\n");
        let config = from_toml(&text, "default.toml").expect("the uncommented example is valid");
        assert_eq!(config.nodes.len(), 2);
        assert_eq!(config.trunks.len(), 2);
        assert_eq!(config.route_patterns[0].pattern, "9.!");
        assert_eq!(embedded_default().trunks.len(), 0);
        let rebalance = config.rebalance.expect("the uncommented [rebalance] is on");
        assert_eq!((rebalance.tolerance, rebalance.moves_per_s), (10, 2.0));
        assert_eq!(embedded_default().rebalance, None, "off as shipped");
    }

    #[test]
    fn load_names_the_file_it_cannot_read() {
        let e = load(Path::new("/nonexistent/rasgk.toml")).expect_err("no such file");
        assert_eq!(e.origin, "/nonexistent/rasgk.toml");
        assert!(
            e.to_string()
                .starts_with("/nonexistent/rasgk.toml: cannot read"),
            "{e}"
        );
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let n = 100_000;
        let text = format!("[gatekeeper]\nseed = {}{}", "[".repeat(n), "]".repeat(n));
        let e = from_toml(&text, "deep.toml").expect_err("refused");
        assert!(e.to_string().starts_with("deep.toml: "), "{e}");
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC*") {
            let _ = from_toml(&text, "p.toml");
        }

        #[test]
        fn damaged_default_never_panics(cut in 0..DEFAULT_TOML.len(), junk in "[\\[\\]=\"a-z0-9 .,\n]{0,12}") {
            let mut text = String::from(DEFAULT_TOML);
            let mut cut = cut;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.insert_str(cut, &junk);
            let _ = from_toml(&text, "p.toml");
            let _ = from_toml(&DEFAULT_TOML[..cut], "p.toml");
        }
    }
}
